"""The eval job of a recipe run: which step, the framework's evaluation command, what is sent.

The CLI cannot see Lustre, so a step's completeness comes from the checkpoints the head lists
(jobs.runs.run_checkpoints, the rule export and resume share): a step that is not complete is
refused before anything is submitted. The framework's evaluation arguments are composed and
checked here with the framework's own config code (jobs.recipes.evals); the job itself
(jobs/head/eval_job.py) converts, runs the evaluation and scores it on the cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from components.contract import HF_HOME_ENV, HF_HOME_PATH, RUNS_ROOT
from jobs.client.dashboard import Dashboard
from jobs.client.types import Submission
from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.head import protocol
from jobs.recipes import compose, evals, overrides, reward_placement
from jobs.recipes import prepare as validate
from jobs.recipes.catalogue import NEMO_RL_HOME, RECIPES, Recipe, RunContext
from jobs.runs import address, export, follow, listing, plan, run_checkpoints, state
from jobs.runs.eval_results import EVAL_DIR
from jobs.runs.metadata import RecipeRun, RunMetadata
from jobs.runs.plan import MODEL_PIN, provenance

# Beside the runs, hidden: a folder without a run record is never listed as a run.
BASE_CACHE = ".eval-base"
# vLLM generation and the scoring run beside the framework's own workers; the driver is light.
DRIVER_CPUS = 1.0


class EvalRun(RunMetadata):
    """An eval job of a recipe run: grouped under the run by `run`, never taken for an attempt."""

    kind: str = protocol.EVAL
    attempt: None = None
    recipe: str
    framework: str
    step: str  # "" for the base model
    metric: str
    k: str
    n: str


@dataclass(frozen=True)
class Target:
    """What to evaluate: a step of the run, or the recipe's base model (`step` None); for
    `submit --eval-at-end`, protocol.EVAL_STEP, the step the supervisor puts in at the end."""

    step: int | str | None
    runs_root: str = RUNS_ROOT


def eval_id(run: str, number: int) -> str:
    return f"{run}-eval-{number}"


def next_number(submission_ids: list[str], run: str) -> int:
    """1 + the highest N among the run's eval jobs, their supervisors (`-sK`) and tries (`-aK`)
    included: a supervised eval `RUN-eval-N` exists only as those."""
    pattern = re.compile(rf"^{re.escape(run)}-eval-(?P<n>[0-9]+)(-[as][0-9]+)?$")
    numbers = [int(m["n"]) for s in submission_ids if (m := pattern.match(s))]
    return max(numbers, default=0) + 1


def choose_step(view: dict[str, Any], step: int | None, run: str) -> int:
    """The step to evaluate from the head's checkpoint listing: `step` if it is complete, else
    the newest complete one; a step that is not complete is refused by name."""
    complete: list[int] = sorted(
        int(c["step"]) for c in view.get("checkpoints", []) if c["complete"]
    )
    if step is None:
        if not complete:
            raise UsageError(
                f"run {run} has no complete checkpoint to evaluate in {view.get('dir')}",
                "wait for its first save, or evaluate the base model with --base",
            )
        return complete[-1]
    if step not in complete:
        found = [c for c in view.get("checkpoints", []) if c["step"] == step]
        why = "is not complete (being written, or cut short)" if found else "does not exist"
        listed = ", ".join(map(str, complete)) or "none"
        raise UsageError(
            f"--step {step}: step {step} of run {run} {why}",
            f"complete steps: {listed}",
        )
    return step


@dataclass(frozen=True)
class Command:
    """The framework's evaluation: its argv, the folder it runs in, the held-out file it reads."""

    argv: list[str]
    cwd: str | None
    data_path: str | None


