"""Parsing `--set key=value` and checking it against a recipe before anything is submitted."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from jobs.errors import UsageError
from jobs.recipes import LUSTRE, Recipe
from jobs.redact import key_looks_secret, value_looks_secret

_TOKEN_HINT = (
    "tokens come from the cluster's Kubernetes Secret (HF_TOKEN, WANDB_API_KEY are already "
    "in every pod); never pass them to a job"
)


@dataclass(frozen=True)
class Override:
    """One `--set`: `prefix` is "" (a known key), "+" (a new key) or "++" (add or override)."""

    key: str
    value: str
    prefix: str = ""

    def __str__(self) -> str:
        return f"{self.prefix}{self.key}={self.value}"


def parse(items: list[str]) -> list[Override]:
    """Split `[+|++]key=value` items; refuse anything that looks like a credential first."""
    parsed: list[Override] = []
    for item in items:
        head, sep, value = item.partition("=")
        prefix = "++" if head.startswith("++") else "+" if head.startswith("+") else ""
        key = head[len(prefix):].strip()
        # Checked before any other validation so no later message can echo the value.
        if key_looks_secret(key) or value_looks_secret(value) or value_looks_secret(head):
            shown = key if not value_looks_secret(head) else "(hidden)"
            raise UsageError(f"--set {shown}: looks like a token, refused", _TOKEN_HINT)
        if not sep or not key:
            raise UsageError(f"--set {item!r} is not key=value", "write --set grpo.max_num_steps=10")
        parsed.append(Override(key, value, prefix))
    return parsed


def check(recipe: Recipe, overrides: list[Override]) -> dict[str, tuple[str, str]]:
    """Validate against the recipe; return key -> (prefix, value) for `Recipe.render`."""
    known = recipe.all_keys() | {recipe.node_key, recipe.gpus_key}
    checked: dict[str, tuple[str, str]] = {}
    for o in overrides:
        if not o.prefix and o.key not in known:
            close = difflib.get_close_matches(o.key, sorted(known), n=3, cutoff=0.5)
            hint = f"did you mean {' or '.join(close)}?" if close else "see `python -m jobs recipes`"
            hint += f" (write +{o.key}=... to add a key the {recipe.framework} config lacks)"
            raise UsageError(f"unknown override {o.key!r} for recipe {recipe.name}", hint)
        if o.key in recipe.locked:
            raise UsageError(f"--set {o.key} is fixed by recipe {recipe.name}", recipe.locked[o.key])
        if o.key in recipe.path_keys and not o.value.startswith(f"{LUSTRE}/"):
            raise UsageError(
                f"--set {o.key}={o.value}: output paths must be absolute under {LUSTRE}/",
                "relative paths land in Ray's temporary working_dir and are lost with the pod",
            )
        if o.key in recipe.positive_keys and not (o.value.isdigit() and int(o.value) > 0):
            raise UsageError(f"--set {o.key}={o.value}: must be a positive integer",
                             "0 or -1 switches checkpoint saving off and restarts would start over")
        checked[o.key] = (o.prefix, o.value)
    return checked
