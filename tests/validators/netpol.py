"""A NetworkPolicy evaluator: may this endpoint open a connection to that one, on this port?

Kubernetes semantics (networking.k8s.io/v1), as the VPC CNI's network policy agent enforces them:

- a pod selected by no policy of a direction is open in that direction; once selected, only
  what some rule of a selecting policy allows passes (rules add up, across policies);
- both ends must agree: the source's egress and the destination's ingress;
- a peer is an ipBlock (matched on the address, pods included, `except` honoured), or a
  namespace and/or pod selector (matchLabels and matchExpressions); a rule with no peers matches
  every peer, a rule with no ports every port;
- host-network endpoints (nodes, the control plane, load balancers, the internet) have no policy.

Traffic between a pod and its own node is always allowed by the agent; no check here needs it.

Connections to a Service's address are judged as the agent sees them, before kube-proxy's DNAT: the
source's egress must admit the Service address, which the AWS policy controller adds to a rule only
when the rule's peer selects the Service's namespace, the peer's pod selector (absent: everything)
matches the Service's selector labels, and the rule's port is the Service's numeric target port
(amazon-network-policy-controller-k8s, pkg/resolvers/endpoints.go). The destination pods then judge
the connection on their own address and the target port.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Endpoint:
    """A pod (namespace set) or an address outside every policy (namespace None)."""

    name: str
    ip: str
    namespace: str | None = None
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def is_pod(self) -> bool:
        return self.namespace is not None


def selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Label selector semantics; an empty selector selects everything."""
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


@dataclass(frozen=True)
class Service:
    """A ClusterIP Service: its namespace, selector and (port, targetPort) pairs."""

    name: str
    namespace: str
    selector: dict[str, str]
    ports: tuple[tuple[int, int | str], ...]


def policy_types(spec: dict[str, Any]) -> list[str]:
    """policyTypes as the API server defaults them: Ingress always, Egress when egress rules exist."""
    return list(spec.get("policyTypes") or ["Ingress", *(["Egress"] if spec.get("egress") else [])])


class Cluster:
    """The rendered policies and namespaces, asked about single connections."""

    def __init__(self, policies: list[dict[str, Any]], namespaces: dict[str, dict[str, str]]) -> None:
        self.policies = policies
        self.namespaces = namespaces

    def _namespace_labels(self, name: str) -> dict[str, str]:
        return {"kubernetes.io/metadata.name": name, **self.namespaces.get(name, {})}

    def _peer_matches(self, peer: dict[str, Any], policy_namespace: str, other: Endpoint) -> bool:
        if "ipBlock" in peer:
            block = peer["ipBlock"]
            address = ipaddress.ip_address(other.ip)
            if address not in ipaddress.ip_network(block["cidr"]):
                return False
            return not any(address in ipaddress.ip_network(e) for e in block.get("except") or [])
        if not other.is_pod:
            return False
        assert other.namespace is not None
        if "namespaceSelector" in peer:
            if not selects(peer["namespaceSelector"], self._namespace_labels(other.namespace)):
                return False
        elif other.namespace != policy_namespace:
            return False
        return selects(peer.get("podSelector"), other.labels)

    @staticmethod
    def _port_matches(ports: list[dict[str, Any]] | None, port: int, protocol: str) -> bool:
        if not ports:
            return True
        for p in ports:
            if p.get("protocol", "TCP") != protocol:
                continue
            if "port" not in p:
                return True
            low = p["port"]
            if not isinstance(low, int):
                raise AssertionError(f"named port {low!r}: the evaluator (and the agent's ipBlock rules) need numbers")
            if low <= port <= p.get("endPort", low):
                return True
        return False

    def _allows(self, pod: Endpoint, other: Endpoint, port: int, protocol: str, direction: str) -> bool:
        key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
        selecting = self._selecting(pod, direction)
        if not selecting:
            return True
        for p in selecting:
            for rule in p["spec"].get(key) or []:
                peers = rule.get(peers_key)
                if peers and not any(self._peer_matches(peer, p["metadata"]["namespace"], other) for peer in peers):
                    continue
                if self._port_matches(rule.get("ports"), port, protocol):
                    return True
        return False

    def _selecting(self, pod: Endpoint, direction: str) -> list[dict[str, Any]]:
        """The policies that isolate this pod in this direction."""
        return [
            p
            for p in self.policies
            if p["metadata"]["namespace"] == pod.namespace
            and direction in policy_types(p["spec"])
            and selects(p["spec"].get("podSelector"), pod.labels)
        ]

    def _egress_admits_service(self, pod: Endpoint, service: Service, target: int | str, protocol: str) -> bool:
        selecting = self._selecting(pod, "Egress")
        if not selecting:
            return True
        for p in selecting:
            for rule in p["spec"].get("egress") or []:
                ports = rule.get("ports") or []
                # the controller maps the rule's (target) port to the Service port; a named target port does not map
                if ports and not (isinstance(target, int) and self._port_matches(ports, target, protocol)):
                    continue
                peers = rule.get("to")
                if not peers:
                    return True
                for peer in peers:
                    if "ipBlock" in peer:
                        continue  # a Service address inside an ipBlock is not how the platform reaches Services
                    if "namespaceSelector" in peer:
                        if not selects(peer["namespaceSelector"], self._namespace_labels(service.namespace)):
                            continue
                    elif service.namespace != p["metadata"]["namespace"]:
                        continue
                    if selects(peer.get("podSelector"), service.selector):
                        return True
        return False

    def allowed_via_service(self, source: Endpoint, service: Service, port: int, backends: list[Endpoint], protocol: str = "TCP") -> bool:
        """A connection to the Service's address on `port`, then to every backend pod on the target port."""
        target = next((t for p, t in service.ports if p == port), None)
        if target is None:
            raise AssertionError(f"Service {service.namespace}/{service.name} has no port {port}")
        if source.is_pod and not self._egress_admits_service(source, service, target, protocol):
            return False
        assert isinstance(target, int), "a named target port never reaches the backends by the controller's mapping"
        return all(not b.is_pod or self._allows(b, source, target, protocol, "Ingress") for b in backends)

    def allowed(self, source: Endpoint, destination: Endpoint, port: int, protocol: str = "TCP") -> bool:
        if source.is_pod and not self._allows(source, destination, port, protocol, "Egress"):
            return False
        return not (destination.is_pod and not self._allows(destination, source, port, protocol, "Ingress"))
