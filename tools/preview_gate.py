"""The preview gate on `pulumi preview --json`: no replacement, deletion or restart of what running work lives in.

Reads one PreviewDigest (`pulumi preview --json`, pulumi/pulumi pkg/backend/display/json.go
`ShowPreviewDigest`: `steps[]` with `op` and `urn`, and `oldState` / `newState` carrying `type`)
and fails when a step would replace or delete a GUARDED_TYPES resource, unless ALLOW_LABEL is
given. Replacing any of them ends every run on the cluster (and a Lustre or PV/PVC replacement can
cut runs off their data), so it must be a decision someone labels, not a side effect a reviewer
scrolls past.

One replacement is ONE step in the default format: the digest keeps only what `shouldShow`
(pkg/backend/display/display.go) shows, and without `--show-replacement-steps` that is the logical
`replace` step; `create-replacement` and `delete-replaced` appear only with the flag. Both forms
are read here, and all three ops report as one `replace` per resource. Ops are the engine's own
(pkg/resource/deploy/step.go). Exit 1 names each guarded resource and what happens to it; exit 2
for a document that is not a preview.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

ALLOW_LABEL = "allow-replace"
GUARDED_TYPES: dict[str, str] = {
    "gcp:container/cluster:Cluster": "the GKE cluster",
    "gcp:container/nodePool:NodePool": "a node pool",
    "gcp:lustre/instance:Instance": "the Managed Lustre instance",
    "gcp:compute/network:Network": "a VPC network",
    "gcp:compute/subnetwork:Subnetwork": "a subnetwork (its nodes' NICs go with it)",
    # The peering and its range carry every byte between the nodes and Lustre.
    "gcp:servicenetworking/connection:Connection": "the Private Service Access peering to Lustre",
    "gcp:compute/globalAddress:GlobalAddress": "the Private Service Access range",
    # What the runs themselves live in: replacing any of these kills the Ray head and workers or
    # unmounts /lustre under them.
    "kubernetes:ray.io/v1:RayCluster": "the RayCluster (every running job dies with its head)",
    "kubernetes:core/v1:Namespace": "a namespace (the RayCluster and everything in it go with it)",
    "kubernetes:core/v1:PersistentVolume": "the Lustre PersistentVolume",
    "kubernetes:core/v1:PersistentVolumeClaim": "the Lustre claim the Ray pods mount",
}
# The ops of one replacement, whichever format the preview was written in.
REPLACEMENT_OPS = frozenset(
    {"replace", "create-replacement", "delete-replaced", "import-replacement"}
)
DESTRUCTIVE_OPS = REPLACEMENT_OPS | {"delete"}

# An in-place update of the RayCluster restarts the Ray head and every worker when it changes what
# KubeRay's spec hash covers: upgradeStrategy Recreate (components/k8s/raycluster.py) recreates
# every pod then (kuberay v1.7.0 raycluster_controller.go L1462-1500). The hash leaves out the
# worker counts, workersToDelete, tolerations, scheduling gates and the strategy itself
# (utils/util.go L645-667 `GenerateHashWithoutReplicasAndWorkersToDelete`), and the object's
# metadata is not in the spec. Any other changed path, or a step without a detailed diff, restarts.
RESTART_LABEL = "restart-ray"
RAY_CLUSTER_TYPE = "kubernetes:ray.io/v1:RayCluster"
_HASH_MUTED = re.compile(
    r"^(metadata([.\[]|$)|spec\.upgradeStrategy([.\[]|$)"
    r"|spec\.workerGroupSpecs\[\d+\]\.(replicas|minReplicas|maxReplicas|scaleStrategy)([.\[]|$)"
    r"|spec\.(headGroupSpec|workerGroupSpecs\[\d+\])\.template\.spec\."
    r"(tolerations|schedulingGates)([.\[]|$))"
)


class PreviewFormatError(ValueError):
    """The input is not a `pulumi preview --json` document."""


@dataclass(frozen=True)
class Blocked:
    urn: str
    type: str
    op: str

    @property
    def name(self) -> str:
        return self.urn.split("::", 3)[-1]


def step_type(step: dict[str, Any]) -> str:
    """A step's resource type: from its state, or the last `$` part of the URN's type."""
    for state in ("newState", "oldState"):
        typ = (step.get(state) or {}).get("type")
        if isinstance(typ, str) and typ:
            return typ
    parts = str(step.get("urn", "")).split("::")
    if len(parts) < 4:
        raise PreviewFormatError(
            f"step URN {step.get('urn')!r} is not urn:pulumi:<stack>::<project>::<type>::<name>"
        )
    return parts[2].split("$")[-1]


def blocked_steps(preview: Any) -> list[Blocked]:
    """Every guarded resource the preview replaces or deletes, once per resource and op, in order."""
    if not isinstance(preview, dict) or not isinstance(preview.get("steps", []), list):
        raise PreviewFormatError(
            "expected a JSON object with a `steps` list (pulumi preview --json)"
        )
    found: list[Blocked] = []
    for step in preview.get("steps", []):
        if not isinstance(step, dict) or "op" not in step or "urn" not in step:
            raise PreviewFormatError(f"a step without `op` and `urn`: {str(step)[:120]}")
        typ = step_type(step)
        if step["op"] in DESTRUCTIVE_OPS and typ in GUARDED_TYPES:
            op = "replace" if step["op"] in REPLACEMENT_OPS else step["op"]
            blocked = Blocked(urn=step["urn"], type=typ, op=op)
            if blocked not in found:
                found.append(blocked)
    return found


def ray_restarts(preview: Any) -> list[str]:
    """The RayClusters (by name) an in-place update of this preview restarts (see RESTART_LABEL)."""
    found: list[str] = []
    for step in preview.get("steps", []):
        if step.get("op") != "update" or step_type(step) != RAY_CLUSTER_TYPE:
            continue
        paths = list((step.get("detailedDiff") or {}).keys())
        if not paths or not all(_HASH_MUTED.match(p) for p in paths):
            found.append(str(step["urn"]).split("::", 3)[-1])
    return found


def _restart_verdict(preview: Any, labels: list[str]) -> tuple[bool, str]:
    restarts = ray_restarts(preview)
    if not restarts:
        return True, ""
    names = ", ".join(restarts)
    what = (
        f"this change restarts the Ray cluster {names}: KubeRay recreates the head and every "
        "worker, so every running job stops (a supervised run resumes from its last checkpoint "
        "once the new head is up)"
    )
    if RESTART_LABEL in labels:
        return True, f"\npreview gate: allowed by the `{RESTART_LABEL}` label: {what}"
    return False, (
        f"\npreview gate: {what}.\nCheck `rl-jobs list --stack <stack>`; when the restart is "
        f'wanted, add the `{RESTART_LABEL}` label to the pull request (README "Changing a running '
        'stack"), or run `pulumi up` by hand when no run is active.'
    )


def verdict(preview: Any, labels: list[str]) -> tuple[bool, str]:
    """(passes, message) for a preview and the pull request's labels."""
    blocked = blocked_steps(preview)
    restart_ok, restart_message = _restart_verdict(preview, labels)
    if not blocked:
        passes = (
            "preview gate: no replacement or deletion of the cluster, a node pool, Lustre, its "
            "peering, a network, the RayCluster, its namespace or the Lustre PV/PVC"
        )
        return restart_ok, passes + restart_message
    ops: dict[str, list[Blocked]] = {}
    for step in blocked:
        ops.setdefault(step.urn, []).append(step)
    lines = "\n".join(
        f"  - {'/'.join(b.op for b in steps)}: {GUARDED_TYPES[steps[0].type]}, {steps[0].name} ({steps[0].type})"
        for steps in ops.values()
    )
    if ALLOW_LABEL in labels:
        return restart_ok, f"preview gate: allowed by the `{ALLOW_LABEL}` label:\n{lines}" + (
            restart_message
        )
    return False, (
        f"preview gate: this change would replace or delete {len(ops)} resource(s) that running "
        f"training depends on:\n{lines}\nIf that is intended, add the `{ALLOW_LABEL}` label to the pull "
        'request (README "Replacements"); otherwise change the PR so these are updated in place.'
        + restart_message
    )


def main(
    preview: Path = typer.Argument(..., help="File holding `pulumi preview --json` output."),
    labels: str = typer.Option("", help="The pull request's labels, comma-separated."),
) -> None:
    """Fail when the preview replaces or deletes a resource running training depends on."""
    try:
        document = json.loads(preview.read_text())
        passes, message = verdict(
            document, [label.strip() for label in labels.split(",") if label.strip()]
        )
    except (OSError, json.JSONDecodeError, PreviewFormatError) as error:
        typer.echo(f"error: {preview}: {error}", err=True)
        raise typer.Exit(2) from None
    (sys.stdout if passes else sys.stderr).write(message + "\n")
    if not passes:
        raise typer.Exit(1)


if __name__ == "__main__":
    typer.run(main)
