"""The command-line options several commands share, with their help text, and how a cluster is reached."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from components.contract import RUNS_ROOT
from jobs.cli.console import ConsoleReporter, detached, emit_json, err, out
from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.recipes.reward_placement import ALLOW_FLAG
from jobs.runs import address, follow, handoff

AddressOpt = Annotated[
    str | None,
    typer.Option(
        "--address",
        metavar="URL",
        help="Ray dashboard URL, e.g. http://127.0.0.1:8265 (else RAY_ADDRESS, else --stack).",
    ),
]
StackOpt = Annotated[
    str | None,
    typer.Option(
        "--stack",
        metavar="STACK",
        help="Pulumi stack: read its outputs and port-forward to its Ray head.",
    ),
]
JsonOpt = Annotated[
    bool, typer.Option("--json", metavar="", help="Machine-readable output on stdout.")
]
FollowOpt = Annotated[
    bool,
    typer.Option(
        "--follow", metavar="", help="Stream logs until the job ends; exit with its result."
    ),
]
WaitOpt = Annotated[
    bool | None,
    typer.Option(
        "--wait/--no-wait",
        show_default=False,
        help="Supervised: --wait returns once the supervisor has taken the run, so one that cannot start fails this command; --no-wait returns once it is submitted, as `ray job submit --no-wait` does (`status RUN` then says whether it took the run). Default: wait unless a supervisor of this same code already took a run under the same runs root on this cluster. Unsupervised: --wait waits for the job's end without printing its log, and exits with its status (1 when it failed or was stopped).",
    ),
]
TailOpt = Annotated[
    int | None,
    typer.Option(
        "--tail",
        min=1,
        metavar="N",
        help="Print only the last N lines of the job's log (a run's: its latest attempt's).",
    ),
]
RestartsOpt = Annotated[
    int,
    typer.Option(
        "--max-restarts",
        min=0,
        metavar="N",
        show_default=False,
        help="Hand the run to a supervisor on the Ray head that resubmits a FAILED attempt up to N times (same checkpoint dir), after waiting for the GPUs; a stopped run, or a crash (failed with every GPU present and no new checkpoint since the previous attempt), is not restarted.",
    ),
]
PreemptionsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-preemptions",
        min=0,
        metavar="N",
        help="Hand the run to a supervisor that resubmits an attempt ended by a lost node (a preemption, read from Ray's node table) up to N times, apart from --max-restarts (default "
        f"{handoff.DEFAULT_MAX_PREEMPTIONS} when supervised).",
    ),
]
CheckpointEveryOpt = Annotated[
    str | None,
    typer.Option(
        "--checkpoint-every",
        metavar="N|auto",
        help="Save every N steps (the recipe's save key), or 'auto': the Young/Daly period "
        "sqrt(2 x save time x time between interruptions) from what the run has measured, "
        "applied at each --resume (docs/jobs.md, 'How the save period is chosen').",
    ),
]
StallOpt = Annotated[
    float | None,
    typer.Option(
        "--stall-timeout",
        min=0,
        metavar="SECONDS",
        help="Stop and restart an attempt that prints nothing and checkpoints nothing for this long, recorded 'stalled' (default: "
        f"{handoff.RECIPE_STALL_TIMEOUT_S:g} for recipes, off for run; 0: off).",
    ),
]
DeadlineOpt = Annotated[
    float | None,
    typer.Option(
        "--capacity-deadline",
        min=0,
        metavar="SECONDS",
        help="Give the run up when its GPUs are not back this long after a failure (default: no deadline; a spot stockout of hours never ends a supervised run on its own).",
    ),
]
RunsRootOpt = Annotated[
    str | None,
    typer.Option(
        "--runs-root",
        metavar="DIR",
        help="Where runs' records live, as the Ray head sees it: the supervisor writes them there; list, status and logs read them without the head.",
    ),
]
NameOpt = Annotated[
    str | None,
    typer.Option(
        "--name",
        metavar="RUN",
        help="Run name (default: RECIPE-YYYYMMDD-HHMMSS-mmmxx, or run-... for run: UTC time, its milliseconds mmm and two random letters xx); attempts are RUN-a1, RUN-a2 and so on.",
    ),
]
UnsandboxedOpt = Annotated[
    bool,
    typer.Option(
        ALLOW_FLAG,
        metavar="",
        help="Recipes whose reward runs model-written code: run it inside the trainer pod (rlimits only) when the stack has no code sandbox service.",
    ),
]
IdArg = Annotated[
    str,
    typer.Argument(
        metavar="ID",
        show_default=False,
        help="A submission id, or a run name (its latest attempt).",
    ),
]


def spinner(message: str) -> Any:
    return err().status(message)


def where_flags(where: address.Where) -> str:
    """The flags a hint repeats so the next command reaches the same cluster."""
    if where.source == "RAY_ADDRESS":
        return ""
    return f" {where.describe()}"


@contextmanager
def reach(
    addr: str | None, stack_name: str | None
) -> Iterator[tuple[address.Dashboard, address.Where]]:
    """The cluster named by --address / RAY_ADDRESS / --stack, reachable for the block."""
    where = address.choose(addr, stack_name)
    with address.reach(where, spinner=spinner) as dashboard:
        yield dashboard, where


def watcher(dashboard: address.Dashboard, where: address.Where) -> follow.Watcher:
    return follow.Watcher(
        dashboard,
        ConsoleReporter(),
        lambda job_id: commands.command("status", job_id, where=where_flags(where)),
    )


def stop_hint(job_id: str, where: address.Where) -> str:
    return commands.command("stop", job_id, where=where_flags(where))


def print_submitted(job_id: str, where: address.Where, with_stop: bool = False) -> None:
    """A submitted job's id on stdout, and on stderr how to follow it (and, `with_stop`, stop it)."""
    out().print(job_id, markup=False)
    hints = f"follow: {commands.command('logs', job_id, '--follow', where=where_flags(where))}"
    if with_stop:
        hints += f"\nstop:   {stop_hint(job_id, where)}"
    err().print(hints, markup=False)


