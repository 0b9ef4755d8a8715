"""Every capacity mode through its whole life: create, grow, park, unpark, change machine type, destroy.

One table, spot / reservation / on-demand /
flex-start x the six steps of a stack's life, each step applied to the state the previous one
left. For every cell:
  - the step's rendering (the whole program under Pulumi's mock runtime, `preview=False`) passes
    the SDK-types walk (tests/test_sdk_inputs.py) and the policy pack (tests/policy/adapter.py);
  - the offline plan diff from the previous step (tools/plan_diff.py) replaces exactly the
    resources this table names, each because of an input the force-new table lists
    (tools/force_new.py), and nothing it leaves in place touches a force-new input;
  - the preview gate (tools/preview_gate.py) gives the verdict this table names, on a preview
    made from that diff in `pulumi preview --json`'s format (one `replace` step per replaced
    resource, as without `--show-replacement-steps`; see tests/tools/test_preview_gate.py);
  - destroy: what each procedure of docs/destroy.md leaves, computed from what the program
    registers (protect, retain-on-delete, dependencies, as `pulumi destroy --exclude-protected`
    keeps them), is what the doc's table says.

Each distinct stack config is rendered once (cached), so unpark reuses create's rendering.

Beside the six steps, the transitions of a running stack: static <-> on-demand
scaling, and a RayCluster change on a stack whose workers Ray's autoscaler has started. Every
RayCluster update that makes KubeRay recreate its pods is a restart the gate asks a label for
(`restart-ray`), and the update applies over the autoscaler's writes without a conflict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
import yaml

from tests.components.k8s.ssa import LiveObject, crd_schema
from tests.policy.adapter import run_policies
from tests.test_sdk_inputs import args_class, unknown_keys
from tools.plan import as_json
from tools.plan_diff import PlanDiff, diff_plans, force_new_entries
from tools.preview_gate import ALLOW_LABEL, RESTART_LABEL, ray_restarts, verdict
from tools.render import ROOT, RenderedResource, Rendering, load_stack_file, masked, render

pytestmark = pytest.mark.plan

MODES = ("spot", "reservation", "on-demand", "flex-start")
STEPS = ("create", "grow", "park", "unpark", "change-machine-type", "destroy")
PROJECT = "example-project"
NODE_POOL = "gcp:container/nodePool:NodePool"
DESTROY_DOC = (ROOT / "docs" / "destroy.md").read_text()
RAYCLUSTER_SCHEMA = crd_schema(
    yaml.safe_load((ROOT / "tests/schemas/kuberay-v1.7.0/ray.io_rayclusters.yaml").read_text()),
    "v1",
)


@dataclass(frozen=True)
class Gpu:
    machine_type: str
    node_count: int


# What each step asks of the GPUs; a step is applied to the state the previous one left.
STEP_GPU: dict[str, Gpu] = {
    "create": Gpu("a4-highgpu-8g", 2),
    "grow": Gpu("a4-highgpu-8g", 4),
    "park": Gpu("a4-highgpu-8g", 0),
    "unpark": Gpu("a4-highgpu-8g", 2),
    "change-machine-type": Gpu("a3-ultragpu-8g", 2),
}
PREVIOUS = dict(zip(STEPS[1:], STEPS[:-1], strict=True))


@dataclass(frozen=True)
class Expected:
    """What a step does: the resources it replaces (by name) and whether the gate lets it through
    without the `allow-replace` label."""

    replaced: frozenset[str]
    gate_passes: bool
    why: str
    # Every resource the step changes (replaced ones included); None: every resource (create,
    # destroy).
    changed: frozenset[str] | None = None


GPU_POOL = "rl-dev-gpu-pool"
RAY_CLUSTER = "rl-dev-k8s-ray-raycluster"
IN_PLACE = Expected(
    frozenset(),
    True,
    "only sizes change: the pool's nodeCount (flex-start: its autoscaling ceiling) and the Ray "
    "worker group's replicas, all in-place updates; nothing guarded is replaced or deleted",
    frozenset({GPU_POOL, RAY_CLUSTER}),
)
EXPECTED: dict[str, Expected] = {
    "create": Expected(frozenset(), True, "every step of the preview is a create"),
    "grow": IN_PLACE,
    "park": IN_PLACE,
    "unpark": IN_PLACE,
    # The accelerator type is force-new on a node pool (the machine type alone is not), so the GPU
    # pool is deleted and created again: every GPU node and every run on them goes. The gate guards node
    # pools, so the change needs the label.
    # The gIB NCCL installer DaemonSet follows the machine (its node affinity) and the Ray
    # workers' accelerator selector and memory follow it too: both update in place.
    "change-machine-type": Expected(
        frozenset({GPU_POOL}),
        False,
        "the GPU pool is replaced (nodeConfig.guestAccelerators[].type is force-new) and node "
        "pools are guarded",
        frozenset({GPU_POOL, RAY_CLUSTER, "rl-dev-k8s-nccl-daemonset"}),
    ),
    # The destroy preview deletes the cluster, its pools, Lustre and the networks: the gate
    # refuses it (destroy never runs through the deploy workflow; a change that dropped the stack
    # from the program could not slip through either).
    "destroy": Expected(frozenset(), False, "every guarded resource is deleted"),
}
# Force-new inputs a machine-type change must be replaced by, per mode (on top of the machine's).
# (`nodeConfig.machineType` itself is updatable in place; the accelerator type is not.)
MACHINE_CHANGE_REASONS = {"nodeConfig.guestAccelerators[].type"}


def stack_config(
    mode: str, gpu: Gpu, *, protect: bool = False, extra: tuple[tuple[str, Any], ...] = ()
) -> dict[str, Any]:
    """The dev stack file, in `mode`, asking for `gpu` (a reservation reserves one machine type,
    so a reservation-mode stack names one per machine type), with `extra` gpu settings."""
    config, _ = load_stack_file("dev")
    config["gcp:project"] = PROJECT
    settings: dict[str, Any] = {
        "machineType": gpu.machine_type,
        "nodeCount": gpu.node_count,
        "provisioning": mode,
    }
    if mode == "reservation":
        settings["reservation"] = f"{gpu.machine_type}-reservation"
    if mode == "flex-start":
        settings["maxRunDurationHours"] = 24
    config["rl-on-gke:gpu"] = settings | dict(extra)
    config["rl-on-gke:lustre"] = {**config["rl-on-gke:lustre"], "protect": protect}
    return config


@cache
def _render(
    mode: str, gpu: Gpu, protect: bool = False, extra: tuple[tuple[str, Any], ...] = ()
) -> Rendering:
    return render(stack_config(mode, gpu, protect=protect, extra=extra), stack="dev")


def rendering(mode: str, step: str) -> Rendering:
    return _render(mode, STEP_GPU[step])


@cache
def plan(mode: str, step: str) -> dict[str, Any]:
    return as_json(rendering(mode, step), [])


def step_diff(mode: str, step: str) -> PlanDiff:
    """The plan diff of `step` from the state its previous step left (nothing before create;
    nothing after destroy)."""
    before = plan(mode, PREVIOUS[step]) if step in PREVIOUS else {"resources": []}
    after = {"resources": []} if step == "destroy" else plan(mode, step)
    return diff_plans(before, after)


# ------------------------------------------------------------- the preview, in Pulumi's format


def _state(resource: RenderedResource) -> dict[str, Any]:
    return {
        "urn": resource.urn,
        "custom": True,
        "type": resource.type,
        "inputs": masked(resource.inputs),
        "outputs": {},
        "parent": resource.parent,
        "provider": resource.provider,
    }


def preview_document(mode: str, step: str) -> dict[str, Any]:
    """`pulumi preview --json` of the step as Pulumi writes it without --show-replacement-steps
    (pkg/backend/display/json.go ShowPreviewDigest): one step per custom resource, `create` /
    `update` / `replace` (ONE step per replacement) / `delete` / `same`, a `changeSummary`."""
    return preview_between(
        rendering(mode, PREVIOUS[step]) if step in PREVIOUS else None,
        None if step == "destroy" else rendering(mode, step),
        step_diff(mode, step),
    )


def preview_between(old: Rendering | None, new: Rendering | None, diff: PlanDiff) -> dict[str, Any]:
    """The preview of going from one rendering to the next (see `preview_document`)."""
    before = {r.urn: r for r in old.custom_resources()} if old else {}
    after = {r.urn: r for r in new.custom_resources()} if new else {}
    changed = {c.urn: c for c in diff.changed}
    steps: list[dict[str, Any]] = []
    for urn in sorted(before.keys() | after.keys()):
        step_json: dict[str, Any] = {"urn": urn}
        if urn not in before:
            step_json |= {"op": "create", "newState": _state(after[urn])}
        elif urn not in after:
            step_json |= {"op": "delete", "oldState": _state(before[urn])}
        else:
            change = changed.get(urn)
            op = "same" if change is None else "replace" if change.replaces else "update"
            step_json |= {
                "op": op,
                "oldState": _state(before[urn]),
                "newState": _state(after[urn]),
            }
            if change is not None and change.replaces:
                step_json["replaceReasons"] = sorted({p.split(".")[0] for p in change.replace_by})
            if change is not None:
                step_json["detailedDiff"] = {
                    path: {"kind": "update", "inputDiff": True}
                    for path, _, _ in change.changes
                    if not path.startswith("(")
                }
        step_json["provider"] = (step_json.get("newState") or step_json["oldState"])["provider"]
        steps.append(step_json)
    summary: dict[str, int] = {}
    for s in steps:
        summary[s["op"]] = summary.get(s["op"], 0) + 1
    return {"config": {}, "steps": steps, "changeSummary": summary}


# ------------------------------------------------------------------------------------- the table

CELLS = [(mode, step) for mode in MODES for step in STEPS]


@pytest.mark.parametrize(("mode", "step"), CELLS)
def test_each_step_of_each_mode(mode: str, step: str) -> None:
    expected = EXPECTED[step]
    if step != "destroy":
        rendered = rendering(mode, step)
        unknown = {
            f"{r.type} {r.name}": found
            for r in rendered.custom_resources()
            if (r.type.startswith("gcp:") or r.type == "pulumi:providers:gcp")
            and (found := unknown_keys(r.inputs, args_class(r.type), ""))
        }
        assert unknown == {}, "inputs the SDK does not declare"
        assert run_policies(rendered) == [], "the policy pack refuses the step"
        (pool,) = [r for r in rendered.of_type(NODE_POOL) if r.inputs["name"] == "gpu"]
        assert pool.inputs["nodeConfig"]["machineType"] == STEP_GPU[step].machine_type

    diff = step_diff(mode, step)
    replaced = {c.name for c in diff.changed if c.replaces}
    assert replaced == expected.replaced, expected.why
    if expected.changed is None:
        assert diff.changed == [] and bool(diff.added) is (step == "create")
        assert bool(diff.removed) is (step == "destroy")
    else:
        assert {c.name for c in diff.changed} == expected.changed
        assert diff.added == [] and diff.removed == []
    for change in diff.changed:
        table = {e.path for e in force_new_entries(change.type)}
        assert set(change.replace_by) <= table, change.name
        if not change.replaces:
            # An in-place update touches no value the force-new table lists.
            touched = _touched_force_new(
                change.type, change.changes, _ignored(mode, step, change.urn)
            )
            assert touched == set(), f"{change.name} changes force-new {touched} in place"
    if step == "change-machine-type":
        (pool_change,) = [c for c in diff.changed if c.replaces]
        reasons = MACHINE_CHANGE_REASONS | (
            {"nodeConfig.reservationAffinity.values[]"} if mode == "reservation" else set()
        )
        assert set(pool_change.replace_by) >= reasons

    document = preview_document(mode, step)
    replace_steps = [s["urn"].split("::")[-1] for s in document["steps"] if s["op"] == "replace"]
    assert sorted(replace_steps) == sorted(expected.replaced)  # one step per replaced resource
    restarts = restarts_ray(mode, step)
    assert ray_restarts(document) == ([RAY_CLUSTER] if restarts else [])
    passes, message = verdict(document, [])
    assert passes is (expected.gate_passes and not restarts), message
    assert verdict(document, [ALLOW_LABEL, RESTART_LABEL])[0] is True
    if step == "destroy":
        check_destroy(mode)


def restarts_ray(mode: str, step: str) -> bool:
    """Whether the step's RayCluster update recreates the Ray pods: on an autoscaled stack every
    change does (the head template's spec hash, components/k8s/raycluster.py); on a static one a
    change of the worker counts alone does not (KubeRay's hash leaves them out); a new machine
    changes the worker template."""
    if step == "change-machine-type":
        return True
    return step in ("grow", "park", "unpark") and mode != "reservation"


def _ignored(mode: str, step: str, urn: str) -> list[str]:
    resources = {r.urn: r for r in rendering(mode, step).resources} if step != "destroy" else {}
    resource = resources.get(urn)
    return resource.ignore_changes if resource else []


def _touched_force_new(
    resource_type: str, changes: list[tuple[str, Any, Any]], ignored: list[str]
) -> set[str]:
    """The force-new value paths of `resource_type` under which an input changed (ignoring what
    `ignoreChanges` covers), read straight from the table."""
    shaped = {re.sub(r"\[\d+\]", "[]", p) for p, _, _ in changes if not p.startswith("(")}
    hit: set[str] = set()
    for entry in force_new_entries(resource_type):
        if entry.kind != "value" or any(entry.path.startswith(i) for i in ignored):
            continue
        if any(
            p == entry.path or p.startswith((entry.path + ".", entry.path + "[")) for p in shaped
        ):
            hit.add(entry.path)
    return hit


# ---------------------------------------------------------------- destroy, per docs/destroy.md

SERVICE = "gcp:projects/service:Service"
PROCEDURES = {"A": False, "B": True}  # procedure -> the stack's lustre.protect


def kept_by_exclude_protected(rendering: Rendering) -> set[str]:
    """What `pulumi destroy --exclude-protected` keeps: the protected resources and, transitively,
    their parents, providers, dependencies and deleted-with targets (getProtectedExcludes in
    pkg/cmd/pulumi/operations/destroy.go). Without protected resources: nothing."""
    by_urn = {r.urn: r for r in rendering.resources}
    kept: set[str] = set()
    todo = [r.urn for r in rendering.resources if r.protect]
    while todo:
        urn = todo.pop()
        if urn in kept or urn not in by_urn:
            continue
        kept.add(urn)
        resource = by_urn[urn]
        # A provider reference is `<provider urn>::<provider id>`.
        provider = resource.provider.rsplit("::", 1)[0] if resource.provider else ""
        todo += [u for u in (resource.parent, resource.deleted_with, provider) if u]
        todo += resource.dependencies
    return kept


def left_in_project(deleted: list[RenderedResource]) -> set[str]:
    """What a destroy drops from the state but leaves in the project: retained resources, and
    APIs that are never disabled."""
    return {
        r.urn
        for r in deleted
        if r.retain_on_delete or (r.type == SERVICE and r.inputs.get("disableOnDestroy") is False)
    }


def doc_row(procedure: str) -> tuple[str, str]:
    """The two cells of docs/destroy.md's table row for a procedure: (state, project)."""
    row = re.search(rf"^\| {procedure} \(.*?\) \| (.*?) \| (.*?) \|$", DESTROY_DOC, re.M)
    assert row, f"docs/destroy.md has no table row for procedure {procedure}"
    return row.group(1), row.group(2)


def named_in(cell: str, rendering: Rendering, prefix: str) -> set[str]:
    """The URNs a cell names: `type` `name` pairs, and every resource of an `every `type``."""
    if cell.strip() == "nothing":
        return set()
    custom = rendering.custom_resources()
    pairs = set(re.findall(r"`([a-z0-9-]+:[^`]+)` `([^`]+)`", cell))
    every = set(re.findall(r"every `([a-z0-9-]+:[^`]+)`", cell))
    assert pairs or every, f"cannot read {cell!r}"
    found = {r.urn for r in custom if (r.type, r.name.removeprefix(prefix)) in pairs}
    assert len(found) == len(pairs), f"{cell!r} names resources the program does not register"
    return found | {r.urn for r in custom if r.type in every}


def destroy_preview(rendering: Rendering, kept: set[str]) -> dict[str, Any]:
    """`pulumi destroy --preview-only --json`: one `delete` step per resource it deletes."""
    steps = [
        {"op": "delete", "urn": r.urn, "provider": r.provider, "oldState": _state(r)}
        for r in rendering.custom_resources()
        if r.urn not in kept
    ]
    return {"config": {}, "steps": steps, "changeSummary": {"delete": len(steps)}}


def check_destroy(mode: str) -> None:
    for procedure, protect in PROCEDURES.items():
        final = _render(mode, STEP_GPU[PREVIOUS["destroy"]], protect)
        kept = kept_by_exclude_protected(final)
        deleted = [r for r in final.custom_resources() if r.urn not in kept]
        state_cell, project_cell = doc_row(procedure)
        custom_kept = kept & {r.urn for r in final.custom_resources()}
        assert custom_kept == named_in(state_cell, final, "rl-dev-"), procedure
        assert left_in_project(deleted) == named_in(project_cell, final, "rl-dev-"), procedure
        assert not any(r.type == NODE_POOL for r in final.resources if r.urn in kept)
        passes, message = verdict(destroy_preview(final, kept), [])
        assert passes is EXPECTED["destroy"].gate_passes, message


# ------------------------------------------------------------- transitions of a running stack

SPOT_TWO = Gpu("a4-highgpu-8g", 2)
STATIC = (("scaling", "static"),)
TRANSITIONS: dict[str, tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]]] = {
    "static -> on-demand": (STATIC, ()),
    "on-demand -> static": ((), STATIC),
    "RayCluster change on a stack with running workers": ((), (("idleMinutes", 45),)),
}
# Only a stack whose GPU workers scale on demand runs Ray's autoscaler, and only it scrapes the
# autoscaler's metrics (components/k8s/metrics.py): a scaling change adds or removes that one
# PodMonitoring, which restarts nothing.
AUTOSCALER_MONITORING = "PodMonitoring::rl-dev-k8s-metrics-autoscaler-podmonitoring"
ADDED_REMOVED = {
    "static -> on-demand": ([AUTOSCALER_MONITORING], []),
    "on-demand -> static": ([], [AUTOSCALER_MONITORING]),
    "RayCluster change on a stack with running workers": ([], []),
}


