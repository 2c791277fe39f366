"""Typed, validated stack config (pure: nothing here creates resources)."""

from config.errors import ConfigError, Problem
from config.sections.stack import StackConfig
from config.validate import parse_stack_config

__all__ = ["ConfigError", "Problem", "StackConfig", "parse_stack_config"]
