"""The offline plan diff: what a change does to a stack, as Markdown for a pull-request comment.

`make plan-diff STACK=dev BASE=origin/main` renders the offline plan at BASE (from `git
archive`, so the checkout is untouched) and at the working tree, each in its own process, and
lists resources added, removed and changed with property paths and old -> new values. Secrets
are masked in both plans before they are compared. Needs no credentials: fork PRs can run it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

import typer

from tools.render import ROOT

MISSING = object()
# Settings that are not inputs but still change what `pulumi destroy` does.
OPTION_KEYS = ("protect", "retainOnDelete", "deletedWith", "ignoreChanges")


class PlanError(RuntimeError):
    """A plan could not be rendered at one side of the diff."""


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested inputs -> {"a.b[0].c": leaf}; empty containers are kept as leaves."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key in sorted(value):
            out.update(flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{index}]"))
        return out
    return {prefix: value}


@dataclass
class ResourceChange:
    urn: str
    type: str
    name: str
    changes: list[tuple[str, Any, Any]] = field(default_factory=list)


@dataclass
class PlanDiff:
    added: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    changed: list[ResourceChange]

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def _properties(resource: dict[str, Any]) -> dict[str, Any]:
    props = flatten(resource.get("inputs") or {})
    for key in OPTION_KEYS:
        # Plans from before an option was recorded read as its default, not as a change.
        props[f"({key})"] = resource.get(key, [] if key == "ignoreChanges" else None)
    return props


def diff_plans(base: dict[str, Any], head: dict[str, Any]) -> PlanDiff:
    """Compare two `tools.plan --json` documents resource by resource (by URN)."""
    base_resources = {r["urn"]: r for r in base.get("resources", []) if r.get("custom")}
    head_resources = {r["urn"]: r for r in head.get("resources", []) if r.get("custom")}
    changed: list[ResourceChange] = []
    for urn in sorted(base_resources.keys() & head_resources.keys()):
        old, new = _properties(base_resources[urn]), _properties(head_resources[urn])
        changes = [
            (path, old.get(path, MISSING), new.get(path, MISSING))
            for path in sorted(old.keys() | new.keys())
            if old.get(path, MISSING) != new.get(path, MISSING)
        ]
        if changes:
            resource = head_resources[urn]
            changed.append(ResourceChange(urn, resource["type"], resource["name"], changes))
    return PlanDiff(
        added=[head_resources[u] for u in sorted(head_resources.keys() - base_resources.keys())],
        removed=[base_resources[u] for u in sorted(base_resources.keys() - head_resources.keys())],
        changed=changed,
    )


def _cell(value: Any) -> str:
    if value is MISSING:
        return "(absent)"
    text = json.dumps(value, sort_keys=True)
    if len(text) > 80:
        text = text[:77] + "..."
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def to_markdown(diff: PlanDiff, stack: str, base_ref: str) -> str:
    lines = [
        f"### Offline plan diff: stack `{stack}` ({base_ref} -> this change)",
        "",
        "> Rendered from the program under Pulumi's mock runtime, without cloud credentials. "
        "This is not a `pulumi preview`: values GCP computes are stand-ins and secrets are masked.",
        "",
    ]
    if diff.empty:
        lines.append("No resource changes.")
        return "\n".join(lines) + "\n"
    lines.append(
        f"**{len(diff.added)} to add, {len(diff.changed)} to change, {len(diff.removed)} to remove.**"
    )
    for title, resources in (("Added", diff.added), ("Removed", diff.removed)):
        if resources:
            lines += ["", f"#### {title}", ""]
            lines += [f"- `{r['name']}` ({r['type']})" for r in resources]
    if diff.changed:
        lines += ["", "#### Changed"]
        for change in diff.changed:
            lines += ["", f"`{change.name}` ({change.type})", "", "| property | before | after |", "|---|---|---|"]
            lines += [f"| `{path}` | {_cell(old)} | {_cell(new)} |" for path, old, new in change.changes]
    return "\n".join(lines) + "\n"


def render_plan(tree: Path, stack: str) -> dict[str, Any] | None:
    """The JSON plan of `stack` in `tree`, or None when that tree has no such stack file."""
    if not (tree / f"Pulumi.{stack}.yaml").exists():
        return None
    result = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--stack", stack, "--json"],
        cwd=tree, capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise PlanError(f"the plan of stack {stack} failed to render in {tree}: {last}")
    return json.loads(result.stdout)


def export_tree(ref: str, into: Path, repo: Path = ROOT) -> None:
    """Write the files of `ref` into `into` without touching the checkout."""
    archive = subprocess.run(["git", "archive", "--format=tar", ref], cwd=repo, capture_output=True, check=False)
    if archive.returncode != 0:
        raise PlanError(f"cannot read git ref {ref!r}: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")


def plan_diff(stack: str, base_ref: str, repo: Path = ROOT) -> str:
    with tempfile.TemporaryDirectory(prefix="plan-base-") as tmp:
        export_tree(base_ref, Path(tmp), repo)
        base = render_plan(Path(tmp), stack) or {"resources": []}
    head = render_plan(repo, stack)
    if head is None:
        raise PlanError(f"no stack file Pulumi.{stack}.yaml in the working tree")
    return to_markdown(diff_plans(base, head), stack, base_ref)


def main(
    stack: str = typer.Option("dev", help="Stack name: reads Pulumi.<stack>.yaml."),
    base: str = typer.Option("HEAD", help="Git ref to compare the working tree against."),
) -> None:
    """Print the offline plan diff of a stack as Markdown."""
    try:
        sys.stdout.write(plan_diff(stack, base))
    except PlanError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None


if __name__ == "__main__":
    typer.run(main)
