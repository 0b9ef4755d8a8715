"""The one base model, field checks and rule error every settings block of the stack config shares, and how an error reads (pure pydantic).

`config.py`, `maintenance.py` and `rewards_config.py` validate their blocks with these, so the
formatter (`describe_error`) reads every cross-field violation in one shape and names it by the key
the user writes in the stack file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

# The project's own config keys are `rl-on-gke:<key>` in the stack file (Pulumi.yaml `name`).
NAMESPACE = "rl-on-gke"


def rule(field: str, value: Any, allowed: str) -> PydanticCustomError:
    """A cross-field violation that the formatter attributes to `field` inside its model."""
    return PydanticCustomError(
        "config_rule", "{allowed}", {"field": field, "value": value, "allowed": allowed}
    )


def matching(pattern: re.Pattern[str], value: str, must_be: str) -> str:
    """A field validator's pattern check: `value` when `pattern` matches it, else the field's
    error, which reads `must_be`."""
    if not pattern.match(value):
        raise ValueError(must_be)
    return value


def checked_by(check: Callable[[str], object]) -> AfterValidator:
    """A string field type's own check, `Annotated[str, checked_by(check)]`: the value once
    `check` passes it; `check` raises ValueError, which reads what the field must be."""

    def validate(value: str) -> str:
        check(value)
        return value

    return AfterValidator(validate)


def matches(pattern: re.Pattern[str], must_be: str) -> AfterValidator:
    """A string field type's pattern check, `Annotated[str, matches(pattern, must_be)]`
    (`matching` on every value the field is given)."""
    return checked_by(lambda value: matching(pattern, value, must_be))


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


class ConfigError(ValueError):
    """Every problem of a stack's configuration, one per line."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid stack configuration ({len(problems)} problem(s)):\n{lines}")


# Where each top-level field comes from in the stack file.
_PULUMI_KEYS = {"project": "gcp:project", "region": "gcp:region"}


def pulumi_key(loc: tuple[Any, ...]) -> str:
    """The key a user writes in the stack file for a pydantic error location."""
    head, *rest = [str(part) for part in loc]
    top = _PULUMI_KEYS.get(head, f"{NAMESPACE}:{to_camel(head)}")
    path = top
    for part in rest:
        # A dict key the user wrote (an image name such as `nemo-rl`) is no field: kept as is.
        key = part if "-" in part else to_camel(part)
        path += f"[{part}]" if part.isdigit() else f".{key}"
    return path


def describe_error(error: Mapping[str, Any]) -> str:
    """One pydantic error as the user reads it: the stack-file key, the value found, what is allowed."""
    loc = tuple(error["loc"])
    value = error.get("input")
    ctx = error.get("ctx") or {}
    message = error["msg"]
    if error["type"] == "config_rule":
        # A rule may name a nested field ("network.rdma_cidr") of the model that raised it.
        loc = loc + tuple(str(ctx["field"]).split("."))
        value = ctx["value"]
        message = ctx["allowed"]
    elif error["type"] == "missing":
        return f"{pulumi_key(loc)}: required but not set"
    elif error["type"] == "extra_forbidden":
        return f"{pulumi_key(loc)}: unknown key (check its spelling against the config reference in README.md)"
    message = message.removeprefix("Value error, ")
    shown = "<unset>" if value is None else repr(value)
    return f"{pulumi_key(loc)} = {shown}: {message}"