def report_submitted(
    job_id: str,
    where: address.Where,
    as_json: bool,
    view: Mapping[str, object],
    with_stop: bool = False,
) -> None:
    """A job submitted and not followed: with --json, `view` with status SUBMITTED on stdout;
    else `print_submitted` for `job_id`."""
    if as_json:
        emit_json({**view, "status": "SUBMITTED"})
    else:
        print_submitted(job_id, where, with_stop)


def supervision(
    max_preemptions: int | None,
    stall_timeout: float | None,
    runs_root: str | None,
    capacity_deadline: float | None = None,
    *,
    wait: bool | None = None,
    follow_logs: bool = False,
) -> handoff.Options:
    """What `run`/`submit` ask of the supervisor beyond --max-restarts (checked here)."""
    if wait is False and follow_logs:
        raise UsageError(
            "--no-wait cannot be combined with --follow",
            "--follow waits for the whole run; drop one of them",
        )
    if runs_root is not None and not runs_root.startswith("/"):
        raise UsageError(
            f"--runs-root {runs_root!r} is not an absolute path",
            f"give the directory as the Ray head sees it, e.g. {RUNS_ROOT}",
        )
    return handoff.Options(
        max_preemptions,
        stall_timeout,
        runs_root or "",
        capacity_deadline_s=capacity_deadline,
        # A followed run is watched from its first record: its hand-off waits for it.
        wait_armed=True if follow_logs else wait,
    )


def follow_or_detach(
    dashboard: address.Dashboard,
    where: address.Where,
    job_id: str,
    to_stderr: bool,
    detached_note: str = "",
) -> follow.JobStatus:
    """Follow `job_id` to its end; Ctrl-C detaches (the job keeps running) and says how to stop."""
    try:
        return watcher(dashboard, where).follow(job_id, to_stderr=to_stderr)
    except KeyboardInterrupt as stop:
        err().print(
            f"detached; {job_id} keeps running{detached_note}. Stop it with: "
            f"{stop_hint(job_id, where)}",
            markup=False,
        )
        raise typer.Exit(detached(stop)) from None
