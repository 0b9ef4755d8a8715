"""Parsing `--set key=value` and checking it against a recipe before anything is submitted."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.contract import RUNS_ROOT
from jobs.common.errors import UsageError
from jobs.common.redact import key_looks_secret, value_looks_secret

if TYPE_CHECKING:
    from jobs.recipes.catalogue import Recipe

TOKEN_HINT = (
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
        key = head[len(prefix) :].strip()
        # Checked before any other validation so no later message can echo the value.
        if key_looks_secret(key) or value_looks_secret(value) or value_looks_secret(head):
            shown = key if not value_looks_secret(head) else "(hidden)"
            # No "NAME: ..." shape here: `redact` would take it for an assignment and mask it.
            raise UsageError(
                f"--set {shown} looks like a credential, refused (the value is not shown)",
                TOKEN_HINT,
            )
        if not sep or not key:
            raise UsageError(
                f"--set {item!r} is not key=value", "write --set grpo.max_num_steps=10"
            )
        parsed.append(Override(key, value, prefix))
    return parsed


def _output_path(run: str, o: Override) -> str:
    return output_path(run, f"--set {o.key}={o.value}", o.value)


def output_path(run: str, given: str, value: str) -> str:
    """The normalised output path, refused unless it stays inside the run's own directory;
    `given` is how the user wrote it (e.g. `--set key=value`, `--out PATH`)."""
    run_dir = f"{RUNS_ROOT}/{run}"
    hint = (
        f"write it under {run_dir}/; other runs' checkpoints and anything outside Lustre "
        "must not be touched, and relative paths land in Ray's temporary working_dir"
    )
    if ".." in value.split("/"):
        raise UsageError(f"{given}: '..' is not allowed in an output path", hint)
    path = posixpath.normpath(value)
    # Strictly below the run directory: the run name is what keeps runs apart (one
    # checkpoint directory per run, reference §0.2), so an output may not escape it.
    if not path.startswith(f"{run_dir}/"):
        raise UsageError(f"{given}: output paths must be absolute under {run_dir}/", hint)
    return path


def check(recipe: Recipe, overrides: list[Override], run: str) -> dict[str, tuple[str, str]]:
    """Per-key checks with the recipe's own reasons; return key -> (prefix, value) for `render`.

    Whether a key exists, and whether `+` may add it, is decided by composing the final list on
    the framework's config (`jobs.recipes.prepare`), not here."""
    checked: dict[str, tuple[str, str]] = {}
    for o in overrides:
        if o.key in recipe.locked:
            raise UsageError(
                f"--set {o.key} is fixed by recipe {recipe.name}", recipe.locked[o.key]
            )
        value = o.value
        if o.key in recipe.path_keys:
            value = _output_path(run, o)
        if o.key in recipe.positive_keys and not (value.isdigit() and int(value) > 0):
            raise UsageError(
                f"--set {o.key}={value}: must be a positive integer",
                "0 or -1 switches checkpoint saving off and restarts would start over",
            )
        floor = recipe.floors.get(o.key)
        if floor is not None and not (value.isdigit() and int(value) >= floor[0]):
            raise UsageError(
                f"--set {o.key}={value}: must be an integer of at least {floor[0]}", floor[1]
            )
        checked[o.key] = (o.prefix, value)
    return checked
