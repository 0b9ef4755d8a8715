"""`run -- COMMAND`: any command as a run on the cluster, supervised as its stack's GPUs ask."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from components.contract import RUNS_ROOT
from jobs.cli import options as opt
from jobs.cli.console import handled
from jobs.cli.drive import Attempt, Submitting, drive, takes_submitting
from jobs.common.errors import UsageError
from jobs.runs import address, plan

app = typer.Typer()


@dataclass(frozen=True)
class RunOptions:
    """`run`'s flags, checked: the command, what it uploads and reserves, how it is submitted."""

    submitting: Submitting
    command: tuple[str, ...]
    working_dir: Path | None = None
    name: str | None = None
    gpus: int = 0
    cluster_gpus: int | None = None
    cpus: float | None = None
    resources: tuple[str, ...] = ()
    checkpoint_dir: str = ""

    @property
    def gpus_needed(self) -> int:
        """The GPUs the run waits for before each attempt: --cluster-gpus, else --gpus."""
        return max(self.gpus, self.cluster_gpus or 0)


@app.command("run", context_settings={"allow_interspersed_args": False})
@handled
@takes_submitting
def run_cmd(
    command: Annotated[
        list[str],
        typer.Argument(metavar="-- COMMAND ...", help="The command to run on the cluster."),
    ],
    working_dir: Annotated[
        Path | None,
        typer.Option(
            "--working-dir",
            metavar="DIR",
            help="Upload this directory (checked against Ray's 100 MiB cap first).",
        ),
    ] = None,
    name: opt.NameOpt = None,
    *,
    submitting: Submitting,
    gpus: Annotated[
        int,
        typer.Option(
            "--gpus",
            min=0,
            metavar="N",
            show_default=False,
            help="GPUs the command gets (Ray's entrypoint_num_gpus, as `ray job submit --entrypoint-num-gpus`): it starts on a node that has them, with CUDA_VISIBLE_DEVICES set, and waits PENDING until one does. Supervised (--max-restarts, --max-preemptions), every attempt reserves them, and the supervisor waits until the cluster reports them before each one.",
        ),
    ] = 0,
    cluster_gpus: Annotated[
        int | None,
        typer.Option(
            "--cluster-gpus",
            min=1,
            metavar="N",
            help="GPUs the command's Ray workers need in the cluster (its driver reserves none unless --gpus): supervised, the run waits until the cluster reports N GPUs before each attempt, and a failure with all N present is a crash (default: --gpus).",
        ),
    ] = None,
    cpus: Annotated[
        float | None,
        typer.Option(
            "--cpus",
            min=0,
            metavar="N",
            help="CPUs the command reserves (entrypoint_num_cpus); 1 or more keeps it off a head started with 0 CPUs.",
        ),
    ] = None,
    resources: Annotated[
        list[str] | None,
        typer.Option(
            "--resource",
            metavar="NAME=AMOUNT",
            help="A custom resource the command reserves (entrypoint_resources); repeat for more.",
        ),
    ] = None,
    checkpoint_dir: Annotated[
        str,
        typer.Option(
            "--checkpoint-dir",
            metavar="DIR",
            show_default=False,
            help=f"Where the command checkpoints, as seen on the Ray head (e.g. {RUNS_ROOT}/RUN/checkpoints): a new entry there since the previous attempt tells a crash from progress.",
        ),
    ] = "",
) -> None:
    """Run any command on the cluster.

    For example `rl-jobs run --stack dev --gpus 1 -- nvidia-smi` runs nvidia-smi on a GPU
    node, with one GPU."""
    asked = RunOptions(
        submitting,
        tuple(command),
        working_dir=working_dir,
        name=name,
        gpus=gpus,
        cluster_gpus=cluster_gpus,
        cpus=cpus,
        resources=tuple(resources or ()),
        checkpoint_dir=checkpoint_dir,
    )
    raise typer.Exit(_run(asked))


def _run(asked: RunOptions) -> int:
    """The command's attempt built (refusals cost nothing), then submitted or handed over."""
    if asked.checkpoint_dir and not asked.checkpoint_dir.startswith("/"):
        raise UsageError(
            f"--checkpoint-dir {asked.checkpoint_dir!r} is not an absolute path",
            f"give the directory as the Ray head sees it, e.g. {RUNS_ROOT}/RUN/checkpoints",
        )
    reserve = plan.Reserve(
        asked.cpus,
        float(asked.gpus) if asked.gpus else None,
        plan.parse_resources(list(asked.resources)),
    )
    run = plan.check_run_name(asked.name or plan.default_run_name("run"))
    submitting = asked.submitting
    # Built (and the working dir measured) before contacting anything: an oversize dir is
    # refused without a port-forward or an upload.
    sub = plan.for_command(
        list(asked.command),
        run,
        asked.working_dir,
        submitting.stack_name,
        plan.git_commit(),
        reserve,
        asked.checkpoint_dir,
    )
    where = address.choose(submitting.addr, submitting.stack_name)
    # A command has no save to ask for before a node ends: no framework.
    chosen = submitting.defaults_on(where.outputs(), where.stack, asked.gpus_needed)
    with address.reach(where, spinner=opt.spinner) as dashboard:
        attempt = Attempt(
            chosen.options,
            gpus=asked.gpus_needed,
            checkpoint_dir=asked.checkpoint_dir,
            # A name given may be an old run's (a supervisor alone may take it over), so the
            # cluster's jobs are listed to check it; a generated one is new by construction (its
            # millisecond and letters), and a clash of its attempt 1 is still refused by Ray's
            # unique submission id. Listing costs more the more jobs a cluster has.
            check_name_free=asked.name is not None,
        )
        return drive(dashboard, where, sub, submitting, attempt)
