"""Preflight of releases: the pinned AMI release of every pool's family, and the EKS add-on versions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from config.checks.account import AccountFile
from config.checks.preflight.result import Check
from config.derived import state
from config.facts import versions
from config.sections.stack import StackConfig


# -- AMI releases and add-ons -----------------------------------------------------------------------
def _pin(kind: str, path: str, what: str, pinned: str, known: list[str] | None, inputs: dict[str, Any]) -> Check | None:
    """The common part of checking a pin against what the account publishes: unknown, or present."""
    if known is None:
        return Check(kind, path, "not checked", f"no {what} in the account answers", inputs)
    if pinned in known:
        return Check(kind, path, "ok", f"{pinned} is published", inputs)
    return None


def releases(cfg: StackConfig, account: AccountFile, addon_versions_complete: bool, authoritative: bool) -> Iterator[Check]:
    k8s = cfg.cluster.kubernetes_version
    for family in sorted({p.ami_family for p in state.of(cfg).pools.values()}):
        pinned = getattr(cfg.karpenter.ami_versions, family)
        published = account.ami_releases.get(family)
        inputs = {"family": family, "pinned": pinned, "kubernetesVersion": k8s, "published": published}
        path = f"karpenter.amiVersions.{family}"
        if published is not None and pinned not in published and not authoritative:
            yield Check("ami-release", path, "not checked", f"{family}@{pinned} is not among the default answers' releases", inputs)
            continue
        yield _pin("ami-release", path, f"{family} releases", pinned, published, inputs) or Check(
            "ami-release",
            path,
            "failed",
            f"{family}@{pinned} is not published for Kubernetes {k8s} in {cfg.region}: Karpenter could not resolve "
            f"the GPU nodes' AMI. Fix: pin a published release, e.g. {', '.join(sorted(published or [])[-3:])}",
            inputs,
        )
    for addon, pinned in sorted(versions.EKS_ADDON_VERSIONS.items()):
        known = account.addon_versions.get(addon)
        inputs = {"addon": addon, "pinned": pinned, "kubernetesVersion": k8s, "available": known}
        path = f"cluster.kubernetesVersion ({addon})"
        found = _pin("addon-version", path, f"{addon} versions", pinned, known, inputs)
        if found is not None:
            yield found
        elif not authoritative:
            yield Check("addon-version", path, "not checked", f"{addon} {pinned} is not among the default answers' versions", inputs)
        elif not addon_versions_complete:
            # Read online, EKS names one version (its default); a different pin may still exist.
            yield Check(
                "addon-version",
                path,
                "warning",
                f"{addon} is pinned to {pinned}, while EKS's default for Kubernetes {k8s} is {', '.join(known or [])}; the "
                "pin could not be confirmed. Fix: check `aws eks describe-addon-versions --addon-name "
                f"{addon} --kubernetes-version {k8s}`, and bump config/facts/versions.py if the pin is gone",
                inputs,
            )
        else:
            yield Check(
                "addon-version",
                path,
                "failed",
                f"{addon} {pinned} (config/facts/versions.py) is not available for Kubernetes {k8s}: the add-on would fail to "
                f"install. Fix: pin one of {', '.join(sorted(known or [])[-3:])} in config/facts/versions.py",
                inputs,
            )
