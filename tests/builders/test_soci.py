"""SOCI parallel pull on every GPU node class, in the form each AMI family reads: a MIME multi-part NodeConfig
for AL2023's nodeadm, TOML settings for Bottlerocket (issue 48, item 1)."""

from __future__ import annotations

import email
import tomllib

import pytest
import yaml

from builders.karpenter import nodepools
from offline import harness
from tests.conftest import fixture_run, values

NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
STACKS = ("full-prod", "minimal-dev", "existing-vpc-irsa-bottlerocket", "scale-to-zero-dev")


def _classes(run: harness.RunResult) -> list[dict[str, object]]:
    return [values(r) for r in run.of_type(NODECLASS)]


def _node_config(user_data: str) -> dict[str, object]:
    message = email.message_from_string(user_data)
    assert message.is_multipart()
    assert message.get_content_type() == "multipart/mixed"
    (config,) = [p for p in message.get_payload() if p.get_content_type() == "application/node.eks.aws"]  # type: ignore[union-attr]
    parsed = yaml.safe_load(config.get_payload())
    assert isinstance(parsed, dict)
    return parsed


@pytest.mark.parametrize("stack", STACKS)
def test_every_gpu_node_class_pulls_with_soci(stack: str) -> None:
    classes = _classes(fixture_run(stack))
    assert classes
    for node_class in classes:
        spec = node_class["spec"]
        alias = spec["amiSelectorTerms"][0]["alias"]  # type: ignore[index]
        devices = spec["blockDeviceMappings"]  # type: ignore[index]
        if any("snapshotID" in d["ebs"] for d in devices):
            # an image-snapshot pool keeps the snapshotter its cached images were written with
            assert alias.startswith("bottlerocket@")
            assert "userData" not in spec
            continue
        user_data = spec["userData"]  # type: ignore[index]
        if alias.startswith("al2023@"):
            config = _node_config(user_data)
            assert config["apiVersion"] == "node.eks.aws/v1alpha1"
            assert config["kind"] == "NodeConfig"
            assert config["spec"] == {"featureGates": {"FastImagePull": True}}
        else:
            assert alias.startswith("bottlerocket@")
            settings = tomllib.loads(user_data)["settings"]
            assert settings["container-runtime"]["snapshotter"] == "soci"
            soci = settings["container-runtime-plugins"]["soci-snapshotter"]
            assert soci["pull-mode"] == "parallel-pull-unpack"
            assert soci["parallel-pull-unpack"] == nodepools.SOCI_PARALLEL_PULL


def test_a_bottlerocket_stack_renders_the_toml_settings() -> None:
    aliases = [c["spec"]["amiSelectorTerms"][0]["alias"] for c in _classes(fixture_run("existing-vpc-irsa-bottlerocket"))]  # type: ignore[index]
    assert any(a.startswith("bottlerocket@") for a in aliases)


def test_a_mig_script_is_a_second_part_after_the_node_config() -> None:
    text = nodepools.al2023_user_data("#!/bin/bash\necho partition\n")
    parts = [p for p in email.message_from_string(text).walk() if not p.is_multipart()]
    assert [p.get_content_type() for p in parts] == ["application/node.eks.aws", "text/x-shellscript"]
    assert parts[1].get_payload().startswith("#!/bin/bash")


def test_the_snapshot_pool_restores_its_data_volume_and_keeps_containerd_there() -> None:
    """The fixture's image-snapshot pool: its own node class, the data volume from the snapshot at the set
    initialization rate, no instance-store RAID0 (which would move containerd away from the cached images)."""
    run = fixture_run("existing-vpc-irsa-bottlerocket")
    (own,) = [c for c in _classes(run) if c["metadata"]["name"] == "gpu-bottlerocket-gpu-l4"]  # type: ignore[index]
    spec = own["spec"]
    (data,) = [d for d in spec["blockDeviceMappings"] if d["deviceName"] == "/dev/xvdb"]  # type: ignore[index]
    assert data["ebs"]["snapshotID"] == "snap-0123456789abcdef0"
    assert data["ebs"]["volumeInitializationRate"] == 300
    assert "instanceStorePolicy" not in spec
    pool = values(run.one("kubernetes:karpenter.sh/v1:NodePool", "karpenter-gpu-l4"))
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "gpu-bottlerocket-gpu-l4"


def test_a_model_on_the_snapshot_pool_starts_on_a_new_node_within_150_s() -> None:
    from config.derived import state
    from tests.conftest import parse, stack_data

    cfg = parse(stack_data("existing-vpc-irsa-bottlerocket"))
    (model,) = [m for m in cfg.models if m.pool == "gpu-l4"]
    budget = state.of(cfg).model(model).scale_up
    assert budget.terms["imagePull"] <= 5
    assert budget.miss <= 150