def framework_command(
    recipe: Recipe, recorded: RecipeRun, req: evals.Request, target: Target
) -> Command:
    """The framework's evaluation, composed and checked with the framework's own config code;
    a refusal names the setting."""
    ctx = RunContext(run=recorded.run, nodes=recorded.nodes, gpus_per_node=recorded.gpus_per_node)
    checked = overrides.check(recipe, overrides.parse(list(recorded.overrides)), recorded.run)
    composed = validate.compose_run(recipe, ctx, checked)
    held = evals.held_out(recipe)
    raw = raw_dir(target, recorded.run)
    if recipe.framework == "nemo-rl":
        model = recipe.model if target.step is None else hf_dir(target, recorded.run, target.step)
        items = evals.nemo_rl_args(held, req, model, raw, ctx, composed.config)
        config = evals.nemo_rl_config(held)
        evals.check_nemo_rl(config, items)
        launcher = ["uv", "run", "python", "examples/run_eval.py", "--config"]
        argv = [*launcher, f"examples/configs/evals/{config}", *items]
        return Command(argv, NEMO_RL_HOME, ctx.fill(held.data_path) if held.data_path else None)
    run_args = recipe.args(ctx, checked, composed.adapted)
    ckpt = None if target.step is None else f"{recorded.checkpoint_dir}/global_step_{target.step}"
    items = evals.verl_args(run_args, req, ckpt, raw)
    cfg = evals.check_verl(recipe, items)
    # veRL validates on the run's own data.val_files (a --set of the run's may have moved it).
    return Command([*recipe.launcher, *items], None, str(compose.value(cfg, "data.val_files")))


def run_dir(target: Target, run: str) -> str:
    return f"{target.runs_root}/{run}"


def raw_dir(target: Target, run: str) -> str:
    name = "base" if target.step is None else f"step_{target.step}"
    return f"{run_dir(target, run)}/{EVAL_DIR}/raw/{name}"


def hf_dir(target: Target, run: str, step: int | str) -> str:
    return f"{run_dir(target, run)}/hf/step_{step}"


def job_argv(
    recipe: Recipe,
    recorded: RecipeRun,
    req: evals.Request,
    target: Target,
    command: Command,
) -> list[str]:
    """`python3 -m jobs.head.eval_job ... -- <the framework's evaluation>`."""
    held = evals.held_out(recipe)
    argv = ["python3", "-m", protocol.EVAL_MODULE, "--framework", recipe.framework]
    argv += ["--run", recorded.run, "--checkpoint-dir", recorded.checkpoint_dir]
    if target.step is not None:
        argv += ["--step", str(target.step)]
    if recipe.framework == "nemo-rl":
        backend = export.backend(recipe, recorded)
        argv += [
            "--backend",
            backend,
            "--hf-dir",
            f"{run_dir(target, recorded.run)}/hf/step_{{step}}",
        ]
    argv += ["--raw", raw_dir(target, recorded.run)]
    argv += ["--out-dir", f"{run_dir(target, recorded.run)}/{EVAL_DIR}"]
    if target.step is None:
        # The base model scores the same for every run of it: once per model and data revision.
        argv += ["--cache-dir", f"{target.runs_root}/{BASE_CACHE}"]
    argv += ["--dataset", held.name]
    if command.data_path:
        argv += ["--data-path", command.data_path]
    argv += ["--model", recipe.model, "--pin", f"{run_dir(target, recorded.run)}/{MODEL_PIN}"]
    argv += ["--metric", req.metric, "--k", str(req.k), "--n", str(req.n), "--seed", str(req.seed)]
    if command.cwd:
        argv += ["--cwd", command.cwd]
    return [*argv, "--", *command.argv]


def for_run(
    recipe: Recipe,
    recorded: RecipeRun,
    req: evals.Request,
    target: Target,
    number: int,
    stack: str | None,
    commit: str,
    code_sandbox_url: str | None = None,
) -> Submission:
    """The eval job, sent like a run's attempt: the recipe's env (a code-contests sample is
    judged by the stack's sandbox service, `code_sandbox_url`), its payload as working dir."""
    argv = job_argv(recipe, recorded, req, target, framework_command(recipe, recorded, req, target))
    ctx = RunContext(
        run=recorded.run,
        nodes=recorded.nodes,
        gpus_per_node=recorded.gpus_per_node,
        code_sandbox_url=code_sandbox_url,
    )
    env_vars = {**recipe.env(ctx), HF_HOME_ENV: HF_HOME_PATH}
    runtime_env = plan.shipped_env(env_vars, recipe.payload_dir())
    meta = EvalRun(
        run=recorded.run,
        **provenance(stack, commit),
        recipe=recipe.name,
        framework=recipe.framework,
        checkpoint_dir=recorded.checkpoint_dir,
        step="" if target.step is None else str(target.step),
        metric=req.metric,
        k=str(req.k),
        n=str(req.n),
    )
    return plan.driver_job(eval_id(recorded.run, number), argv, runtime_env, meta, DRIVER_CPUS)


