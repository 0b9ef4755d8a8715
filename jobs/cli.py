"""The typer app behind `python -m jobs`: commands, output (human or --json) and exit codes."""

from __future__ import annotations

import difflib
import json
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from jobs.job_types import JobDetails, JobStatus
from rich.table import Table

from components.contract import RUNS_ROOT, StackOutputs
from jobs import (address, attempts, ckpt_size, export, follow, frameworks, listing, overrides,
                  reward_sandbox, run_events, stack, submission, supervised, validate)
from jobs.cluster import AlreadySubmitted, Cluster
from jobs.console import emit_json as _emit_json
from jobs.console import err as _err
from jobs.console import handled
from jobs.console import out as _out
from jobs.errors import ExitCode, UsageError
from jobs.metadata import RecipeRun
from jobs.recipes import RECIPES, Recipe, RunContext
from jobs.redact import redact

app = typer.Typer(
    name="jobs",
    help="Submit, follow and restart GRPO runs (NeMo RL, veRL) on a Ray cluster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

AddressOpt = Annotated[str | None, typer.Option("--address", help="Ray dashboard URL, e.g. http://127.0.0.1:8265 (else RAY_ADDRESS, else --stack).")]
StackOpt = Annotated[str | None, typer.Option("--stack", help="Pulumi stack: read its outputs and port-forward to its Ray head.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]
FollowOpt = Annotated[bool, typer.Option("--follow", help="Stream logs until the job ends; exit with its result.")]
RestartsOpt = Annotated[int, typer.Option("--max-restarts", min=0, help="Hand the run to a supervisor on the Ray head that resubmits a FAILED attempt up to N times (same checkpoint dir), after waiting for the GPUs; a stopped run, or a crash (failed with every GPU present and no new checkpoint since the previous attempt), is not restarted.")]
# The restart loop inside this process, as before the supervisor (bench/restart_latency.py's
# baseline): JOBS_RESTART_LOOP=cli. It stops when this process stops.
CLI_LOOP_ENV = "JOBS_RESTART_LOOP"
NameOpt = Annotated[str | None, typer.Option("--name", help="Run name (default: <recipe>-<UTC time>); attempts are <name>-a1, -a2, ...")]
UnsandboxedOpt = Annotated[bool, typer.Option(reward_sandbox.ALLOW_FLAG, help="Recipes whose reward runs model-written code: run it inside the trainer pod (rlimits only) when the stack has no code sandbox service.")]


def _spinner(message: str) -> Any:
    return _err().status(message)


@contextmanager
def _cluster(addr: str | None, stack_name: str | None,
             outputs: StackOutputs | None = None) -> Iterator[tuple[Cluster, address.Where]]:
    where = address.choose(addr, stack_name)
    with address.connect(where, outputs, spinner=_spinner) as conn:
        yield Cluster(conn.url), where


def _where_flags(where: address.Where) -> str:
    if where.source == "RAY_ADDRESS":
        return ""
    return f" {where.describe()}"


# --------------------------------------------------------------------------------- recipes


def _recipe(name: str) -> Recipe:
    if name in RECIPES:
        return RECIPES[name]
    close = difflib.get_close_matches(name, list(RECIPES), n=2, cutoff=0.4)
    hint = f"did you mean {' or '.join(close)}?" if close else f"known: {', '.join(RECIPES)}"
    raise UsageError(f"unknown recipe {name!r}", hint)


def _recipe_view(r: Recipe) -> dict[str, Any]:
    return {
        "name": r.name, "framework": r.framework, "framework_version": r.spec.version,
        "image": r.spec.image, "ray_version": r.spec.ray_version, "summary": r.summary,
        "default_nodes": r.default_nodes, "default_gpus_per_node": r.default_gpus_per_node,
        "checkpoint_key": r.checkpoint_key, "defaults": dict(r.defaults),
        "config": r.config_file, "adapts_batch_sizes": r.adapt_batch,
    }


@app.command("recipes")
@handled
def recipes_cmd(as_json: JsonOpt = False) -> None:
    """List recipes with their framework, pinned version and defaults."""
    views = [_recipe_view(r) for r in RECIPES.values()]
    if as_json:
        _emit_json(views)
        return
    table = Table(title="GRPO recipes", show_lines=True)
    for col in ("recipe", "framework", "version / image", "nodes", "defaults"):
        table.add_column(col, overflow="fold")
    for v in views:
        table.add_row(f"{v['name']}\n{v['summary']}", v["framework"],
                      f"{v['framework_version']}\n{v['image']}",
                      f"{v['default_nodes']} x {v['default_gpus_per_node']} GPU",
                      "\n".join(f"{k}={val}" for k, val in v["defaults"].items()))
    _out().print(table)


# ----------------------------------------------------------------------- submit / run driver


def _stop_hint(job_id: str, where: address.Where) -> str:
    return f"python -m jobs stop {job_id}{_where_flags(where)}"


def _watcher(cluster: Cluster, where: address.Where) -> follow.Watcher:
    return follow.Watcher(cluster, _err(),
                          lambda job_id: f"python -m jobs status {job_id}{_where_flags(where)}")


def _supervise(cluster: Cluster, where: address.Where, first: submission.Submission,
               follow_logs: bool, max_restarts: int, as_json: bool, gpus: int,
               checkpoint_dir: str) -> int:
    """Hand the run to its supervisor on the head; with --follow, follow it across attempts."""
    err = _err()
    run, flags = first.run, _where_flags(where)
    sid = supervised.hand_off(cluster, first, max_restarts=max_restarts, gpus=gpus,
                              checkpoint_dir=checkpoint_dir, hint_where=flags)
    err.print(f"run {run} handed to its supervisor {sid} on the Ray head: attempt "
              f"{first.submission_id} next, up to {max_restarts} restart(s), "
              f"{gpus} GPU(s) needed before each attempt", markup=False)
    if not follow_logs:
        if as_json:
            _emit_json({"run": run, "supervisor": sid, "status": "SUPERVISED", "attempts": []})
        else:
            _out().print(run, markup=False)
            err.print(f"follow: python -m jobs logs {run} --follow{flags}\n"
                      f"story:  python -m jobs status {run}{flags}\n"
                      f"stop:   python -m jobs stop {run}{flags}", markup=False)
        return int(ExitCode.OK)
    try:
        done, recs = supervised.follow_run(cluster, run, sid, _watcher(cluster, where), err,
                                           to_stderr=as_json)
    except KeyboardInterrupt:
        err.print(f"detached; the supervisor {sid} keeps driving run {run}, restarts included. "
                  f"Stop it with: python -m jobs stop {run}{flags}", markup=False)
        if as_json:
            _emit_json({"run": run, "supervisor": sid, "status": "DETACHED"})
        return int(ExitCode.OK)
    return _report_run(run, sid, done, recs, as_json)


def _report_run(run: str, sid: str, done: list[tuple[str, JobStatus]],
                recs: list[dict[str, Any]], as_json: bool) -> int:
    final = supervised.final_reason(recs)
    succeeded = final is not None and final.get("event") == run_events.FINISHED
    if as_json:
        _emit_json({"run": run, "supervisor": sid,
                    "status": done[-1][1].value if done else None,
                    "attempts": [{"submission_id": i, "status": s.value} for i, s in done],
                    "outcome": final})
    else:
        summary = ", ".join(f"{i} {s.value}" for i, s in done) or "no attempt"
        why = f"; {final['message']}" if final else ""
        _err().print(f"run {run}: {summary}{why}", markup=False)
    return int(ExitCode.OK if succeeded else ExitCode.JOB_FAILED)


def _drive(cluster: Cluster, where: address.Where, first: submission.Submission, follow_logs: bool,
           max_restarts: int, as_json: bool, first_attempt: int = 1, gpus: int = 0,
           checkpoint_dir: str = "") -> int:
    """Submit `first_attempt`, then watch/restart as asked; returns the exit code.

    With restarts, the run goes to a supervisor on the cluster (survives this process), unless
    JOBS_RESTART_LOOP=cli asks for the in-process loop below."""
    if max_restarts > 0 and os.environ.get(CLI_LOOP_ENV) != "cli":
        return _supervise(cluster, where, first.for_attempt(first_attempt), follow_logs,
                          max_restarts, as_json, gpus, checkpoint_dir)
    err = _err()
    current: dict[str, str] = {}
    watcher = _watcher(cluster, where)

    def submit(attempt: int) -> str:
        sub = first.for_attempt(attempt)
        try:
            job_id = cluster.submit(sub)
        except AlreadySubmitted:
            if attempt == 1:
                raise UsageError(f"run {sub.run!r} already exists on this cluster (its attempt 1 "
                                 "is there)", "pick another --name; a run's name is its "
                                 "checkpoint directory") from None
            if attempt == first_attempt:
                raise UsageError(f"{sub.submission_id} already exists on this cluster",
                                 f"another command resumed run {sub.run} first; follow it with "
                                 f"python -m jobs logs {sub.submission_id} --follow"
                                 f"{_where_flags(where)}") from None
            # Another watcher restarted it already: follow that attempt instead (idempotent).
            job_id = sub.submission_id
        current["id"] = job_id
        err.print(f"submitted {job_id} (run {sub.run}, attempt {attempt})", markup=False)
        return job_id

    if not follow_logs and max_restarts == 0:
        job_id = submit(first_attempt)
        if as_json:
            _emit_json({"run": first.run, "submission_id": job_id, "status": "SUBMITTED",
                        "attempts": [{"submission_id": job_id, "status": "SUBMITTED"}]})
        else:
            _out().print(job_id, markup=False)
            err.print(f"follow: python -m jobs logs {job_id} --follow{_where_flags(where)}\n"
                      f"stop:   {_stop_hint(job_id, where)}", markup=False)
        return int(ExitCode.OK)

    if not follow_logs:
        err.print("--max-restarts keeps this command watching until the run ends", markup=False)

    def watch(job_id: str) -> JobStatus:
        if follow_logs:
            return watcher.follow(job_id, to_stderr=as_json)
        return watcher.wait_for(job_id, follow.terminal, "running")

    def on_restart(failed_id: str, attempt: int) -> None:
        err.print(f"{failed_id} FAILED; restarting as attempt {attempt} from the same "
                  "checkpoint directory", markup=False)

    try:
        outcome = attempts.run(submit, watch, max_restarts, on_restart, first_attempt)
    except KeyboardInterrupt:
        job_id = current.get("id", first.submission_id)
        err.print(f"detached; {job_id} keeps running (restarts stop with this command). "
                  f"Stop it with: {_stop_hint(job_id, where)}", markup=False)
        if as_json:
            _emit_json({"run": first.run, "submission_id": job_id, "status": "DETACHED"})
        return int(ExitCode.OK)

    final = outcome.status
    if as_json:
        _emit_json({"run": first.run, "status": final.value if final else None,
                    "attempts": [{"submission_id": i, "status": s.value}
                                 for i, s in outcome.attempts]})
    else:
        summary = ", ".join(f"{i} {s.value}" for i, s in outcome.attempts)
        err.print(f"run {first.run}: {summary}", markup=False)
    return int(ExitCode.OK if outcome.succeeded else ExitCode.JOB_FAILED)


def _print_dry_run(sub: submission.Submission, as_json: bool, notes: list[str]) -> None:
    view = sub.model_dump()
    if as_json:
        _emit_json(view)
        return
    _out().print_json(json.dumps(view, default=str))
    for note in notes:
        _err().print(note, markup=False)


def _check_framework(recipe: Recipe, running: str | None, source: str) -> None:
    frameworks.check_named(recipe.name, recipe.framework, running, source)


def _check_ray_version(recipe: Recipe, cluster: Cluster, where: address.Where) -> None:
    """With a bare address and no --framework: judge by the Ray version the cluster runs."""
    verdict = frameworks.by_ray_version(recipe.name, recipe.framework, cluster.ray_version(),
                                        where.address or cluster.url)
    if verdict.refuse:
        raise UsageError(verdict.message, verdict.hint)
    _err().print(verdict.message, markup=False)


@app.command("submit")
@handled
def submit_cmd(
    recipe_name: Annotated[str | None, typer.Argument(metavar="RECIPE", help="A recipe from `python -m jobs recipes` (not with --resume).")] = None,
    sets: Annotated[list[str] | None, typer.Option("--set", help="Override key=value (+key=value adds a key the config lacks, ++key=value adds or overrides).")] = None,
    name: NameOpt = None,
    nodes: Annotated[int | None, typer.Option("--nodes", min=1, help="GPU nodes (default: the stack's gpuNodeCount).")] = None,
    gpus_per_node: Annotated[int | None, typer.Option("--gpus-per-node", min=1, help="GPUs per node (default: the stack's gpusPerNode).")] = None,
    framework: Annotated[str | None, typer.Option("--framework", help="With a bare address: the framework the cluster runs, to check the recipe against.")] = None,
    resume: Annotated[str | None, typer.Option("--resume", metavar="RUN", help="Continue a FAILED or STOPPED run: submit its next attempt with the recipe, overrides, size and checkpoint dir recorded in its metadata.")] = None,
    follow_logs: FollowOpt = False,
    max_restarts: RestartsOpt = 0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be submitted; contact nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Submit even when the checkpoints the run keeps would not fit the stack's Lustre.")] = False,
    allow_unsandboxed: UnsandboxedOpt = False,
    as_json: JsonOpt = False,
    addr: AddressOpt = None,
    stack_name: StackOpt = None,
) -> None:
    """Submit a recipe as a run (attempt 1; more with --max-restarts), or --resume a run."""
    if framework is not None and framework not in ("nemo-rl", "verl"):
        raise UsageError(f"--framework {framework!r} is unknown", "use nemo-rl or verl")
    if resume is not None:
        given = [flag for flag, value in (("--set", sets), ("--name", name), ("--nodes", nodes),
                                          ("--gpus-per-node", gpus_per_node),
                                          ("--dry-run", dry_run)) if value]
        if given:
            raise UsageError(f"--resume {resume} cannot be combined with {', '.join(given)}",
                             "a resumed run keeps the recipe, overrides and size recorded in its "
                             "metadata; start a new run (another --name) to change them")
        code = _resume(resume, recipe_name, framework, follow_logs, max_restarts, as_json,
                       addr, stack_name, allow_unsandboxed)
        raise typer.Exit(code)
    if recipe_name is None:
        raise UsageError("no recipe given", "pass a RECIPE (see python -m jobs recipes), "
                         "or --resume RUN to continue a run")
    recipe = _recipe(recipe_name)
    parsed = overrides.parse(sets or [])
    run = submission.check_run_name(name or submission.default_run_name(recipe.name))
    checked = overrides.check(recipe, parsed, run)
    notes: list[str] = []

    def build(node_count: int, gpus: int, stack_label: str | None,
              lustre_gib: int | None = None, source: str = "a dry run",
              wandb: bool = False, sandbox_url: str | None = None) -> submission.Submission:
        # Composed through the framework's config and checked before anything is contacted.
        composed = validate.compose_run(
            recipe, RunContext(run=run, nodes=node_count, gpus_per_node=gpus, wandb=wandb), checked)
        notes.extend(composed.notes)
        fits, message = ckpt_size.check(ckpt_size.footprint(recipe, composed.config), lustre_gib,
                                        source)
        if not fits and not force:
            raise UsageError(f"recipe {recipe.name} would not fit Lustre: {message}",
                             f"keep fewer checkpoints (--set {recipe.keep_key}=N), grow the "
                             "stack's Lustre, or pass --force")
        notes.append(message if fits else f"warning: {message} (submitted with --force)")
        return submission.for_recipe(recipe, run, node_count, gpus, parsed, checked, stack_label,
                                     submission.git_commit(), wandb=wandb,
                                     composed=composed, code_sandbox_url=sandbox_url)

    if dry_run:
        _check_framework(recipe, framework, "--framework")
        if nodes is None:
            notes.append(f"note: {recipe.default_nodes} node(s) is the recipe default; a dry run "
                         "does not read the stack, pass --nodes to set it")
        notes.extend(reward_sandbox.decide(recipe, None, allow_unsandboxed, "a dry run",
                                           dry_run=True).notes)
        sub = build(nodes or recipe.default_nodes, gpus_per_node or recipe.default_gpus_per_node,
                    stack_name)
        _print_dry_run(sub, as_json, notes)
        return

    where = address.choose(addr, stack_name)
    outputs = stack.read(where.stack) if where.stack else None
    _check_framework(recipe, framework, "--framework")
    if outputs is not None:
        _check_framework(recipe, outputs.ray_framework, f"stack {where.stack}")
        _check_stack_nodes(nodes, outputs, where)
        node_count = nodes or outputs.gpu_node_count
        gpus = gpus_per_node or outputs.gpus_per_node
    else:
        node_count = nodes or recipe.default_nodes
        gpus = gpus_per_node or recipe.default_gpus_per_node
    # Built (size, overrides, payload checked) before the port-forward: a refusal costs nothing.
    source = f"stack {where.stack}" if outputs is not None else where.describe().strip()
    sandbox = reward_sandbox.decide(recipe, outputs, allow_unsandboxed, source)
    notes.extend(sandbox.notes)
    sub = build(node_count, gpus, where.stack,
                outputs.lustre_capacity_gib if outputs is not None else None, source,
                wandb=outputs is not None and outputs.wandb_enabled, sandbox_url=sandbox.url)
    for note in notes:
        _err().print(note, markup=False)
    with address.connect(where, outputs, spinner=_spinner) as conn:
        cluster = Cluster(conn.url)
        if outputs is None and framework is None:
            _check_ray_version(recipe, cluster, where)
        code = _drive(cluster, where, sub, follow_logs, max_restarts, as_json,
                      gpus=node_count * gpus, checkpoint_dir=sub.metadata["checkpoint_dir"])
    raise typer.Exit(code)


def _check_stack_nodes(nodes: int | None, outputs: StackOutputs, where: address.Where) -> None:
    stack.require_gpus(where.stack or "", outputs)  # a new attempt: refused on a parked stack
    if nodes is not None and nodes > outputs.gpu_node_count:
        raise UsageError(f"--nodes {nodes} but stack {where.stack} has {outputs.gpu_node_count} "
                         "GPU node(s)", "lower --nodes or grow the stack's GPU pool")


def _resume(run: str, recipe_name: str | None, framework: str | None, follow_logs: bool,
            max_restarts: int, as_json: bool, addr: str | None, stack_name: str | None,
            allow_unsandboxed: bool = False) -> int:
    """Submit the next attempt of `run` exactly as its metadata records it."""
    submission.check_run_name(run)
    where = address.choose(addr, stack_name)
    outputs = stack.read(where.stack) if where.stack else None
    with address.connect(where, outputs, spinner=_spinner) as conn:
        cluster = Cluster(conn.url)
        latest = listing.latest_attempt(cluster, run)
        job_id = latest.submission_id or run
        if not latest.status.is_terminal():
            raise UsageError(f"run {run} is still {latest.status.value} ({job_id})",
                             f"follow it with python -m jobs logs {job_id} --follow"
                             f"{_where_flags(where)}, or stop it first")
        if latest.status == JobStatus.SUCCEEDED:
            raise UsageError(f"run {run} already SUCCEEDED ({job_id}); nothing to resume",
                             "start a new run with another --name")
        kind = listing.metadata_of(latest).kind
        if kind != "recipe":
            raise UsageError(f"run {run} was started with `python -m jobs {kind or 'an unknown tool'}`"
                             "; --resume continues recipe runs", "resubmit the command with `run`")
        recorded = RecipeRun.of_job(latest.metadata)
        if recorded is None:
            raise UsageError(f"{job_id} has unreadable or incomplete metadata, so it cannot be "
                             "resumed", "start a new run with python -m jobs submit RECIPE")
        recipe = _recipe(recorded.recipe)
        if recipe_name is not None and recipe_name != recipe.name:
            raise UsageError(f"run {run} is a {recipe.name} run, not {recipe_name}",
                             f"drop RECIPE or pass {recipe.name}")
        items, node_count, gpus = recorded.overrides, recorded.nodes, recorded.gpus_per_node
        attempt = recorded.attempt
        parsed = overrides.parse([str(i) for i in items])
        checked = overrides.check(recipe, parsed, run)
        _check_framework(recipe, framework, "--framework")
        if outputs is not None:
            _check_framework(recipe, outputs.ray_framework, f"stack {where.stack}")
            _check_stack_nodes(node_count, outputs, where)
        elif framework is None:
            _check_ray_version(recipe, cluster, where)
        sandbox = reward_sandbox.decide(
            recipe, outputs, allow_unsandboxed,
            f"stack {where.stack}" if outputs is not None else where.describe().strip())
        for note in sandbox.notes:
            _err().print(note, markup=False)
        sub = submission.for_recipe(recipe, run, node_count, gpus, parsed, checked, where.stack,
                                    submission.git_commit(),
                                    wandb=outputs is not None and outputs.wandb_enabled,
                                    code_sandbox_url=sandbox.url)
        recorded_dir = recorded.checkpoint_dir
        if sub.metadata["checkpoint_dir"] != recorded_dir:
            raise UsageError(f"run {run} checkpointed to {recorded_dir} but this version of "
                             f"recipe {recipe.name} would use {sub.metadata['checkpoint_dir']}",
                             "resume with the rl-on-gke commit in its jobs_commit metadata")
        _err().print(f"resuming run {run} after {job_id} {latest.status.value}, from "
                     f"{recorded_dir}", markup=False)
        return _drive(cluster, where, sub, follow_logs, max_restarts, as_json,
                      first_attempt=attempt + 1, gpus=node_count * gpus,
                      checkpoint_dir=recorded_dir)


@app.command("run", context_settings={"allow_interspersed_args": False})
@handled
def run_cmd(
    command: Annotated[list[str], typer.Argument(metavar="-- COMMAND ...", help="The command to run on the cluster.")],
    working_dir: Annotated[Path | None, typer.Option("--working-dir", help="Upload this directory (checked against Ray's 100 MiB cap first).")] = None,
    name: NameOpt = None,
    follow_logs: FollowOpt = False,
    max_restarts: RestartsOpt = 0,
    gpus: Annotated[int, typer.Option("--gpus", min=0, help="GPUs the cluster must report before an attempt is (re)submitted; the supervisor waits for them (needs --max-restarts).")] = 0,
    checkpoint_dir: Annotated[str, typer.Option("--checkpoint-dir", help=f"Where the command checkpoints, as seen on the Ray head (e.g. {RUNS_ROOT}/RUN/checkpoints): a new entry there since the previous attempt tells a crash from progress.")] = "",
    as_json: JsonOpt = False,
    addr: AddressOpt = None,
    stack_name: StackOpt = None,
) -> None:
    """Run any command on the cluster, e.g. `python -m jobs run --stack dev -- nvidia-smi`."""
    if gpus and not max_restarts:
        raise UsageError(f"--gpus {gpus} needs --max-restarts 1 or more",
                         "the supervisor that waits for GPUs drives restarts; without restarts "
                         "the attempt is submitted at once")
    if checkpoint_dir and not checkpoint_dir.startswith("/"):
        raise UsageError(f"--checkpoint-dir {checkpoint_dir!r} is not an absolute path",
                         f"give the directory as the Ray head sees it, e.g. {RUNS_ROOT}/RUN/checkpoints")
    run = submission.check_run_name(name or submission.default_run_name("run"))
    # Built (and the working dir measured) before contacting anything: an oversize dir is
    # refused without a port-forward or an upload.
    sub = submission.for_command(list(command), run, working_dir, stack_name,
                                 submission.git_commit())
    with _cluster(addr, stack_name) as (cluster, where):
        code = _drive(cluster, where, sub, follow_logs, max_restarts, as_json, gpus=gpus,
                      checkpoint_dir=checkpoint_dir)
    raise typer.Exit(code)


@app.command("export")
@handled
def export_cmd(
    run: Annotated[str, typer.Argument(metavar="RUN", help="A recipe run (its name, as `list` shows it).")],
    step: Annotated[int | None, typer.Option("--step", min=1, help="Export this step (default: the newest complete checkpoint).")] = None,
    out: Annotated[str | None, typer.Option("--out", help="Output folder inside the run's directory; {step} is filled in (default: <run dir>/hf/step_{step}).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Read the run from the cluster and print the export job; submit nothing.")] = False,
    follow_logs: FollowOpt = False,
    as_json: JsonOpt = False,
    addr: AddressOpt = None,
    stack_name: StackOpt = None,
) -> None:
    """Convert a finished, failed or stopped run's checkpoint to Hugging Face format on Lustre,
    with the framework's own converter, as a Ray job (<run>-export-N)."""
    submission.check_run_name(run)
    out_template = export.check_out(run, out)
    where = address.choose(addr, stack_name)
    outputs = stack.read(where.stack) if where.stack else None
    with address.connect(where, outputs, spinner=_spinner) as conn:
        cluster = Cluster(conn.url)
        latest = listing.latest_attempt(cluster, run)
        job_id = latest.submission_id or run
        kind = listing.metadata_of(latest).kind
        if kind != "recipe":
            raise UsageError(f"run {run} was started with `python -m jobs "
                             f"{kind or 'an unknown tool'}`, not from a recipe; export converts "
                             "recipe runs' checkpoints", "export a run started with "
                             "python -m jobs submit RECIPE")
        if not latest.status.is_terminal():
            raise UsageError(f"run {run} is {latest.status.value} ({job_id}): the checkpoint it "
                             "is writing may be half-written",
                             f"wait until it ends, or stop it first with python -m jobs stop "
                             f"{run}{_where_flags(where)}")
        recorded = RecipeRun.of_job(latest.metadata)
        if recorded is None or recorded.recipe not in RECIPES:
            raise UsageError(f"{job_id} has unreadable or incomplete metadata (or a recipe this "
                             "version does not know), so its checkpoint cannot be found",
                             "export with the rl-on-gke commit in its jobs_commit metadata")
        recipe = RECIPES[recorded.recipe]
        number = export.next_number([j.submission_id or "" for j in cluster.jobs()], run)
        sub = export.for_run(recipe, recorded, export.backend(recipe, recorded), out_template,
                             step, number, where.stack, submission.git_commit())
        if dry_run:
            _print_dry_run(sub, as_json, [])
            return
        try:
            job_id = cluster.submit(sub)
        except AlreadySubmitted:
            raise UsageError(f"{sub.submission_id} already exists on this cluster",
                             "another export of this run started at the same time; list them "
                             f"with python -m jobs list{_where_flags(where)}") from None
        _err().print(f"submitted {job_id} (export of run {run}, {recipe.framework} "
                     f"{sub.metadata['backend']}, to {out_template})", markup=False)
        if not follow_logs:
            if as_json:
                _emit_json({"run": run, "submission_id": job_id, "status": "SUBMITTED",
                            "out": out_template})
            else:
                _out().print(job_id, markup=False)
                _err().print(f"follow: python -m jobs logs {job_id} --follow"
                             f"{_where_flags(where)}", markup=False)
            return
        try:
            status = _watcher(cluster, where).follow(job_id, to_stderr=as_json)
        except KeyboardInterrupt:
            _err().print(f"detached; {job_id} keeps running. Stop it with: "
                         f"{_stop_hint(job_id, where)}", markup=False)
            raise typer.Exit(int(ExitCode.OK)) from None
    if as_json:
        _emit_json({"run": run, "submission_id": job_id, "status": status.value,
                    "out": out_template})
    raise typer.Exit(int(ExitCode.OK if status == JobStatus.SUCCEEDED else ExitCode.JOB_FAILED))


# ------------------------------------------------------------------------ inspect and stop

IdArg = Annotated[str, typer.Argument(metavar="ID", help="A submission id, or a run name (its latest attempt).")]


@app.command("status")
@handled
def status_cmd(ident: IdArg, as_json: JsonOpt = False, addr: AddressOpt = None,
               stack_name: StackOpt = None) -> None:
    """Show one job's status (exit 0 whatever the status: this reports, it does not judge)."""
    with _cluster(addr, stack_name) as (cluster, _where):
        sups, recs = supervised.story(cluster, ident)
        if sups:
            view = _supervised_view(cluster, ident, sups, recs)
        else:
            view = listing.describe(listing.find(cluster, ident))
    if as_json:
        _emit_json(view)
        return
    out = _out()
    for key in ("submission_id", "run", "attempt", "status", "recipe", "stack", "git_commit",
                "entrypoint", "message", "driver_exit_code"):
        if view.get(key) not in ("", None):
            out.print(f"{key:>16}: {view[key]}", markup=False)
    if "supervisor" in view:
        sup = view["supervisor"]
        out.print(f"{'supervisor':>16}: {sup['submission_id']} {sup['status']}", markup=False)
        if view["outcome"]:
            out.print(f"{'outcome':>16}: {view['outcome']['message']}", markup=False)
        out.print(f"{'history':>16}:", markup=False)
        supervised.print_story(lambda text: out.print(f"  {text}", markup=False),
                               view["history"])


def _supervised_view(cluster: Cluster, run: str, sups: list[JobDetails],
                     recs: list[dict[str, Any]]) -> dict[str, Any]:
    """A supervised run: its latest attempt, its supervisor and every decision recorded."""
    try:
        view = listing.describe(listing.latest_attempt(cluster, run))
    except UsageError:  # armed, but waiting for GPUs before attempt 1
        view = {"run": run, "submission_id": None, "attempt": None,
                "status": "WAITING" if supervised.live(sups) else sups[-1].status.value}
    latest = sups[-1]
    view["supervisor"] = {"submission_id": latest.submission_id, "status": latest.status.value}
    view["outcome"] = supervised.final_reason(recs)
    view["history"] = recs
    return view


@app.command("logs")
@handled
def logs_cmd(ident: IdArg, follow_logs: FollowOpt = False, addr: AddressOpt = None,
             stack_name: StackOpt = None) -> None:
    """Print a job's logs; with --follow, stream them until it ends (^C detaches)."""
    with _cluster(addr, stack_name) as (cluster, where):
        sups, recs = supervised.story(cluster, ident)
        if sups:
            _supervised_logs(cluster, where, ident, sups, recs, follow_logs)
        job_id = listing.find(cluster, ident).submission_id or ident
        if not follow_logs:
            sys.stdout.write(redact(cluster.logs(job_id)))
            return
        try:
            status = _watcher(cluster, where).follow(job_id)
        except KeyboardInterrupt:
            _err().print(f"detached; {job_id} keeps running. Stop it with: "
                         f"{_stop_hint(job_id, where)}", markup=False)
            raise typer.Exit(int(ExitCode.OK)) from None
    raise typer.Exit(int(ExitCode.OK if status == JobStatus.SUCCEEDED else ExitCode.JOB_FAILED))


def _supervised_logs(cluster: Cluster, where: address.Where, run: str, sups: list[JobDetails],
                     recs: list[dict[str, Any]], follow_logs: bool) -> None:
    """A supervised run's logs: the supervisor's decisions, then the latest attempt's log; with
    --follow, every attempt in turn and the decisions as they come (stderr)."""
    if not follow_logs:
        for rec in recs:
            sys.stdout.write(redact(f"[supervisor] {run_events.human(rec)}\n"))
        try:
            job_id = listing.latest_attempt(cluster, run).submission_id or run
        except UsageError:
            raise typer.Exit(int(ExitCode.OK)) from None
        sys.stdout.write(redact(cluster.logs(job_id)))
        raise typer.Exit(int(ExitCode.OK))
    sid = sups[-1].submission_id or ""
    try:
        done, recs = supervised.follow_run(cluster, run, sid, _watcher(cluster, where), _err(),
                                           to_stderr=False)
    except KeyboardInterrupt:
        _err().print(f"detached; the supervisor {sid} keeps driving run {run}. Stop it with: "
                     f"python -m jobs stop {run}{_where_flags(where)}", markup=False)
        raise typer.Exit(int(ExitCode.OK)) from None
    raise typer.Exit(_report_run(run, sid, done, recs, as_json=False))


@app.command("stop")
@handled
def stop_cmd(ident: IdArg, as_json: JsonOpt = False, addr: AddressOpt = None,
             stack_name: StackOpt = None) -> None:
    """Stop a job (or a run: its supervisor, then its current attempt). A stopped job is never
    restarted."""
    with _cluster(addr, stack_name) as (cluster, where):
        if supervised.is_run_with_supervisor(cluster, ident):
            stopped = supervised.stop_run(cluster, ident, _watcher(cluster, where))
            if as_json:
                _emit_json({"run": ident, "stopped": [{"submission_id": i, "status": s.value}
                                                      for i, s in stopped]})
            else:
                for i, s in stopped:
                    _out().print(f"{i} {s.value}", markup=False)
                if not stopped:
                    _out().print(f"run {ident}: nothing was running", markup=False)
            return
        job = listing.find(cluster, ident)
        job_id = job.submission_id or ident
        if not job.status.is_terminal():
            cluster.stop(job_id)
            # Ray sends SIGTERM, then SIGKILL after RAY_JOB_STOP_WAIT_TIME_S (3 s default, §4.4).
            status = _watcher(cluster, where).wait_for(job_id, follow.terminal, "stopping")
        else:
            status = job.status
    if as_json:
        _emit_json({"submission_id": job_id, "status": status.value})
    else:
        _out().print(f"{job_id} {status.value}", markup=False)


@app.command("list")
@handled
def list_cmd(as_json: JsonOpt = False, addr: AddressOpt = None, stack_name: StackOpt = None) -> None:
    """List runs with their attempts, newest first."""
    with _cluster(addr, stack_name) as (cluster, _where):
        runs = listing.group(cluster.jobs())
        supervised.annotate(cluster, runs)
    if as_json:
        _emit_json(runs)
        return
    table = Table(title="Ray jobs by run")
    for col in ("run", "attempt", "submission id", "status", "recipe", "supervisor"):
        # Ids are copied into other commands: never wrap them.
        table.add_column(col, no_wrap=col in ("run", "submission id"), overflow="fold")
    for r in runs:
        sup = r.get("supervisor")
        note = ""
        if sup:
            last = sup.get("last_event")
            note = f"{sup['submission_id']} {sup['status']}" + (
                f": {last['message']}" if last else "")
        rows = r["attempts"] or [{"attempt": None, "submission_id": "", "status": r["status"],
                                  "recipe": r["recipe"]}]
        for i, a in enumerate(rows):
            table.add_row(r["run"] if i == 0 else "", str(a["attempt"] or "-"),
                          a["submission_id"] or "", a["status"], a["recipe"],
                          note if i == 0 else "")
    _out().print(table)


from jobs.data.cli import data_app  # noqa: E402  (after the commands above, as one sub-app)

app.add_typer(data_app, name="data")


def main() -> None:
    """Run the app as a program: SIGTERM, SIGHUP (terminal closed) and SIGQUIT unwind the stack,
    so `finally` blocks run and port-forwards are closed; by default they would kill the
    process on the spot and leave kubectl running."""

    def _on_signal(sig: int, _frame: object) -> None:
        raise SystemExit(128 + sig)

    for name in ("SIGTERM", "SIGHUP", "SIGQUIT"):
        if hasattr(signal, name):  # SIGHUP and SIGQUIT do not exist on Windows
            signal.signal(getattr(signal, name), _on_signal)
    app()
