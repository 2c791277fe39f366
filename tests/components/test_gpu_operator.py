"""GPU operator: values, tolerations, time-slicing and MIG lined up with the pools and Karpenter."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml

from builders import gpu_operator as builders
from builders.karpenter import nodepools, overlays
from config.derived import state
from config.derived.scheduling import tolerates, uncovered
from config.derived.sharing import GpuRequest, gpu_request, node_capacity
from config.facts import catalog, dcgm, karpenter_cel
from offline import harness
from tests.conftest import DEV, FIXTURES, PROD, fixture_run, parse, shared_path, stack_data, values
from tests.fixtures.nodeoverlay_schema import SCHEMA as NODEOVERLAY_SCHEMA
from tests.support.promql import rendered_queries, series_in
from tests.validators import helm_values

RELEASE = "kubernetes:helm.sh/v3:Release"
OVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


def _gpu_values(run: harness.RunResult) -> dict[str, Any]:
    return values(run.one(RELEASE, "gpu-operator-release"))


# -- the toleration matcher (Kubernetes semantics) --------------------------------------------------


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU_TAINT, True),  # empty effect: every effect
        ({"operator": "Exists"}, GPU_TAINT, True),  # empty key with Exists: every taint
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, GPU_TAINT, True),
        ({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}, GPU_TAINT, True),  # Equal is the default
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}, GPU_TAINT, False),
        ({"key": "nvidia.com/gpu", "operator": "Equal", "effect": "NoSchedule"}, GPU_TAINT, False),  # "" != "true"
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU_TAINT, False),
        ({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT, False),
        ({"operator": "Equal", "value": "true"}, GPU_TAINT, False),  # empty key needs Exists
    ],
)
def test_toleration_matcher(toleration: dict[str, str], taint: dict[str, str], expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


@pytest.mark.parametrize("stack", FIXTURES)
def test_daemonsets_tolerate_every_taint_of_every_pool(stack: str) -> None:
    run = fixture_run(stack)
    gpu = _gpu_values(run)["values"]
    taints = [t for r in run.of_type("kubernetes:karpenter.sh/v1:NodePool") for t in values(r)["spec"]["template"]["spec"]["taints"]]
    assert taints
    assert uncovered(taints, gpu["daemonsets"]["tolerations"]) == []
    assert uncovered(taints, gpu["node-feature-discovery"]["worker"]["tolerations"]) == []


def test_coverage_fails_for_an_uncovered_taint_and_generation_follows_new_taints() -> None:
    data = stack_data(DEV)
    data["gpuPools"][0]["taints"] = [{"key": "dedicated", "value": "llm", "effect": "NoSchedule"}]
    pool = parse(data).gpu_pools[0]
    taints = pool.node_taints()
    upstream_default = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert uncovered(taints, upstream_default) == [{"key": "dedicated", "value": "llm", "effect": "NoSchedule"}]
    assert uncovered(taints, builders.tolerations([pool])) == []


# -- values -------------------------------------------------------------------------------------------


def test_values_for_the_eks_nvidia_ami(prod_run: harness.RunResult) -> None:
    release = _gpu_values(prod_run)
    assert release["name"] == "gpu-operator"
    assert release["chart"] == "gpu-operator"
    assert release["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert release["version"] == "v26.7.0"
    assert release["namespace"] == "gpu-operator"
    v = release["values"]
    assert v["driver"] == {"enabled": False}
    assert v["toolkit"] == {"enabled": False}
    assert v["devicePlugin"] == {"enabled": True, "config": {"create": False, "name": "device-plugin-config", "default": "default"}}
    assert v["gfd"] == {"enabled": True}
    assert v["mig"] == {"strategy": "mixed"}
    assert v["migManager"] == {"enabled": False}  # MIG pools are partitioned at boot instead
    # the exporter reads the node monitoring agent's DCGM host engine (one engine per GPU node), never its own
    assert v["dcgmExporter"] == {
        "enabled": True,
        "serviceMonitor": {"enabled": False},
        "env": [{"name": "DCGM_REMOTE_HOSTENGINE_INFO", "value": "localhost:5555"}],
        "hostNetwork": True,
        "config": {"name": "dcgm-exporter-counters", "create": True, "data": dcgm.counters_csv()},
    }
    assert v["dcgm"] == {"enabled": False}
    assert v["operator"]["nodeSelector"] == {"kubernetes.io/os": "linux", "llm-platform.io/node-role": "system"}


def test_values_keys_exist_upstream(dev_run: harness.RunResult, prod_run: harness.RunResult) -> None:
    upstream = helm_values.load(shared_path("helm-values", "gpu-operator-v26.7.0.values.yaml"))
    # dcgmExporter.config.{name,create,data} are commented in the values file; templates/dcgm_exporter_config.yaml and
    # clusterpolicy.yaml read them at v26.7.0 (the helm-values README's key-existence rule 4: allow-listed by name)
    commented = ["dcgmExporter.config"]
    for run in (dev_run, prod_run):
        assert helm_values.unknown_keys(_gpu_values(run)["values"], upstream) == commented
    assert helm_values.unknown_keys({"driver": {"useOpenKernelModules": True}, "operator": {"defaultRuntime": "containerd"}}, upstream) == [
        "driver.useOpenKernelModules",
        "operator.defaultRuntime",
    ]


def test_namespace_is_privileged(prod_run: harness.RunResult) -> None:
    namespace = values(prod_run.one("kubernetes:core/v1:Namespace", "gpu-operator-namespace"))
    assert namespace["metadata"]["labels"] == {
        "pod-security.kubernetes.io/enforce": "privileged",
        "pod-security.kubernetes.io/audit": "privileged",
        "pod-security.kubernetes.io/warn": "privileged",
    }


def test_release_waits_for_its_config(prod_run: harness.RunResult) -> None:
    deps = prod_run.one(RELEASE, "gpu-operator-release").dependencies
    assert "kubernetes:core/v1:ConfigMap::gpu-operator-device-plugin-config" in deps
    assert "kubernetes:core/v1:Namespace::gpu-operator-namespace" in deps


# -- what a model requests ---------------------------------------------------------------------------


def test_gpu_request_per_sharing_mode() -> None:
    cfg = parse(stack_data(PROD))
    by_name = {m.name: m for m in cfg.models}
    pools = {p.name: p for p in cfg.gpu_pools}

    def req(name: str) -> GpuRequest:
        model = by_name[name]
        return gpu_request(model, pools[model.pool])

    assert req("llama-3-1-8b") == GpuRequest("nvidia.com/gpu", 1)
    assert req("llama-3-3-70b") == GpuRequest("nvidia.com/gpu", 4)  # whole GPUs x tensor parallelism
    assert req("llama-3-2-3b") == GpuRequest("nvidia.com/gpu", 1)  # one time-slice
    assert req("qwen-2-5-7b") == GpuRequest("nvidia.com/mig-3g.20gb", 1)  # one MIG slice


@pytest.mark.parametrize(
    ("instance", "profile", "exists", "per_gpu"),
    [
        ("p4d.24xlarge", "1g.5gb", True, 7),
        ("p4d.24xlarge", "3g.20gb", True, 2),
        ("p4d.24xlarge", "1g.20gb", False, 0),
        ("p4de.24xlarge", "1g.10gb", True, 7),
        ("p4de.24xlarge", "1g.5gb", False, 0),
        ("p5.48xlarge", "3g.40gb", True, 2),
        ("p5en.48xlarge", "1g.18gb", True, 7),
        ("p5en.48xlarge", "1g.10gb", False, 0),
    ],
)
def test_mig_profile_validity_per_gpu(instance: str, profile: str, exists: bool, per_gpu: int) -> None:
    gpu = catalog.INSTANCE_TYPES[instance].gpu
    assert gpu is not None
    found = gpu.mig_profile(profile)
    assert (found is not None) is exists
    if found:
        assert found.max_per_gpu == per_gpu


# -- time-slicing, MIG and Karpenter line up ------------------------------------------------------------


def test_time_sliced_pool_lines_up(prod_run: harness.RunResult) -> None:
    pool = next(p for p in parse(stack_data(PROD)).gpu_pools if p.name == "gpu-l40s-shared")
    assert pool.sharing.time_slicing is not None
    node_pool = values(prod_run.one("kubernetes:karpenter.sh/v1:NodePool", "karpenter-gpu-l40s-shared"))
    config_map = values(prod_run.one("kubernetes:core/v1:ConfigMap", "gpu-operator-device-plugin-config"))
    gpu = _gpu_values(prod_run)["values"]
    # the node label selects the ConfigMap key the GPU operator's device plugin reads
    key = node_pool["spec"]["template"]["metadata"]["labels"]["nvidia.com/device-plugin.config"]
    assert key == "gpu-l40s-shared"
    assert config_map["metadata"] == {"name": gpu["devicePlugin"]["config"]["name"], "namespace": "gpu-operator"}
    plugin = yaml.safe_load(config_map["data"][key])
    assert plugin == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 2}],
            }
        },
    }
    assert yaml.safe_load(config_map["data"][gpu["devicePlugin"]["config"]["default"]]) == {
        "version": "v1",
        "flags": {"migStrategy": "mixed"},
    }
    # Karpenter sees 2 schedulable GPUs per single-GPU node, and the limit scales with it
    overlay = values(prod_run.one(OVERLAY, "karpenter-overlay-gpu-l40s-shared-1gpu"))
    assert overlay["spec"]["capacity"] == {"nvidia.com/gpu": "2"}
    assert overlay["spec"]["requirements"][0] == {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-l40s-shared"]}
    assert node_pool["spec"]["limits"] == {"nvidia.com/gpu": str(pool.gpu_limit * 2)}


def test_mig_pool_lines_up(prod_run: harness.RunResult) -> None:
    pool = next(p for p in parse(stack_data(PROD)).gpu_pools if p.name == "gpu-a100-mig")
    node_pool = values(prod_run.one("kubernetes:karpenter.sh/v1:NodePool", "karpenter-gpu-a100-mig"))
    labels = node_pool["spec"]["template"]["metadata"]["labels"]
    assert labels["nvidia.com/gpu.deploy.mig-manager"] == "false"
    assert "nvidia.com/mig.config" not in labels
    gpu = catalog.INSTANCE_TYPES["p4d.24xlarge"].gpu
    assert gpu is not None
    assert gpu.mig_profile("3g.20gb") is not None
    assert _gpu_values(prod_run)["values"]["mig"] == {"strategy": "mixed"}
    overlay = values(prod_run.one(OVERLAY, "karpenter-overlay-gpu-a100-mig-8gpu"))
    assert overlay["spec"]["capacity"] == {"nvidia.com/mig-3g.20gb": "16"}  # 8 GPUs x 2 slices
    assert node_capacity(pool, 8) == {"nvidia.com/mig-3g.20gb": 16}
    model = next(m for m in parse(stack_data(PROD)).models if m.pool == "gpu-a100-mig")
    assert gpu_request(model, pool).resource in overlay["spec"]["capacity"]


def test_node_overlays_need_the_feature_gate_and_the_release(prod_run: harness.RunResult, dev_run: harness.RunResult) -> None:
    assert values(prod_run.one(RELEASE, "karpenter-release"))["values"]["settings"]["featureGates"] == {
        "nodeOverlay": True,
        "nodeRepair": False,
    }
    assert values(dev_run.one(RELEASE, "karpenter-release"))["values"]["settings"]["featureGates"] == {
        "nodeOverlay": False,
        "nodeRepair": False,
    }
    assert dev_run.of_type(OVERLAY) == []
    for r in prod_run.of_type(OVERLAY):
        assert "kubernetes:helm.sh/v3:Release::karpenter-release" in r.dependencies


def test_node_overlays_validate(prod_run: harness.RunResult) -> None:
    found = prod_run.of_type(OVERLAY)
    assert sorted(r.name for r in found) == ["karpenter-overlay-gpu-a100-mig-8gpu", "karpenter-overlay-gpu-l40s-shared-1gpu"]
    for r in found:
        manifest = values(r)
        jsonschema.validate(manifest, NODEOVERLAY_SCHEMA)
        assert karpenter_cel.nodeoverlay_problems(manifest) == []
    bad = values(found[0])
    bad["spec"]["requirements"].append({"key": "kubernetes.io/hostname", "operator": "Exists"})
    bad["spec"]["capacity"]["cpu"] = "1"
    assert karpenter_cel.nodeoverlay_problems(bad) == ['label "kubernetes.io/hostname" is restricted', "invalid resource restricted"]


def test_node_overlay_schema_rejects_core_resources() -> None:
    overlay = overlays.node_overlays(next(p for p in parse(stack_data(PROD)).gpu_pools if p.name == "gpu-l40s-shared"))[0]
    overlay["spec"]["capacity"]["memory"] = "1Gi"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(overlay, NODEOVERLAY_SCHEMA)


def test_family_pool_with_mixed_gpu_counts_gets_one_overlay_per_count() -> None:
    data = stack_data(PROD)
    data["gpuPools"][3] = {
        "name": "gpu-l40s-shared",
        "instanceFamilies": ["g6e"],
        "gpuCounts": [1, 4],
        "gpuLimit": 12,  # the 3B model spreads its minimum over two zones: its peak on g6e.12xlarge is 12 GPUs
        "capacityTypes": ["on-demand"],
        "sharing": {"timeSlicing": {"replicas": 3}},
    }
    data["models"][3]["gpuMemoryUtilization"] = 0.3
    pool = parse(data).gpu_pools[3]
    found = {o["metadata"]["name"]: o["spec"]["capacity"] for o in overlays.node_overlays(pool)}
    assert found == {"gpu-l40s-shared-1gpu": {"nvidia.com/gpu": "3"}, "gpu-l40s-shared-4gpu": {"nvidia.com/gpu": "12"}}


def test_bottlerocket_pools_opt_out_of_the_operator_operands() -> None:
    data = stack_data(DEV)
    data["gpuPools"][0]["amiFamily"] = "bottlerocket"
    cfg = parse(data)
    labels = nodepools.node_pool(cfg.gpu_pools[0], state.of(cfg).pool(cfg.gpu_pools[0].name))["spec"]["template"]["metadata"]["labels"]
    assert labels["nvidia.com/gpu.deploy.operands"] == "false"


def test_the_counters_file_holds_every_dcgm_field_a_rule_or_panel_reads(prod_run: harness.RunResult) -> None:
    """An alert on a field the exporter does not collect never fires: every DCGM series in the rendered
    rules and dashboards is a line of the counters file the exporter is given."""
    csv = _gpu_values(prod_run)["values"]["dcgmExporter"]["config"]["data"]
    collected = {line.split(",")[0] for line in csv.splitlines() if line and not line.startswith("#")}
    read = {name for _, expr in rendered_queries(prod_run.registrations) for name in series_in(expr) if name.startswith("DCGM_")}
    assert {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_EXP_XID_ERRORS_COUNT"} <= read
    assert read <= collected
    assert all(len(line.split(",")) == 3 for line in csv.splitlines() if line and not line.startswith("#"))
