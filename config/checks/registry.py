"""The cross-section checks of a parsed StackConfig, in one ordered registry: what each rule guards.

Each rule returns Problems instead of raising, so one run reports everything at once; problems are
reported in this order: root causes (names, pools, fit) before what is derived from them. Rules live
by topic: names and references (structure), fit and limits
(fit), replicas spanning nodes (multinode), scaling and disruption (scaling), network, exposure and cluster access (network), escape
hatches (escape_hatches), weights and images (artifacts), the gateway's routing (gateway). A config field is checked by one rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from config.checks import artifacts, escape_hatches, fit, gateway, multinode, network, scaling, structure
from config.errors import Problem
from config.sections.stack import StackConfig


@dataclass(frozen=True)
class Rule:
    check: Callable[[StackConfig], Iterator[Problem]]
    guards: str
    """What goes wrong on a real cluster when the rule is absent."""
    prod_only: bool = False
    """Checked on prod stacks only (safer settings prod requires; elsewhere they are a choice)."""

    @property
    def name(self) -> str:
        return f"{self.check.__module__.rsplit('.', 1)[-1]}.{self.check.__name__}"


RULES: tuple[Rule, ...] = (
    Rule(structure.rule_pool_catalog, "a pool's instance types are in the catalog, so capacity and cost can be checked"),
    Rule(structure.rule_unique_names, "two models or pools of one name would replace each other's objects"),
    Rule(structure.rule_model_names, "a model's namespace is not one the platform owns, and KEDA's HPA name fits"),
    Rule(structure.rule_gateway_names, "a model's router release name fits Helm's limit"),
    Rule(structure.rule_pools_exist, "every model names a pool it can run on"),
    Rule(fit.rule_fit, "a replica fits its GPU or slice (weights + KV cache), time-slices share memory safely, and its node"),
    Rule(scaling.rule_spot_drain, "a drain on a spot pool finishes inside the two-minute notice"),
    Rule(scaling.rule_startup_budget, "the startup probe waits at least the expected load time"),
    Rule(fit.rule_gpu_limits, "gpuLimit holds the nodes at min with the headroom, and each model at max plus its surge alone"),
    Rule(fit.rule_headroom, "warm headroom is on a used pool, under the limit, in whole replicas, and fits a node"),
    Rule(multinode.rule_multi_node, "a replica spanning nodes gets whole nodes of an EFA pool, a stage per node"),
    Rule(multinode.rule_efa_pool, "an EFA pool's types have EFA, in one zone for its placement group, and a model uses it"),
    # after the fit rules: the hold is derived from the scale-up budget, which a model that does not fit throws off
    Rule(gateway.rule_precise_routing, "precise prefix routing would route on KV events vLLM does not publish as the picker reads them"),
    Rule(gateway.rule_hold, "the gateway's flow control would stall scale-out, or the ALB cut what it holds (a cold start at zero)"),
    Rule(artifacts.rule_streamer_flags, "a model streaming from S3 keeps the loader flags the streamer needs"),
    Rule(artifacts.rule_s3_gateway_endpoint, "weights from S3 do not go through the NAT gateway"),
    Rule(artifacts.rule_image_cache, "the pull-through cache fronts the model images, with Docker Hub's credential"),
    Rule(network.rule_load_balancer_sources, "vLLM's port admits the ALB's subnets, not the whole VPC"),
    Rule(network.rule_model_callers, "a model nobody can call is flagged"),
    Rule(scaling.rule_scale_down_window, "prod's scale-down floor, and no scale-down sooner than a scale-up on a new node"),
    Rule(scaling.rule_scale_to_zero, "a model at zero stays up longer than a cold start takes"),
    Rule(scaling.rule_schedules, "schedule floors within the replica bounds, none hiding another"),
    Rule(scaling.rule_consolidation, "repacking serving nodes (evicting replicas) is acknowledged"),
    Rule(scaling.rule_placement, "replicas that share nodes spread over two zones where the pool has them, and packing is warned"),
    Rule(fit.rule_bottlerocket_sharing, "GPU sharing only where the device plugin honours it (not Bottlerocket)"),
    Rule(fit.rule_image_snapshot, "an image snapshot is a Bottlerocket pool's data volume"),
    Rule(scaling.rule_node_repair, "a forceful node repair names the pools it would take to zero nodes"),
    Rule(scaling.rule_spot_diversity, "a spot pool has enough instance types to ride out interruptions"),
    Rule(network.rule_internet_facing_subnets, "an internet-facing ALB in an existing VPC has public subnets"),
    Rule(network.rule_certificate, "exposed endpoints use TLS (required in prod), with a certificate of the stack's region"),
    Rule(network.rule_allowed_cidrs, "an internet-facing ALB admits public client ranges only"),
    Rule(escape_hatches.rule_gpu_operator, "the GPU operator leaves the AMI's driver and MIG mode alone, and tolerates every pool"),
    Rule(escape_hatches.rule_escape_hatches, "extraValues do not replace pinned or derived chart values"),
    Rule(escape_hatches.rule_observability_overrides, "monitoring overrides do not page on what EKS hides, nor leak volumes"),
    Rule(network.rule_zones, "named zones are in the region, and pools only narrow the VPC's zones"),
    Rule(fit.rule_system_capacity, "the system node group holds every system pod with one node lost"),
    Rule(network.rule_api_reachable, "pulumi up can reach the API server"),
    Rule(network.rule_routes, "replies reach the deploy network and the internal ALB's clients outside a new VPC"),
    Rule(network.rule_deploy_role, "prod names its deploy role, and no second admin entry for it (EKS refuses it)"),
    Rule(network.rule_principals_once, "each principal has one access entry: once across adminRoleArns and access"),
    Rule(fit.rule_system_node_group_size, "the system node group keeps a spare node (required in prod)"),
    Rule(scaling.rule_prod_on_demand_fallback, "prod models fall back to on-demand when spot runs out", prod_only=True),
    Rule(network.rule_prod_pool_zones, "a prod pool spans two zones, or says singleZone", prod_only=True),
    Rule(network.rule_prod_network_ha, "a prod VPC survives a zone outage (three zones, a NAT gateway each)", prod_only=True),
    Rule(network.rule_deletion_protection, "prod keeps cluster deletion protection on", prod_only=True),
    Rule(scaling.rule_prod_min_replicas, "a prod model survives a node loss", prod_only=True),
    Rule(artifacts.rule_image_pinned, "a prod image is pinned by digest", prod_only=True),
)


def check(cfg: StackConfig) -> list[Problem]:
    """Every cross-section problem of a parsed config, in registry order."""
    return [p for rule in RULES if cfg.is_prod or not rule.prod_only for p in rule.check(cfg)]
