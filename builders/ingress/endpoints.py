"""Pure builders for model endpoints: the controller's Helm values and one Ingress per model.

All model Ingresses join one IngressGroup, so one ALB serves every model. The group is closed:
the `alb` IngressClass's parameters (an IngressClassParams the controller's chart creates) name the
group and admit only the namespaces of the exposed models, and KEDA's while one of them scales to
zero; the controller refuses to reconcile an Ingress of the class in any other namespace. Routing:
- with `ingress.domain`: by host, https://<model>.<domain>/v1;
- without: by path prefix, <scheme>://<alb>/<model>/v1, rewritten to /v1 by an ALB URL-rewrite
  transform before it reaches vLLM.
Only /v1 is routed: /metrics, /health and vLLM's control endpoints never leave the cluster.
"""

from __future__ import annotations

import json
from typing import Any

from builders.helm import deep_merge
from builders.serving.workload import PORT
from config.derived import scaleup, state
from config.facts.conventions import (
    INGRESS_CLASS,
    KEDA_NAMESPACE,
    LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT,
    NAMESPACE_NAME_LABEL,
    PROJECT,
    SYSTEM_NODE_SELECTOR,
)
from config.sections.ingress import IngressConfig
from config.sections.models import ModelConfig
from config.sections.stack import StackConfig

GROUP = PROJECT
SSL_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
# How long `pulumi up` waits for an Ingress to get its ALB address: the controller creates the
# load balancer, listeners, rules and target group (minutes on a new account, and the first
# Ingress of the group also waits for the controller's webhook). Pulumi's default is 10 minutes.
READY_TIMEOUT = "20m"
A = "alb.ingress.kubernetes.io"


def group_namespaces(cfg: StackConfig) -> list[str]:
    """The namespaces whose Ingresses may join the model IngressGroup, sorted: each exposed model's
    (its Ingress lives there) and, while an exposed model scales to zero, KEDA's (that model's
    Ingress sends its host to the HTTP add-on's interceptor, whose Service is there). A model at
    min 0 keeps its own namespace too: a change of its min replaces its Ingress in the other
    namespace, the new one first, and while a member of the group sits in a namespace the selector
    no longer admits, the controller reconciles none of the group (upstream PR #2750), so the new
    Ingress would never get its address."""
    derived = state.of(cfg)
    exposed = [m for m in cfg.models if derived.model(m).exposure.exposed]
    namespaces = {m.name for m in exposed}
    if any(derived.model(m).scales_to_zero for m in exposed):
        namespaces.add(KEDA_NAMESPACE)
    return sorted(namespaces)


def ingress_class_params(namespaces: list[str]) -> dict[str, Any]:
    """The spec of the IngressClassParams behind the `alb` class. `group.name` puts every Ingress
    of the class into the model group whatever its own annotations say; `namespaceSelector` admits
    exactly these namespaces, by the name label the API server sets (no namespace needs a label of
    ours, and none can take one to get in). An empty selector would admit every namespace and an
    `In` without values is invalid, so an empty list is refused."""
    if not namespaces:
        raise ValueError("the model IngressGroup needs at least one namespace (no exposed model: no controller)")
    return {
        "group": {"name": GROUP},
        "namespaceSelector": {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(namespaces)}]},
    }


def controller_values(cfg: IngressConfig, cluster_name: Any, region: str, vpc_id: Any, group_namespaces: list[str]) -> dict[str, Any]:
    """Nodes allow IMDS only at hop limit 1, so the controller cannot discover its region and VPC:
    both are set here, from the stack. The chart creates the `alb` IngressClass and its
    IngressClassParams (the template links the class to them once their spec is set), which close
    the model IngressGroup to every namespace but `group_namespaces`."""
    values: dict[str, Any] = {
        "clusterName": cluster_name,
        "region": region,
        "vpcId": vpc_id,
        "replicaCount": 2,
        "serviceAccount": {"create": True, "name": LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT},
        # Keep the webhook certificate across upgrades instead of regenerating it on every render.
        "keepTLSSecret": True,
        # The platform creates no Services of type LoadBalancer; do not take them over cluster-wide.
        "enableServiceMutatorWebhook": False,
        "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
        "ingressClass": INGRESS_CLASS,
        "createIngressClassResource": True,
        "ingressClassParams": {"create": True, "name": INGRESS_CLASS, "spec": ingress_class_params(group_namespaces)},
        # An Ingress naming the class by the legacy kubernetes.io/ingress.class annotation skips the
        # IngressClass and its parameters, so its group.name annotation would still get it into the
        # group: the controller's webhook refuses new such Ingresses.
        "disableIngressClassAnnotation": True,
    }
    return deep_merge(values, cfg.extra_values)


