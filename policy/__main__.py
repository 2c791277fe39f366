"""The llm-platform policy pack: `pulumi preview --policy-pack policy`."""

from checks import policies
from pulumi_policy import PolicyPack

PolicyPack(name="llm-platform", policies=policies())