# A failure that is no lost node is tried once more (a transient fault, such as a collective's
# timeout while vLLM loads, costs only the shard it cut); the same end twice is a crash anyway.
EVAL_MAX_RESTARTS = 1


def supervise(dashboard: Dashboard, sub: Submission, gpus: int, where: str) -> str:
    """Hand the eval job to a supervisor of its own, `<eval id>-s1`, which sends it as
    `<eval id>-a1`, `-a2`... (each the same command, so a try after a lost node resumes from the
    shards the cut one kept) under the run supervision's rules (jobs/head/restart_policy.py):
    a preemption waits for the eval's `gpus` and is sent again, never charged to the restarts.
    Its record stays in its own job log (no runs root: nothing is re-armed after a head loss).
    Returns the supervisor's id; two evals of one run racing for the same number collide on
    it, and the second is refused (jobs/runs/handoff.py)."""
    from jobs.runs import handoff  # start-up time: only a submitting eval

    handed = handoff.hand_off(
        dashboard,
        sub,
        max_restarts=EVAL_MAX_RESTARTS,
        gpus=gpus,
        checkpoint_dir="",  # the eval reads a checkpoint; it never saves nor prunes one
        hint_where=where,
        options=handoff.Options(max_preemptions=protocol.DEFAULT_MAX_PREEMPTIONS),
        supervised_as=sub.submission_id,
    )
    return handed.supervisor


def recorded_run(dashboard: Dashboard, run: str, where: str) -> tuple[Recipe, RecipeRun, int]:
    """The run's recipe and its recorded submission (the latest attempt's metadata), and the
    next eval job's number. A step is read only once complete, so a run still training may be
    evaluated (its newest saves as they come)."""
    jobs_ = dashboard.jobs()
    found = state.find(jobs_, run)
    latest = export.latest_attempt(found, run, where)
    recorded = RecipeRun.of_job(latest.metadata)
    if recorded is None or recorded.recipe not in RECIPES:
        kind = listing.metadata_of(latest).kind
        raise UsageError(
            f"run {run} is not a recipe run this version knows (started with "
            f"{commands.started_with(kind)}); eval scores recipe runs on their held-out split",
            f"evaluate a run started with {commands.command('submit', 'RECIPE', where=where)}",
        )
    number = next_number([j.submission_id or "" for j in jobs_], run)
    return RECIPES[recorded.recipe], recorded, number


@dataclass(frozen=True)
class Ask:
    """One `rl-jobs eval` as asked: the run, the step (None: the newest complete) or the base
    model, the evaluation, where results go, and whether unsandboxed judging is accepted."""

    run: str
    step: int | None
    base: bool
    req: evals.Request
    runs_root: str = RUNS_ROOT
    allow_unsandboxed: bool = False
    dry_run: bool = False


@dataclass(frozen=True)
class Prepared:
    """The eval job, the step chosen (None: the base model), notes to show, and the GPUs the
    framework's evaluation takes (the run's nodes x GPUs per node), which its supervisor waits
    for before each try."""

    sub: Submission
    step: int | None
    notes: list[str]
    gpus: int = 0


def prepare(
    dashboard: Dashboard, ask: Ask, where: address.Where, watcher: follow.Watcher
) -> Prepared:
    """The eval job of `ask`, every refusal said before anything is submitted: the run and its
    recipe, its held-out split, where model-written code is judged, the step (complete, as the
    head lists it) and the framework's own composition of the evaluation."""
    flags = "" if where.source == "RAY_ADDRESS" else f" {where.describe()}"
    recipe, recorded, number = recorded_run(dashboard, ask.run, flags)
    evals.held_out(recipe)  # a recipe without one is refused before the head is asked
    # Samples of model-written code are judged where training judged them (the sandbox).
    sandbox = reward_placement.decide(
        recipe, where.outputs(), ask.allow_unsandboxed, where.describe(), dry_run=ask.dry_run
    )
    chosen: int | None = None
    if not ask.base:
        view = run_checkpoints.inventory(
            dashboard, ask.run, recorded.checkpoint_dir, recorded.framework, watcher
        )
        chosen = choose_step(view, ask.step, ask.run)
    sub = for_run(
        recipe,
        recorded,
        ask.req,
        Target(chosen, ask.runs_root),
        number,
        where.stack,
        plan.git_commit(),
        sandbox.url,
    )
    return Prepared(sub, chosen, sandbox.notes, recorded.nodes * recorded.gpus_per_node)
