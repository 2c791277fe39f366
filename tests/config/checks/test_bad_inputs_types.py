"""Bad inputs of allow-lists and of types, with their exact messages.

Every allow-list refuses a range that is every address (one check, config/sections/types.py), and a
type error quotes the value it got in YAML's terms, cut when long and never a credential.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from config.sections.types import public_cidr
from tests.conftest import PROD, new_problems_after
from tests.support.mutations import m0

EVERY = "allows every address on the internet, which defeats the allow-list"
PRIVATE_FIX = "list the networks `pulumi up` and kubectl run from (the VPN or transit range, a CI runner's subnet)"
PUBLIC_FIX = "list the egress CIDRs of your offices, VPN or CI runners"
SHOWN_RANDOM = "Q7vLw2XkP9mZr4TbN8cY" + "aBcDeFgHiJkLmN0123"


def _private(*cidrs: str) -> Callable[[dict[str, Any]], object]:
    return lambda d: d["cluster"]["endpoint"].update(privateAccessCidrs=list(cidrs))


def _public(*cidrs: str) -> Callable[[dict[str, Any]], object]:
    return lambda d: d["cluster"]["endpoint"].update(public=True, publicCidrs=list(cidrs))


CIDR_CASES: dict[str, tuple[Callable[[dict[str, Any]], object], list[str]]] = {
    "private-access-everything": (
        _private("0.0.0.0/0"),
        [f"cluster.endpoint.privateAccessCidrs[0]: '0.0.0.0/0' {EVERY}. Fix: {PRIVATE_FIX}"],
    ),
    "private-access-any-slash-zero": (
        _private("192.0.2.0/24", "10.0.0.0/0"),
        [f"cluster.endpoint.privateAccessCidrs[1]: '10.0.0.0/0' {EVERY}. Fix: {PRIVATE_FIX}"],
    ),
    "private-access-ipv6-everything": (
        _private("::/0"),
        [f"cluster.endpoint.privateAccessCidrs[0]: '::/0' {EVERY}. Fix: {PRIVATE_FIX}"],
    ),
    "private-access-ipv6-range": (
        _private("2001:db8::/32"),
        [
            "cluster.endpoint.privateAccessCidrs[0]: '2001:db8::/32' is not a network CIDR (or has host bits set). "
            "Fix: write e.g. 192.0.2.0/24"
        ],
    ),
    "private-access-host-bits": (
        _private("192.0.2.7/24"),
        [
            "cluster.endpoint.privateAccessCidrs[0]: '192.0.2.7/24' is not a network CIDR (or has host bits set). "
            "Fix: write e.g. 192.0.2.0/24"
        ],
    ),
    "public-any-slash-zero": (
        _public("203.0.113.0/24", "10.0.0.0/0"),
        [f"cluster.endpoint.publicCidrs[1]: '10.0.0.0/0' {EVERY}. Fix: {PUBLIC_FIX}"],
    ),
    "public-ipv6-everything": (
        _public("::/0"),
        [f"cluster.endpoint.publicCidrs[0]: '::/0' {EVERY}. Fix: {PUBLIC_FIX}"],
    ),
    "ingress-allow-list-everything": (
        lambda d: d.update(ingress={"allowedCidrs": ["0.0.0.0/0"]}),
        [f"ingress.allowedCidrs[0]: '0.0.0.0/0' {EVERY}. Fix: list the client CIDRs that may call the models"],
    ),
}


@pytest.mark.parametrize("case", sorted(CIDR_CASES))
def test_allow_lists_refuse_every_address(case: str) -> None:
    mutate, expected = CIDR_CASES[case]
    assert new_problems_after(mutate) == expected


def test_private_access_ranges_of_a_network_are_accepted() -> None:
    found = new_problems_after(_private("192.0.2.0/24", "198.51.100.0/24", "10.20.0.0/16"), PROD)
    assert not [p for p in found if p.startswith("cluster.endpoint.privateAccessCidrs")]


INT = "expected an integer, got {}. Fix: write a whole number without quotes"
NOT_AN_INT: dict[str, tuple[object, str]] = {
    "a-word": ("ten", "'ten'"),
    "a-quoted-number": ("4", "'4'"),
    "a-fraction": (2.5, "2.5"),
    "a-boolean": (True, "true"),
    "null": (None, "null"),
    "a-list": ([4], "a list of 1 entry"),
    "a-mapping": ({"value": 4, "unit": "replicas"}, "a mapping of 2 keys"),
    "a-long-string": ("four replicas at peak, two at night, one on weekends", "'four replicas at peak, two at ni...' (52 characters)"),
    "two-lines": ("4\n8", "'4\\n8'"),
    "a-random-key": (SHOWN_RANDOM, "[a value shaped like a credential, not shown]"),
}
"""replicas.max set to what is not an integer: the value, and how the message quotes it."""


def _max_replicas(value: object, shown: str) -> tuple[Callable[[dict[str, Any]], object], list[str]]:
    return lambda d: m0(d)["replicas"].update(max=value), ["models[llama-3-1-8b].replicas.max: " + INT.format(shown)]


TYPE_CASES: dict[str, tuple[Callable[[dict[str, Any]], object], list[str]]] = {
    **{f"int-got-{name}": _max_replicas(value, shown) for name, (value, shown) in NOT_AN_INT.items()},
    "float-got-a-string": (
        lambda d: m0(d).update(gpuMemoryUtilization="90%"),
        ["models[llama-3-1-8b].gpuMemoryUtilization: expected a number, got '90%'. Fix: write a number without quotes"],
    ),
    "bool-got-a-word": (
        lambda d: d["cluster"].update(deletionProtection="yes"),
        ["cluster.deletionProtection: expected true or false, got 'yes'. Fix: write true or false without quotes"],
    ),
    "bool-got-a-number": (
        lambda d: d["cluster"].update(deletionProtection=1),
        ["cluster.deletionProtection: expected true or false, got 1. Fix: write true or false without quotes"],
    ),
    "string-got-a-number": (
        lambda d: m0(d).update(huggingFaceId=5),
        ["models[llama-3-1-8b].huggingFaceId: expected a string, got 5. Fix: quote the value"],
    ),
    "string-got-a-list": (
        lambda d: m0(d).update(revision=["main"]),
        ["models[llama-3-1-8b].revision: expected a string, got a list of 1 entry. Fix: quote the value"],
    ),
    "list-got-a-string": (
        lambda d: m0(d).update(extraArgs="--enable-prefix-caching"),
        ["models[llama-3-1-8b].extraArgs: expected a list, got '--enable-prefix-caching'. Fix: write a YAML list"],
    ),
    "mapping-got-a-string": (
        lambda d: m0(d).update(replicas="two"),
        ["models[llama-3-1-8b].replicas: expected a mapping of keys to values, got 'two'. Fix: write a YAML mapping"],
    ),
    "mapping-got-a-list": (
        lambda d: d.update(ingress=["internal"]),
        ["ingress: expected a mapping of keys to values, got a list of 1 entry. Fix: write a YAML mapping"],
    ),
}


@pytest.mark.parametrize("case", sorted(TYPE_CASES))
def test_type_errors_quote_what_they_got(case: str) -> None:
    mutate, expected = TYPE_CASES[case]
    found = new_problems_after(mutate)
    assert found == expected
    assert SHOWN_RANDOM not in " ".join(found)


@pytest.mark.parametrize("cidr", ["0.0.0.0/1", "128.0.0.0/1", "10.0.0.0/7", "172.0.0.0/8"])
def test_an_allow_list_range_around_a_non_public_block_is_refused(cidr: str) -> None:
    """The halves of the internet pass a 'not inside a private block' test; they contain one, so they are refused."""
    with pytest.raises(Exception, match="contains the non-public range"):
        public_cidr(cidr)
    public_cidr("203.0.113.0/24")  # a documentation range stays allowed
