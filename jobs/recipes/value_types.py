"""Whether a `--set` value has the type its key takes, before it reaches the framework.

The type is veRL 0.6.0's own, where its dataclass declares the key (field_types.json, read from
the real package by tools/verl_snapshot.py), else the type the composed config holds there
(NeMo RL's TypedDicts cannot be installed here; its YAML values stand for them).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from jobs.common.errors import UsageError

_VERL_DIR = Path(__file__).parent / "configs" / "verl-0.6.0"
# What a value of the config's own type may be replaced with. The frameworks read these
# configs untyped (NeMo RL: TypedDicts, not enforced at run time, nemo_rl/algorithms/grpo.py
# GRPOConfig; veRL: OmegaConf, converted to its dataclasses only in places), so a string where
# a number stands fails minutes later, after a model load, or never fails and means nothing.
_ACCEPTS: dict[type, tuple[tuple[type, ...], str]] = {
    bool: ((bool,), "true or false"),
    int: ((int, float), "a number"),
    float: ((int, float), "a number"),
    list: ((list,), "a list, e.g. [a,b]"),
    dict: ((dict,), "a mapping, e.g. {key:value}"),
}


@lru_cache(maxsize=1)
def verl_field_types() -> dict[str, str]:
    """veRL's own dataclass field types for its config keys (field_types.json beside the
    snapshot, read from the real package by tools/verl_snapshot.py)."""
    import json

    return dict(json.loads((_VERL_DIR / "field_types.json").read_text()))


# What a veRL dataclass annotation accepts: the field's type, and whether None is allowed.
_ANNOTATED: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "an integer"),
    "float": ((int, float), "a number"),
    "bool": ((bool,), "true or false"),
}


def _declared(framework: str, key: str) -> tuple[tuple[type, ...], str, bool] | None:
    """(accepted types, what to call them, None allowed) from veRL's dataclass for `key`;
    None when the field's type says nothing simpler (str, lists, classes) or is unknown."""
    if framework != "verl":
        return None
    text = verl_field_types().get(key, "")
    inner = (
        text.removeprefix("Optional[").removesuffix("]")
        if text.startswith("Optional[")
        else text.removesuffix(" | None")
    )
    if inner not in _ANNOTATED:
        return None
    allowed, wanted = _ANNOTATED[inner]
    return allowed, wanted, inner != text


def check(framework: str, item: str, key: str, given: Any, cfg: Any) -> None:
    """Refuse `given` for `key` unless it has the type the composed config holds there (null
    and interpolations pass: the config chain uses both for keys of any type)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(given, str) and "${" in given:
        return
    declared = _declared(framework, key)
    if declared is not None:
        allowed, wanted, nullable = declared
        if (given is None and nullable) or (
            given is not None
            and isinstance(given, allowed)
            and (bool not in allowed) == (not isinstance(given, bool))
        ):
            return
        if not isinstance(given, dict):
            shown = f"{given!r}" if isinstance(given, str) else str(given).replace("None", "null")
            raise UsageError(
                f"--set {item}: {key} takes {wanted}"
                f"{' or null' if nullable else ''} (veRL 0.6.0 declares it "
                f"{verl_field_types()[key]}), not {shown}",
                f"write --set {key}=<{'true|false' if bool in allowed else 'number'}>",
            )
    if given is None:
        return
    try:
        current = OmegaConf.select(cfg, key, throw_on_missing=False)
    except OmegaConfBaseException:
        return  # an interpolation that does not resolve before the override: not judged
    if current is None:
        return
    if OmegaConf.is_config(current):
        current = OmegaConf.to_container(current, resolve=False)
    if isinstance(current, dict) and isinstance(given, dict):
        for sub, value in given.items():
            if isinstance(current.get(sub), (bool, int, float, list, dict)):
                check(framework, item, f"{key}.{sub}", value, cfg)
        return
    kind = bool if isinstance(current, bool) else type(current)
    allowed, wanted = _ACCEPTS.get(kind, ((object,), ""))
    if not isinstance(given, allowed) or (isinstance(given, bool) and kind is not bool):
        shown = f"{given!r}" if isinstance(given, str) else str(given)
        raise UsageError(
            f"--set {item}: {key} takes {wanted} ({type(current).__name__} "
            f"{_short(current)} in the {framework} config), not {shown}",
            f"quote nothing for numbers and booleans, e.g. --set {key}={_short(current)}",
        )


def _short(value: Any) -> str:
    text = str(value).replace("True", "true").replace("False", "false")
    return text if len(text) <= 40 else text[:37] + "..."
