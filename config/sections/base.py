"""The one pydantic base every config model derives from.

Frozen, unknown keys rejected, inputs never echoed in errors (a mistyped secret must not
appear in a CI log), strict types (a quoted "120" is not an integer), camelCase aliases for the
stack files and snake_case names in Python.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ConfigModel(BaseModel):
    """Base for every section of the stack config."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        hide_input_in_errors=True,
        strict=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        use_enum_values=True,
    )
