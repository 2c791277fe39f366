"""How to build the EBS snapshot an image-snapshot pool's nodes restore their data volume from.

`make image-snapshot STACK=<s>` prints, for each pool with `imageSnapshot` (or, without one, each
Bottlerocket pool that could take it), the images its nodes pull and the commands that put them on a
Bottlerocket data volume and snapshot it: a Bottlerocket instance of the pool's pinned release pulls
them into containerd's `k8s.io` namespace (through the admin container's `sheltie`), stops, and the
data volume is snapshotted (the approach of aws-samples/bottlerocket-images-cache). Rebuild it
whenever an image pin changes: a snapshot without the new image costs a full pull on every new node.
Nothing here calls AWS; it prints what to run with your credentials.
"""

from __future__ import annotations

import argparse

from config.derived import state
from config.sections.stack import StackConfig
from offline.account_capture import read_stack


def qualified(reference: str) -> str:
    """A reference as containerd stores it: Docker Hub's host (and `library/`) written out."""
    if "/" not in reference:
        return f"docker.io/library/{reference}"
    first = reference.split("/", 1)[0]
    if "." in first or ":" in first or first == "localhost":
        return reference
    return f"docker.io/{reference}"


def pool_images(cfg: StackConfig, pool: str) -> list[str]:
    """The images a pool's GPU nodes pull for its models (the vLLM image of each, as configured)."""
    return sorted({qualified(m.image.reference) for m in cfg.models if m.pool == pool})


def commands(cfg: StackConfig) -> list[str]:
    """The steps for every pool that can take a snapshot, as lines to print."""
    release = cfg.karpenter.ami_versions.bottlerocket
    size = cfg.karpenter.root_volume_gib
    lines: list[str] = []
    for pool in cfg.gpu_pools:
        if state.of(cfg).pool(pool.name).ami_family != "bottlerocket":
            continue
        images = pool_images(cfg, pool.name)
        restores = f"restores {pool.image_snapshot.snapshot_id}" if pool.image_snapshot else "has no imageSnapshot yet"
        lines += [
            f"# gpuPools[{pool.name}] ({restores}): its nodes pull",
            *(f"#   {image}" for image in images),
            *(
                [
                    "# With imageCache on, the pods pull through the cache: pull the same references they use (the",
                    "# registry of the imageRegistry output in front of each), or the kubelet pulls them again.",
                ]
                if cfg.image_cache.enabled
                else []
            ),
            f"# 1. Launch one Bottlerocket NVIDIA instance (release {release}, the pool's AMI alias) in {cfg.region}, with",
            f"#    a {size} GiB gp3 data volume on /dev/xvdb and SSM access (no cluster needed).",
            "# 2. Pull the images into containerd's k8s.io namespace through the admin container:",
            *(_pull(cfg.region, image) for image in images),
            "# 3. Stop the instance, snapshot its data volume, then terminate it:",
            f"aws ec2 stop-instances --region {cfg.region} --instance-ids <instance>",
            f"aws ec2 create-snapshot --region {cfg.region} --volume-id <data volume> --description 'llm-platform {pool.name} images'",
            f"aws ec2 wait snapshot-completed --region {cfg.region} --snapshot-ids <snapshot>",
            f"aws ec2 terminate-instances --region {cfg.region} --instance-ids <instance>",
            f"# 4. Set gpuPools[{pool.name}].imageSnapshot.snapshotId to the snapshot, and `pulumi up`.",
            "",
        ]
    return lines


def _pull(region: str, image: str) -> str:
    pull = f"apiclient exec admin sheltie ctr -a /run/containerd/containerd.sock -n k8s.io images pull {image}"
    return (
        f"aws ssm send-command --region {region} --instance-ids <instance> --document-name AWS-RunShellScript "
        f"--parameters 'commands=[\"{pull}\"]'"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stack", help="stack name: reads Pulumi.<stack>.yaml")
    parser.add_argument("--file", help="stack file to read instead of Pulumi.<stack>.yaml")
    args = parser.parse_args(argv)
    path, cfg = read_stack(args.stack, args.file)
    if cfg is None:
        return 2
    lines = commands(cfg)
    if not lines:
        fix = "Fix: set amiFamily: bottlerocket on a pool"
        print(f"{path.name}: no Bottlerocket GPU pool: an image snapshot is a Bottlerocket data volume. {fix}")
        return 0
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
