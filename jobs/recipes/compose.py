"""Composing a recipe's final override list onto the framework's own config, as the framework does.

- NeMo RL v0.4.0 (`examples/run_grpo_math.py` L137-144): `load_config(--config)` follows each
  file's `defaults:` chain (nemo_rl/utils/config.py L30-71: parents loaded depth-first and merged
  in order, the child merged last), then `parse_hydra_overrides` (config.py L146-166) sets struct
  mode and applies Hydra's parsed overrides with `ConfigLoaderImpl._apply_overrides_to_config`.
  The chain is vendored in `jobs/recipes/configs/nemo-rl-v0.4.0/` (Apache-2.0, LICENSE beside it).
- veRL 0.6.0 (`verl/trainer/main_ppo.py`, `@hydra.main(config_name="ppo_trainer")`): Hydra
  composes `verl/trainer/config/ppo_trainer.yaml` with its groups, then applies the command-line
  overrides with the same `_apply_overrides_to_config` in struct mode. `jobs/recipes/configs/verl-0.6.0/`
  holds that composition (made by `tools/verl_snapshot.py` from the real package; a test checks
  it still equals a live composition).

hydra-core and omegaconf are imported here only, when a recipe is composed, so commands that do
not compose (`run`, `list`, ...) start as fast as before.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.recipes import value_types

if TYPE_CHECKING:
    from omegaconf import DictConfig

CONFIGS = Path(__file__).parent / "configs"
NEMO_RL_CONFIGS = CONFIGS / "nemo-rl-v0.4.0" / "examples" / "configs"
VERL_CONFIG = CONFIGS / "verl-0.6.0" / "ppo_trainer.yaml"


def _load_with_defaults(path: Path) -> DictConfig:
    """NeMo RL's `load_config_with_inheritance` rule (config.py L30-71), for the vendored chain."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    config = OmegaConf.load(path)
    assert isinstance(config, DictConfig), f"{path} is not a mapping"
    if "defaults" not in config:
        return config
    parents = config.pop("defaults")
    names = [str(p) for p in parents] if isinstance(parents, ListConfig) else [str(parents)]
    merged: Any = OmegaConf.create({})
    for name in names:
        parent = Path(name) if name.startswith("/") else path.parent / name
        merged = OmegaConf.merge(merged, _load_with_defaults(parent))
    return OmegaConf.merge(merged, config)  # type: ignore[return-value]


def load_nemo_rl_file(path: Path) -> DictConfig:
    """A NeMo RL config file with its `defaults:` chain merged (`load_config`'s rule)."""
    return _load_with_defaults(path)


def _register_resolvers() -> None:
    from omegaconf import OmegaConf

    # run_grpo_math.py L43 registers `mul`, which the chain's *_mb_tokens keys use.
    if not OmegaConf.has_resolver("mul"):
        OmegaConf.register_new_resolver("mul", lambda a, b: a * b)


@lru_cache(maxsize=8)
def _base_yaml(framework: str, config_file: str) -> str:
    from omegaconf import OmegaConf

    if framework == "nemo-rl":
        return OmegaConf.to_yaml(_load_with_defaults(NEMO_RL_CONFIGS / config_file))
    return VERL_CONFIG.read_text()


def base_config(framework: str, config_file: str) -> DictConfig:
    """A fresh copy of the framework's config before any override (cached as YAML text)."""
    from omegaconf import OmegaConf

    _register_resolvers()
    return OmegaConf.create(_base_yaml(framework, config_file))  # type: ignore[return-value]


def leaf_keys(cfg: Any, prefix: str = "") -> list[str]:
    """Every dotted key of a config (mappings walked; lists are leaves)."""
    from omegaconf import DictConfig

    keys: list[str] = []
    for k in cfg.keys() if isinstance(cfg, DictConfig) else ():
        path = f"{prefix}{k!s}"
        keys.append(path)
        node = cfg._get_node(k)
        if isinstance(node, DictConfig) and not node._is_none():
            keys.extend(leaf_keys(node, f"{path}."))
    return keys


def _closest(key: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=3, cutoff=0.6)
    return f"did you mean {' or '.join(close)}?" if close else "see the framework's config"


def apply(framework: str, config_file: str, items: list[str]) -> DictConfig:
    """Apply `items` (the exact `[+|++]key=value` list the job gets) one by one, in order, with
    Hydra's own parser and apply step in struct mode; a refusal names the item."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    cfg = base_config(framework, config_file)
    known = leaf_keys(cfg)
    OmegaConf.set_struct(cfg, True)
    parser = OverridesParser.create()
    for item in items:
        try:
            parsed = parser.parse_overrides([item])
        except HydraException as e:
            raise UsageError(
                f"--set {item}: Hydra cannot parse it: {_first_line(e)}",
                "quote values with spaces or brackets, e.g. --set 'trainer.logger=[\"console\"]'",
            ) from None
        o = parsed[0]
        key = o.key_or_group
        exists = OmegaConf.select(cfg, key, throw_on_missing=False) is not None
        present = _has_key(cfg, key)
        # Hydra's rules (config_loader_impl.py _apply_overrides_to_config, hydra-core 1.3.2), said
        # in our terms before Hydra says them in its own.
        if o.is_add() and exists and not isinstance(o.value(), (dict, list)):
            raise UsageError(
                f"--set {item}: the {framework} config already has {key}, and Hydra refuses to "
                "append a key that exists",
                f"write --set {item[1:]} or --set +{item} (++ adds or overrides)",
            )
        if not o.is_add() and not o.is_force_add() and not o.is_delete() and not present:
            raise UsageError(
                f"unknown override {key!r} for the {framework} config ({config_file})",
                f"{_closest(key, known)} (write +{item} to add a key the config lacks)",
            )
        if present and not o.is_delete() and not o.is_sweep_override():
            value_types.check(framework, item, key, o.value(), cfg)
        try:
            ConfigLoaderImpl._apply_overrides_to_config(overrides=parsed, cfg=cfg)
        except (HydraException, OmegaConfBaseException) as e:
            raise UsageError(
                f"--set {item}: the {framework} config refuses it: {_first_line(e)}",
                f"check the key and value against {commands.command('recipes')}",
            ) from None
    return cfg


def _has_key(cfg: Any, key: str) -> bool:
    from omegaconf import DictConfig

    node: Any = cfg
    for part in key.split("."):
        # `in` is False for a `???` (required) value; keys() lists it.
        if not isinstance(node, DictConfig) or part not in node.keys():
            return False
        node = node._get_node(part)
    return True


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    cause = e.__cause__
    if cause is not None and str(cause).strip():
        text = f"{text}: {str(cause).strip()}"
    return " ".join(text.split())


def value(cfg: Any, key: str) -> Any:
    """A resolved value (`${...}` interpolations followed), or None when absent."""
    from omegaconf import OmegaConf

    return OmegaConf.select(cfg, key, throw_on_missing=False, default=None)
