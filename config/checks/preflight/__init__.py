"""Preflight: the stack config checked against what the target account says. Pure.

Every check returns a result (ok, failed, warning, not checked) with its inputs, so the render can
write them all (`build/<stack>/preflight.json`) and the program can stop with every failure at
once, before any resource exists. `authoritative` says whether the answers describe everything:
answers read from the real account (or an explicit account file) are; the default offline file
is not, so what it does not describe (a principal, a certificate, a subnet) is "not checked".
"""

from __future__ import annotations

from config.checks.account import AccountFile
from config.checks.preflight.capacity import QUOTAS, offerings, quota_codes, quotas
from config.checks.preflight.identity import SPOT_ROLE, caller, caller_role, certificate, principals, spot_role
from config.checks.preflight.releases import releases
from config.checks.preflight.result import Check, Result
from config.checks.preflight.vpc import existing_vpc
from config.errors import Problem
from config.sections.stack import StackConfig

__all__ = ["QUOTAS", "SPOT_ROLE", "Check", "Result", "caller_role", "problems", "quota_codes", "run"]


def run(
    cfg: StackConfig, account: AccountFile, *, authoritative: bool, addon_versions_complete: bool = True, certificates_complete: bool = True
) -> list[Check]:
    """Every preflight check of the stack against the account's answers."""
    checks: list[Check] = []
    if account.region != cfg.region:
        return [
            Check(
                "region",
                "aws:region",
                "failed",
                f"the account answers are for {account.region}, the stack deploys to {cfg.region}. Fix: use answers "
                f"for {cfg.region} (make account STACK=<stack> captures them)",
                {"answers": account.region, "stack": cfg.region},
            )
        ]
    checks += quotas(cfg, account)
    checks += offerings(cfg, account)
    checks += releases(cfg, account, addon_versions_complete, authoritative)
    checks += principals(cfg, account, authoritative)
    checks += caller(cfg, account)
    checks += certificate(cfg, account, authoritative, certificates_complete)
    checks += spot_role(cfg, account)
    checks += existing_vpc(cfg, account, authoritative)
    return unread(account, checks)


# The answers each check reads: a check whose answer the reader was refused is "not checked".
NEEDS: dict[str, tuple[str, ...]] = {
    "quota": ("quotas",),
    "caller": ("clusterExists",),
    "offerings": ("zones", "offerings"),
    "ami-release": ("amiReleases",),
    "addon-version": ("addonVersions",),
    "principal": ("roles",),
    "certificate": ("certificates",),
    "spot-role": ("spotServiceLinkedRole",),
    "vpc": ("vpcs",),
    "subnet": ("vpcs", "subnets"),
}


def unread(account: AccountFile, checks: list[Check]) -> list[Check]:
    """Checks on answers the reader was refused become "not checked" with the reason, and each refused
    read is one warning: a missing read permission never fails a stack, and is never silent."""
    if not account.unread:
        return checks
    kept: list[Check] = []
    for check in checks:
        reasons = [account.unread[k] for k in NEEDS.get(check.name, ()) if k in account.unread]
        if reasons:
            kept.append(Check(check.name, check.path, "not checked", f"could not be checked: {reasons[0]}", check.inputs))
        else:
            kept.append(check)
    for key, reason in sorted(account.unread.items()):
        names = sorted(n for n, keys in NEEDS.items() if key in keys)
        kept.append(
            Check(
                "account-read",
                "cluster.deployRoleArn",
                "warning",
                f"preflight could not read the account's {key}: {reason}; the {', '.join(names)} checks are not checked. "
                "Fix: grant the permission to the identity that runs pulumi (docs/preflight.md lists every read it needs)",
                {"answer": key, "reason": reason},
            )
        )
    return kept


def problems(checks: list[Check]) -> list[Problem]:
    return [p for c in checks if (p := c.problem()) is not None]
