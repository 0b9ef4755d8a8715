"""The supervision a run gets by default from its stack's GPUs, and notes that say what was chosen.

Every command that submits (`submit`, `run`, `submit --resume`) asks `supervision_defaults`; what
a capacity mode implies (preemptible, scaled on request, a node's maximum run) is
components/catalogue.py CAPACITY_MODES, read through the stack outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from components.contract import RUNS_ROOT
from jobs.runs.handoff import DEFAULT_MAX_PREEMPTIONS, Options

if TYPE_CHECKING:
    from components.stack_outputs import StackOutputs

ON_DEMAND = "on-demand"  # gpu.scaling: the GPU workers and nodes follow the runs' requests


@dataclass(frozen=True)
class Supervision:
    """The supervisor options a run is submitted with, and one note per default applied."""

    options: Options
    notes: tuple[str, ...] = ()


def supervision_defaults(
    outputs: StackOutputs | None,
    stack: str,
    options: Options,
    max_restarts: int,
    gpus_needed: int,
    framework: str = "",
) -> Supervision:
    """The run's supervision on the stack's GPUs, from what the user asked (`options`,
    `max_restarts`): supervised on preemptible GPUs, asking for GPUs that scale on request, and,
    for a recipe run (`framework`, the recipe's), saving before flex-start nodes end. A command
    (`run`, or `submit --resume` of a `run` run) passes no framework: a command has no save the
    supervisor could ask for before a node ends, so that default is not applied to it.
    Without stack outputs (a cluster named by address) the run stays as asked."""
    if outputs is None:
        return Supervision(options)
    options, supervised = surviving_defaults(options, max_restarts, outputs.gpu_provisioning, stack)
    options, asked = gpus_on_request(
        options, max_restarts, outputs.gpu_scaling, outputs.gpus_per_node, gpus_needed, stack
    )
    saves = ""
    if framework:
        options, saves = saves_before_node_end(
            options, max_restarts, outputs.gpu_max_run_hours, framework
        )
    return Supervision(options, tuple(note for note in (supervised, asked, saves) if note))


def _preemptible(provisioning: str | None) -> bool:
    if provisioning is None:
        return False
    # Start-up time: the catalogue only once a stack's outputs were read (a `run --address` never
    # loads it; tests/jobs/cli/test_startup.py).
    from components.catalogue import CAPACITY_MODES

    mode = CAPACITY_MODES.get(provisioning)
    return mode is not None and mode.supervised_by_default


def surviving_defaults(
    options: Options, max_restarts: int, provisioning: str | None, stack: str
) -> tuple[Options, str]:
    """On a stack whose GPUs are preemptible, a run is supervised (DEFAULT_MAX_PREEMPTIONS) with
    its record under RUNS_ROOT, where the head's re-armer looks, unless the user chose: an
    explicit --max-preemptions 0 keeps it as asked, an explicit --runs-root or budget is kept.
    Returns the options and a note saying what was chosen ("" when nothing was)."""
    if not _preemptible(provisioning) or options.max_preemptions == 0:
        return options, ""
    was_supervised = options.supervised(max_restarts)
    if was_supervised:  # its budgets are the user's (None: the supervisor's defaults)
        chosen = replace(options, runs_root=options.runs_root or RUNS_ROOT)
    else:
        chosen = replace(options, max_preemptions=DEFAULT_MAX_PREEMPTIONS, runs_root=RUNS_ROOT)
    if chosen == options:
        return options, ""
    if was_supervised:
        return chosen, (
            f"stack {stack} has {provisioning} GPUs: the run's record goes to {chosen.runs_root}, "
            "where the head's re-armer looks (--runs-root DIR to choose another)"
        )
    return chosen, (
        f"stack {stack} has {provisioning} GPUs: the run is supervised (up to "
        f"{DEFAULT_MAX_PREEMPTIONS} "
        f"preemptions, its record in {chosen.runs_root}, where the head's re-armer looks); "
        "--max-preemptions 0 submits it unsupervised"
    )


def saves_before_node_end(
    options: Options, max_restarts: int, max_run_hours: int | None, framework: str
) -> tuple[Options, str]:
    """On flex-start GPUs (the stack's gpuMaxRunHours), a supervised recipe run's attempts save
    before their nodes reach their maximum run duration; a note says so ("" when not)."""
    if not max_run_hours or not options.supervised(max_restarts):
        return options, ""
    chosen = replace(options, node_max_run_s=max_run_hours * 3600.0, save_before_node_end=framework)
    return chosen, (
        f"flex-start GPU nodes run at most {max_run_hours} h: each attempt saves a checkpoint "
        "before the first of its nodes reaches that"
    )


def gpus_on_request(
    options: Options,
    max_restarts: int,
    scaling: str | None,
    gpus_per_node: int,
    gpus_needed: int,
    stack: str,
) -> tuple[Options, str]:
    """On a stack whose GPU nodes scale on demand, a run that needs GPUs is supervised and its
    supervisor asks Ray's autoscaler for them: neither framework makes a request Ray's autoscaler
    sees while the GPUs are missing (jobs/head/scale_up.py). An explicitly unsupervised run
    (--max-preemptions 0, no other budget) stays so, with a note that nothing asks for its GPUs.
    Returns the options and a note ("" when nothing changed)."""
    if scaling != ON_DEMAND or gpus_needed <= 0:
        return options, ""
    if not options.supervised(max_restarts) and options.max_preemptions == 0:
        return options, (
            f"warning: stack {stack}'s GPU nodes scale on demand and an unsupervised run asks "
            "nobody for them: it trains only on GPU workers already up (drop --max-preemptions 0 "
            "to have its supervisor ask Ray's autoscaler for them)"
        )
    was_supervised = options.supervised(max_restarts)
    chosen = replace(
        options,
        max_preemptions=options.max_preemptions if was_supervised else DEFAULT_MAX_PREEMPTIONS,
        runs_root=options.runs_root or RUNS_ROOT,
        request_gpus=True,
        gpus_per_node=gpus_per_node,
    )
    return chosen, (
        f"stack {stack}'s GPU nodes scale on demand: the run's supervisor asks Ray's autoscaler "
        f"for {gpus_needed} GPUs"
        + (f" ({-(-gpus_needed // gpus_per_node)} node(s))" if gpus_per_node > 0 else "")
        + " and releases them when the run ends"
        + ("" if was_supervised else f" (the run is supervised, its record in {chosen.runs_root})")
    )