def _ends(resources: list[dict[str, Any]]) -> list[str]:
    """Each resource as `<kind>::<name>`, from the end of its URN (`...$<type>::<name>`)."""
    ends = []
    for resource in resources:
        type_, name = resource["urn"].split("$")[-1].split("::")
        ends.append(f"{type_.rsplit(':', 1)[-1]}::{name}")
    return sorted(ends)


@pytest.mark.parametrize("transition", sorted(TRANSITIONS))
def test_each_transition_of_a_running_stack_restarts_ray_visibly(transition: str) -> None:
    before_extra, after_extra = TRANSITIONS[transition]
    before = _render("spot", SPOT_TWO, extra=before_extra)
    after = _render("spot", SPOT_TWO, extra=after_extra)
    assert run_policies(after) == [], "the policy pack refuses the transition"
    diff = diff_plans(as_json(before, []), as_json(after, []))
    assert (_ends(diff.added), _ends(diff.removed)) == ADDED_REMOVED[transition]
    assert not any(c.replaces for c in diff.changed)
    assert RAY_CLUSTER in {c.name for c in diff.changed}
    document = preview_between(before, after, diff)
    assert ray_restarts(document) == [RAY_CLUSTER]
    passes, message = verdict(document, [])
    assert passes is False and RESTART_LABEL in message
    assert verdict(document, [RESTART_LABEL])[0] is True
    # The update applies over what Ray's autoscaler wrote (workers running: replicas 2), with no
    # conflict, and whatever of its writes it resets goes with pods KubeRay recreates.
    old, new = (_ray_cluster(r) for r in (before, after))
    live = LiveObject(RAYCLUSTER_SCHEMA)
    live.apply(old, "pulumi-kubernetes-1")
    if old["spec"]["enableInTreeAutoscaling"]:
        scaled = live.object
        scaled["spec"]["workerGroupSpecs"][0]["replicas"] = 2
        live.update(scaled, "python-requests")
    force = new["metadata"].get("annotations", {}).get("pulumi.com/patchForce") == "true"
    live.apply(new, "pulumi-kubernetes-1", force=force)
    assert live.object["spec"]["upgradeStrategy"] == {"type": "Recreate"}


def _ray_cluster(rendered: Rendering) -> dict[str, Any]:
    (resource,) = [r for r in rendered.custom_resources() if r.name == RAY_CLUSTER]
    return {k: resource.inputs[k] for k in ("apiVersion", "kind", "metadata", "spec")}
