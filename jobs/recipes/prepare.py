"""A recipe's final override list, composed as the framework will and refused where it would fail.

Order (all before anything is contacted): compose the exact argument list with Hydra
(`jobs.recipes.compose`: unknown keys, `+` on existing keys), check that no write through a parent key
undid what the recipe locks (checkpointing, resume, outputs, size) and that keys known to crash
stay null, then the framework's size rules (`jobs.recipes.fit`), raising batch sizes where the recipe
allows it, else refusing with the nearest node counts that fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jobs.common.errors import UsageError
from jobs.recipes import compose, fit
from jobs.recipes.catalogue import Recipe, RunContext


@dataclass(frozen=True)
class Composed:
    """The config the framework will run, and the recipe defaults resized for this cluster."""

    config: Any
    adapted: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _same(composed: Any, rendered: str) -> bool:
    return str(composed).lower() == rendered.strip("'\"").lower()


def _culprit(key: str, user: dict[str, tuple[str, str]]) -> str:
    """The `--set` that wrote `key`: itself or the nearest parent key the user set."""
    for k in sorted(user, key=len, reverse=True):
        if key == k or key.startswith(f"{k}."):
            prefix, value = user[k]
            return f"--set {prefix}{k}={value}"
    return "the overrides"


def _guard(
    recipe: Recipe, cfg: Any, settings: dict[str, str], user: dict[str, tuple[str, str]]
) -> None:
    fixed = set(recipe.locked) | set(recipe.path_keys) | {recipe.node_key, recipe.gpus_key}
    for key in sorted(fixed):
        got = compose.value(cfg, key)
        if key in settings and not _same(got, settings[key]):
            reason = recipe.locked.get(key, "output paths stay under the run's own directory")
            raise UsageError(
                f"{_culprit(key, user)} sets {key}={got}, which recipe "
                f"{recipe.name} fixes to {settings[key]}",
                reason,
            )
    for key in sorted(recipe.positive_keys):
        got = compose.value(cfg, key)
        if not isinstance(got, int) or isinstance(got, bool) or got <= 0:
            raise UsageError(
                f"{_culprit(key, user)} sets {key}={got}: must be a positive integer",
                "0 or -1 switches checkpoint saving off and restarts would start over",
            )
    for key, why in recipe.must_be_null.items():
        got = compose.value(cfg, key)
        if got is not None:
            raise UsageError(f"{_culprit(key, user)} sets {key}={got}, which crashes the run", why)


def _as_settings(framework: str, v: fit.Numbers, recipe: Recipe) -> dict[str, str]:
    keys = fit.KEYS[framework]
    return {
        keys[name]: str(v[name])
        for name in fit.ADAPTABLE[framework]
        if str(v[name]) != recipe.defaults.get(keys[name])
    }


def _sizing_sets(recipe: Recipe, ctx: RunContext, user: dict[str, tuple[str, str]]) -> str:
    """The user's `--set`s that feed the size rules, when the recipe fits this size without
    any of them (so they, not the node count, are what to change); "" otherwise."""
    rule_keys = set(fit.KEYS[recipe.framework].values())
    mine = [k for k in user if any(r == k or r.startswith(f"{k}.") for r in rule_keys)]
    if not mine:
        return ""
    rest = {k: val for k, val in user.items() if k not in mine}
    try:
        compose_run(recipe, ctx, rest)
    except UsageError:
        return ""
    return ", ".join(f"--set {user[k][0]}{k}={user[k][1]}" for k in mine)


def compose_run(recipe: Recipe, ctx: RunContext, user: dict[str, tuple[str, str]]) -> Composed:
    """Compose and check; returns the config and any resized defaults, or raises UsageError."""
    cfg = compose.apply(recipe.framework, recipe.config_file, recipe.args(ctx, user))
    _guard(recipe, cfg, recipe.settings(ctx, user), user)
    v = fit.numbers(recipe.framework, cfg)
    for key in fit.not_counts(recipe.framework, v):
        said = _culprit(key, user)
        got = "" if key in user else f" sets {key}={compose.value(cfg, key)}"
        raise UsageError(
            f"{said}{got}: {key} must be a positive integer (the "
            f"{recipe.framework} batch and parallelism rules count with it)",
            "no cluster size makes up for it; change or drop that --set",
        )
    found = fit.problems(recipe.framework, v, ctx.nodes, ctx.gpus_per_node)
    if not found:
        return Composed(cfg)
    keys = fit.KEYS[recipe.framework]
    user_fixed = [keys[n] for n in fit.ADAPTABLE[recipe.framework] if keys[n] in user]
    can_adapt = recipe.adapt_batch and not user_fixed
    if can_adapt:
        new = fit.adapt(recipe.framework, v, ctx.nodes, ctx.gpus_per_node)
        if new is not None:
            adapted = _as_settings(recipe.framework, new, recipe)
            cfg = compose.apply(
                recipe.framework, recipe.config_file, recipe.args(ctx, user, adapted)
            )
            left = fit.problems(
                recipe.framework, fit.numbers(recipe.framework, cfg), ctx.nodes, ctx.gpus_per_node
            )
            if not left:
                shown = ", ".join(f"{k}={val}" for k, val in adapted.items())
                return Composed(
                    cfg,
                    adapted,
                    [
                        f"note: {recipe.name} on {ctx.nodes} x "
                        f"{ctx.gpus_per_node} GPUs: {shown} (sized so "
                        f"the {recipe.framework} batch rules hold)"
                    ],
                )
            found = left
    near = fit.nearest_fits(recipe.framework, v, ctx.nodes, ctx.gpus_per_node, can_adapt)
    sizes = " or ".join(f"--nodes {n}" for n in near) or "none up to 16 nodes"
    hint = f"sizes that fit at {ctx.gpus_per_node} GPUs per node: {sizes}"
    if user_fixed:
        hint += f"; or drop --set {', '.join(user_fixed)} so the batch sizes can be derived"
    elif not near and (blamed := _sizing_sets(recipe, ctx, user)):
        hint = (
            f"the cause is {blamed}: recipe {recipe.name} fits {ctx.nodes} x "
            f"{ctx.gpus_per_node} GPUs without it, and no node count fits with it"
        )
    raise UsageError(
        f"recipe {recipe.name} does not fit {ctx.nodes} node(s) x "
        f"{ctx.gpus_per_node} GPU(s): {found[0]}",
        hint,
    )