def deregistration_delay(model: ModelConfig) -> int:
    """Seconds the ALB keeps a draining target: at least the preStop sleep, within the grace period."""
    return model.drain.pre_stop_sleep_seconds + model.drain.shutdown_timeout_seconds


def host(model: ModelConfig, cfg: IngressConfig) -> str:
    """A model's host name under ingress.domain (host routing)."""
    return f"{model.name}.{cfg.domain}"


def base_url(model: ModelConfig, cfg: IngressConfig, alb_hostname: str) -> str:
    scheme = "https" if cfg.certificate_arn else "http"
    if cfg.domain:
        return f"{scheme}://{model.name}.{cfg.domain}/v1"
    return f"{scheme}://{alb_hostname}/{model.name}/v1"


def ingress(model: ModelConfig, cfg: IngressConfig, vpc_cidrs: list[str]) -> dict[str, Any]:
    cidrs = list(cfg.allowed_cidrs) or list(vpc_cidrs)
    annotations = {
        # Redundant: the class's IngressClassParams set the same group and take precedence. Kept so
        # that, whatever the order of an upgrade, no Ingress ever falls into a group of its own.
        f"{A}/group.name": GROUP,
        f"{A}/scheme": cfg.scheme,
        f"{A}/target-type": "ip",
        f"{A}/backend-protocol": "HTTP",
        f"{A}/inbound-cidrs": ",".join(cidrs),
        f"{A}/healthcheck-path": "/health",
        f"{A}/healthcheck-port": "traffic-port",
        f"{A}/success-codes": "200",
        # Fast registration: a new replica takes traffic after two passing checks 5 s apart (the
        # controller's defaults are 15 s apart), a term of the scale-up budget (config/derived/scaleup.py).
        f"{A}/healthcheck-interval-seconds": str(scaleup.ALB_HEALTHCHECK_INTERVAL_SECONDS),
        f"{A}/healthcheck-timeout-seconds": str(scaleup.ALB_HEALTHCHECK_TIMEOUT_SECONDS),
        f"{A}/healthy-threshold-count": str(scaleup.ALB_HEALTHY_THRESHOLD),
        f"{A}/load-balancer-attributes": f"idle_timeout.timeout_seconds={cfg.idle_timeout_seconds},routing.http2.enabled=true",
        f"{A}/target-group-attributes": f"deregistration_delay.timeout_seconds={deregistration_delay(model)}",
    }
    if cfg.certificate_arn:
        annotations |= {
            f"{A}/listen-ports": json.dumps([{"HTTP": 80}, {"HTTPS": 443}]),
            f"{A}/ssl-redirect": "443",
            f"{A}/certificate-arn": cfg.certificate_arn,
            f"{A}/ssl-policy": SSL_POLICY,
        }
    else:
        annotations[f"{A}/listen-ports"] = json.dumps([{"HTTP": 80}])
    backend = {"service": {"name": model.name, "port": {"number": PORT}}}
    rule: dict[str, Any]
    if cfg.domain:
        rule = {"host": host(model, cfg), "http": {"paths": [{"path": "/v1", "pathType": "Prefix", "backend": backend}]}}
    else:
        annotations[f"{A}/transforms.{model.name}"] = json.dumps(
            [
                {
                    "type": "url-rewrite",
                    "urlRewriteConfig": {"rewrites": [{"regex": f"^/{model.name}/v1(/.*)?$", "replace": "/v1$1"}]},
                }
            ]
        )
        rule = {"http": {"paths": [{"path": f"/{model.name}/v1", "pathType": "Prefix", "backend": backend}]}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": model.name, "namespace": model.name, "annotations": annotations},
        "spec": {"ingressClassName": INGRESS_CLASS, "rules": [rule]},
    }
