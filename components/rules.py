"""The one base model and rule error every settings block of the stack config shares (pure pydantic).

`config.py`, `maintenance.py` and `rewards_config.py` validate their blocks with these, so the
config formatter (`config._describe`) reads every cross-field violation in one shape.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError


def rule(field: str, value: Any, allowed: str) -> PydanticCustomError:
    """A cross-field violation that the formatter attributes to `field` inside its model."""
    return PydanticCustomError(
        "config_rule", "{allowed}", {"field": field, "value": value, "allowed": allowed}
    )


class Settings(BaseModel):
    """camelCase keys in the stack file, snake_case fields here; unknown keys refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        # No silent coercion: `nodeCount: true` or `"2"` is a mistake worth naming.
        strict=True,
    )
