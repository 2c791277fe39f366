"""`make image-snapshot` prints, for each Bottlerocket pool, the images its nodes pull and how to snapshot them."""

from __future__ import annotations

import pytest

from offline import golden, image_snapshot
from tests.conftest import parse, stack_data


def test_the_snapshot_pool_gets_its_images_and_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    stack = "existing-vpc-irsa-bottlerocket"
    assert image_snapshot.main([stack, "--file", str(golden.fixtures()[stack])]) == 0
    out = capsys.readouterr().out
    cfg = parse(stack_data(stack))
    (model,) = [m for m in cfg.models if m.pool == "gpu-l4"]
    assert f"ctr -a /run/containerd/containerd.sock -n k8s.io images pull docker.io/{model.image.reference}" in out
    assert "gpuPools[gpu-l4] (restores snap-0123456789abcdef0)" in out
    assert "aws ec2 create-snapshot" in out
    assert "gpu-l40s-shared" not in out  # an AL2023 pool: its images live on the root volume


def test_a_stack_without_bottlerocket_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert image_snapshot.main(["minimal-dev", "--file", str(golden.fixtures()["minimal-dev"])]) == 0
    assert "no Bottlerocket GPU pool" in capsys.readouterr().out


def test_references_are_written_as_containerd_stores_them() -> None:
    assert image_snapshot.qualified("vllm/vllm-openai:v0.33.0") == "docker.io/vllm/vllm-openai:v0.33.0"
    assert image_snapshot.qualified("ubuntu:24.04") == "docker.io/library/ubuntu:24.04"
    assert image_snapshot.qualified("public.ecr.aws/x/y:1") == "public.ecr.aws/x/y:1"
