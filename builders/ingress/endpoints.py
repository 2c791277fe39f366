"""Pure builders for model endpoints: the controller's Helm values and one Ingress per model.

All model Ingresses join one IngressGroup, so one ALB serves every model. The group is closed:
the `alb` IngressClass's parameters (an IngressClassParams the controller's chart creates) name the
group and admit only the namespaces the platform labels for it (the models'; KEDA's still is); the
controller refuses to reconcile an Ingress of the class in any other namespace. Routing:
- with `ingress.domain`: by host, https://<model>.<domain>/v1;
- without: by path prefix, <scheme>://<alb>/<model>/v1, rewritten to /v1 by an ALB URL-rewrite
  transform before it reaches vLLM.
Only /v1 is routed: /metrics, /health and vLLM's control endpoints never leave the cluster.
The backend is the model's gateway (builders/gateway/router.py): its Envoy proxies, health-checked
on their ready listener (Envoy's own: not tied to the picker), for every model, those at zero included
(the gateway holds their requests while a replica starts).
"""

from __future__ import annotations

import json
from typing import Any

from builders.gateway import envoy
from builders.gateway.router import proxy_name
from builders.helm import deep_merge
from config.derived import scaleup
from config.facts.conventions import (
    INGRESS_CLASS,
    INGRESS_GROUP,
    INGRESS_GROUP_MEMBER,
    LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT,
    SYSTEM_NODE_SELECTOR,
)
from config.sections.ingress import IngressConfig
from config.sections.models import ModelConfig

GROUP = INGRESS_GROUP
SSL_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
# How long `pulumi up` waits for an Ingress to get its ALB address: the controller creates the
# load balancer, listeners, rules and target group (minutes on a new account, and the first
# Ingress of the group also waits for the controller's webhook). Pulumi's default is 10 minutes.
READY_TIMEOUT = "20m"
A = "alb.ingress.kubernetes.io"
API_PREFIX = envoy.API_PREFIX
"""The only path any caller reaches a model on."""


def ingress_class_params() -> dict[str, Any]:
    """The spec of the IngressClassParams behind the `alb` class. `group.name` puts every Ingress
    of the class into the model group whatever its own annotations say; `namespaceSelector` admits
    only namespaces carrying the platform's group label (INGRESS_GROUP_MEMBER): every model
    namespace, which the platform creates with it (and KEDA's, builders/keda.py). Labelling a namespace takes
    cluster-wide rights (namespaces are cluster-scoped), so a tenant cannot label its own way in.

    A label rather than a list of names: a namespace keeps its label until it is deleted, while a
    list would drop a model's namespace at the start of the `pulumi up` that removes the model (or, for
    the `up` that removed the HTTP add-on, KEDA's namespace, where its Ingresses were), and the
    Ingress is deleted at the end; meanwhile the controller reconciles none of the group (a member
    in a namespace the selector does not admit blocks it, upstream issue #2731, PR #2750), so any other Ingress
    the same run creates would wait out its timeout."""
    return {"group": {"name": GROUP}, "namespaceSelector": {"matchLabels": dict(INGRESS_GROUP_MEMBER)}}


def controller_values(cfg: IngressConfig, cluster_name: Any, region: str, vpc_id: Any) -> dict[str, Any]:
    """Nodes allow IMDS only at hop limit 1, so the controller cannot discover its region and VPC:
    both are set here, from the stack. The chart creates the `alb` IngressClass and its
    IngressClassParams (the template links the class to them once their spec is set), which close
    the model IngressGroup to every namespace the platform did not create for it."""
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
        "ingressClassParams": {"create": True, "name": INGRESS_CLASS, "spec": ingress_class_params()},
        # An Ingress naming the class by the legacy kubernetes.io/ingress.class annotation skips the
        # IngressClass and its parameters, so its group.name annotation would still get it into the
        # group: the controller's webhook refuses new such Ingresses.
        "disableIngressClassAnnotation": True,
    }
    return deep_merge(values, cfg.extra_values)


def deregistration_delay(model: ModelConfig) -> int:
    """Seconds the ALB keeps a draining target (a gateway proxy): the
    model's drain, so a stream the target still relays can end."""
    return model.drain.pre_stop_sleep_seconds + model.drain.shutdown_timeout_seconds


def host(model: ModelConfig, cfg: IngressConfig) -> str:
    """A model's host name under ingress.domain (host routing)."""
    return f"{model.name}.{cfg.domain}"


def base_url(model: ModelConfig, cfg: IngressConfig, alb_hostname: str) -> str:
    scheme = "https" if cfg.certificate_arn else "http"
    if cfg.domain:
        return f"{scheme}://{model.name}.{cfg.domain}/v1"
    return f"{scheme}://{alb_hostname}/{model.name}/v1"


GROUP_ORDER = -1
"""The models' Ingresses' place in the group's rule order (the controller: lower first, default 0, -1000..1000)."""


def ingress(model: ModelConfig, cfg: IngressConfig, vpc_cidrs: list[str]) -> dict[str, Any]:
    cidrs = list(cfg.allowed_cidrs) or list(vpc_cidrs)
    annotations = {
        # Redundant: the class's IngressClassParams set the same group and take precedence. Kept so
        # that, whatever the order of an upgrade, no Ingress ever falls into a group of its own.
        f"{A}/group.name": GROUP,
        # Before any Ingress of an earlier release (unset: 0) in the group's rule order: a replacement (a change
        # of namespace) creates the new Ingress before it deletes the old, and the new one's rule wins meanwhile.
        # Deleting first would empty a group whose only member it is, and the controller deletes an empty
        # group's ALB (a new ALB, a new DNS name, minutes).
        f"{A}/group.order": str(GROUP_ORDER),
        f"{A}/scheme": cfg.scheme,
        f"{A}/target-type": "ip",
        f"{A}/backend-protocol": "HTTP",
        f"{A}/inbound-cidrs": ",".join(cidrs),
        f"{A}/healthcheck-path": envoy.READY_PATH,
        f"{A}/healthcheck-port": str(envoy.READY_PORT),
        f"{A}/success-codes": "200",
        # A new target (a gateway proxy) takes traffic after two passing checks
        # 5 s apart (the controller's defaults are 15 s apart); new vLLM replicas are found by the
        # gateway, not registered with the ALB (config/derived/scaleup.py, loadBalancer).
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
    backend = {"service": {"name": proxy_name(model), "port": {"number": envoy.API_PORT}}}
    rule: dict[str, Any]
    if cfg.domain:
        rule = {"host": host(model, cfg), "http": {"paths": [{"path": "/v1", "pathType": "Prefix", "backend": backend}]}}
    else:
        # keyed by the backend Service's name: the controller looks the transform up by it
        annotations[f"{A}/transforms.{backend['service']['name']}"] = json.dumps(
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
