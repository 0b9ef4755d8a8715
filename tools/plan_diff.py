"""The offline plan diff: what a change does to a stack, as Markdown for a pull-request comment.

`make plan-diff STACK=dev BASE=origin/main` renders the offline plan at BASE (from `git
archive`, so the checkout is untouched) and at the working tree, each in its own process, and
lists resources added, removed and changed with property paths and old -> new values. A change
to an input the provider forces replacement on (tools/force_new.py, from the Terraform provider's
schema; tools/force_new_kubernetes.py for Kubernetes objects) is marked REPLACE with the paths
that force it; every other change is an in-place update.
Paths the resource's `ignoreChanges` covers are shown but never force anything, as in Pulumi.
Secrets are masked in both plans before they are compared. Needs no credentials: fork PRs can run it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

import typer

from tools.force_new import CONDITIONAL, FORCE_NEW, ForceNew
from tools.force_new_kubernetes import KUBERNETES_FORCE_NEW, KUBERNETES_METADATA
from tools.render import ROOT

MISSING = object()
# Settings that are not inputs but still change what `pulumi destroy` does.
OPTION_KEYS = ("protect", "retainOnDelete", "deletedWith", "ignoreChanges")


def force_new_entries(resource_type: str) -> tuple[ForceNew, ...]:
    """The force-new paths of a resource type: the GCP table, or the Kubernetes one."""
    if resource_type.startswith("kubernetes:"):
        return KUBERNETES_METADATA + KUBERNETES_FORCE_NEW.get(resource_type, ())
    return FORCE_NEW.get(resource_type, ())


# What a replacement means beyond delete-and-create, for the types where that is not obvious.
REPLACEMENT_NOTES: dict[str, str] = {
    "kubernetes:core/v1:PersistentVolume": (
        "the PersistentVolume object is deleted and a new one created under its new name for the "
        "claim to bind; with reclaim policy Retain nothing is done to the storage behind it: the "
        "Lustre instance and its data stay"
    ),
}


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
    # The force-new input paths (tools/force_new.py) this change touches; empty: update in place.
    replace_by: list[str] = field(default_factory=list)

    @property
    def replaces(self) -> bool:
        return bool(self.replace_by)


def _shape(path: str) -> str:
    """`nodeConfig.guestAccelerators[0].type` -> `nodeConfig.guestAccelerators[].type`."""
    return re.sub(r"\[\d+\]", "[]", path)


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")


def _block_instances(props: dict[str, Any], block: str) -> set[str]:
    """The concrete occurrences (`a.b[0]`, `a.b[1]`) of a block path (`a.b[]`) in flattened inputs."""
    pattern = re.compile(re.escape(block).replace(r"\[\]", r"\[\d+\]") + r"(?=$|[.\[])")
    return {m.group(0) for key in props if (m := pattern.match(key))}


def replace_reasons(
    resource_type: str,
    old: dict[str, Any],
    new: dict[str, Any],
    ignored: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """The force-new paths of `resource_type` that differ between two flattened input sets."""
    changed = [
        path
        for path in sorted(old.keys() | new.keys())
        if not path.startswith("(")
        and old.get(path, MISSING) != new.get(path, MISSING)
        and not any(_under(path, ignore) for ignore in ignored)
    ]
    reasons: list[str] = []
    for entry in force_new_entries(resource_type):
        if any(_under(entry.path, ignore) for ignore in ignored):
            continue
        if entry.kind == "value":
            hit = any(_under(_shape(path), entry.path) for path in changed)
        else:
            hit = _block_instances(old, entry.path) != _block_instances(new, entry.path)
        if hit:
            reasons.append(entry.path)
    for (typ, path), predicate in CONDITIONAL.items():
        if typ == resource_type and path in changed and predicate(old.get(path), new.get(path)):
            reasons.append(path)
    return reasons


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
            ignored = resource.get("ignoreChanges") or []
            inputs_old = flatten(base_resources[urn].get("inputs") or {})
            inputs_new = flatten(resource.get("inputs") or {})
            reasons = replace_reasons(resource["type"], inputs_old, inputs_new, ignored)
            changed.append(
                ResourceChange(urn, resource["type"], resource["name"], changes, reasons)
            )
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
    replaced = [c for c in diff.changed if c.replaces]
    if replaced:
        lines += [
            "",
            f"**{len(replaced)} of the changes REPLACE a resource** (delete and create): "
            + ", ".join(f"`{c.name}`" for c in replaced)
            + ".",
        ]
    for title, resources in (("Added", diff.added), ("Removed", diff.removed)):
        if resources:
            lines += ["", f"#### {title}", ""]
            lines += [f"- `{r['name']}` ({r['type']})" for r in resources]
    if diff.changed:
        lines += ["", "#### Changed"]
        for change in diff.changed:
            how = (
                f"**REPLACE** (force-new: {', '.join(f'`{p}`' for p in change.replace_by)})"
                if change.replaces
                else "update in place"
            )
            if change.replaces and change.type in REPLACEMENT_NOTES:
                how += f": {REPLACEMENT_NOTES[change.type]}"
            lines += [
                "",
                f"`{change.name}` ({change.type}): {how}",
                "",
                "| property | before | after |",
                "|---|---|---|",
            ]
            lines += [
                f"| `{path}` | {_cell(old)} | {_cell(new)} |" for path, old, new in change.changes
            ]
    return "\n".join(lines) + "\n"


def render_plan(tree: Path, stack: str) -> dict[str, Any] | None:
    """The JSON plan of `stack` in `tree`, or None when that tree has no such stack file."""
    if not (tree / f"Pulumi.{stack}.yaml").exists():
        return None
    result = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--stack", stack, "--json"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise PlanError(f"the plan of stack {stack} failed to render in {tree}: {last}")
    plan: dict[str, Any] = json.loads(result.stdout)
    return plan


def export_tree(ref: str, into: Path, repo: Path = ROOT) -> None:
    """Write the files of `ref` into `into` without touching the checkout."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref], cwd=repo, capture_output=True, check=False
    )
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
