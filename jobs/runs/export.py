"""The export job of a recipe run: which converter backend, where the output goes, what is sent.

The checkpoint itself is chosen on the cluster (`jobs.head.checkpoints`, run by the payload in
`jobs/payloads/export/`): the CLI's machine cannot see Lustre. What the CLI decides is the
backend, from the run's recorded recipe and overrides composed as at submit time (a Megatron
policy needs NeMo RL's Megatron converter, a DTensor one its DCP converter), and the output path,
which stays inside the run's own directory.
"""

from __future__ import annotations

import re

from components.contract import HF_HOME_ENV, HF_HOME_PATH, RUNS_ROOT
from jobs.client.dashboard import AlreadySubmitted, Dashboard
from jobs.client.types import JobDetails, Submission
from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.head import protocol
from jobs.recipes import compose, overrides
from jobs.recipes.catalogue import PAYLOADS, RECIPES, Recipe, RunContext
from jobs.runs import listing, plan, state
from jobs.runs.eval_results import EVAL_DIR
from jobs.runs.metadata import ExportRun, RecipeRun
from jobs.runs.plan import provenance

PAYLOAD = PAYLOADS / "export"
SCRIPT = "export_checkpoint.py"
# The head runs no driver that reserves a CPU (rayStartParams num-cpus 0), so this puts the
# conversion on a worker, which has the host memory a whole model needs: both NeMo RL
# converters load it on the CPU (native_checkpoint.py, community_import.py @v0.4.0).
DRIVER_CPUS = 1.0


def default_out(run: str) -> str:
    return f"{RUNS_ROOT}/{run}/hf/step_{{step}}"


def check_out(run: str, out: str | None) -> str:
    """`--out` normalised and kept inside the run's directory; the default when not given."""
    if out is None:
        return default_out(run)
    return overrides.output_path(run, f"--out {out}", out)


def backend(recipe: Recipe, recorded: RecipeRun) -> str:
    """The converter backend for the run, from its config composed as it was submitted."""
    ctx = RunContext(run=recorded.run, nodes=recorded.nodes, gpus_per_node=recorded.gpus_per_node)
    parsed = overrides.parse(list(recorded.overrides))
    checked = overrides.check(recipe, parsed, recorded.run)
    cfg = compose.apply(recipe.framework, recipe.config_file, recipe.args(ctx, checked))
    if recipe.framework == "nemo-rl":
        # nemo_rl/models/policy/lm_policy.py L83 (v0.4.0) picks the Megatron worker on this flag.
        return "megatron" if compose.value(cfg, "policy.megatron_cfg.enabled") else "dcp"
    # veRL's actor strategy is fsdp, fsdp2 or megatron; the model merger has fsdp and megatron
    # backends, fsdp reading the model_world_size_W_rank_R.pt shards veRL's FSDP checkpoint
    # manager writes for either FSDP version (verl/model_merger/fsdp_model_merger.py, 0.6.0).
    strategy = str(compose.value(cfg, "actor_rollout_ref.actor.strategy"))
    return "megatron" if strategy == "megatron" else "fsdp"


def export_id(run: str, number: int) -> str:
    return f"{run}-export-{number}"


def next_number(submission_ids: list[str], run: str) -> int:
    """One more than the highest `<run>-export-N` among `submission_ids` (1 for the first)."""
    pattern = re.compile(rf"^{re.escape(run)}-export-(?P<n>[0-9]+)$")
    numbers = [int(m["n"]) for s in submission_ids if (m := pattern.match(s))]
    return max(numbers, default=0) + 1


def for_run(
    recipe: Recipe,
    recorded: RecipeRun,
    backend_name: str,
    out: str,
    step: int | None,
    number: int,
    stack: str | None,
    commit: str,
    best: bool = False,
) -> Submission:
    """The export job: the payload with the `jobs` package, run on a worker; `best`: the step
    with the highest held-out score (`rl-jobs eval`), chosen on the cluster."""
    argv = [
        "python3",
        SCRIPT,
        "--framework",
        recipe.framework,
        "--backend",
        backend_name,
        "--checkpoint-dir",
        recorded.checkpoint_dir,
        "--out",
        out,
    ]
    if step is not None:
        argv += ["--step", str(step)]
    if best:
        argv += ["--best-from", f"{RUNS_ROOT}/{recorded.run}/{EVAL_DIR}"]
    # The converters read the model's config (and NeMo RL's DCP one its tokenizer) by name
    # from the shared model cache, offline: the run staged that commit (jobs/staging), and
    # an online read could move the cache's refs/main to a commit no run staged. Tokens
    # come from the pod's Secret, never from here.
    runtime_env = plan.shipped_env({HF_HOME_ENV: HF_HOME_PATH, "HF_HUB_OFFLINE": "1"}, PAYLOAD)
    meta = ExportRun(
        run=recorded.run,
        **provenance(stack, commit),
        recipe=recipe.name,
        framework=recipe.framework,
        backend=backend_name,
        checkpoint_dir=recorded.checkpoint_dir,
        out=out,
        step="best" if best else "" if step is None else str(step),
    )
    return plan.driver_job(export_id(recorded.run, number), argv, runtime_env, meta, DRIVER_CPUS)


def latest_attempt(found: state.Run | None, run: str, where: str) -> JobDetails:
    """The run's latest attempt; a run that never sent one (stopped or dead while it waited for
    GPUs) exists, as `list` and `status` show it, but has nothing to export."""
    if found is None:
        raise UsageError(
            f"no run named {run!r} on this cluster",
            f"list runs with `{commands.command('list', where=where)}` (a run name has no -aN "
            "suffix)",
        )
    if found.latest is None:
        raise UsageError(
            f"run {run} never started an attempt ({found.status}): nothing was trained, so it "
            "has no checkpoint to export",
            f"see its story with {commands.command('status', run, where=where)}",
        )
    return found.latest


def prepare(
    dashboard: Dashboard,
    run: str,
    step: int | None,
    out_template: str,
    stack: str | None,
    where: str,
    best: bool = False,
) -> tuple[Submission, Recipe]:
    """The export job of `run`, once its latest attempt is known to have ended: a checkpoint
    still being written may be half-written."""
    jobs_ = dashboard.jobs()
    latest = latest_attempt(state.find(jobs_, run), run, where)
    job_id = latest.submission_id or run
    kind = listing.metadata_of(latest).kind
    if kind != protocol.RECIPE:
        raise UsageError(
            f"run {run} was started with {commands.started_with(kind)}"
            ", not from a recipe; export converts recipe runs' checkpoints",
            f"export a run started with {commands.command('submit', 'RECIPE', where=where)}",
        )
    if not latest.status.is_terminal():
        raise UsageError(
            f"run {run} is {latest.status.value} ({job_id}): the checkpoint it "
            "is writing may be half-written",
            f"wait until it ends, or stop it first with "
            f"{commands.command('stop', run, where=where)}",
        )
    recorded = RecipeRun.of_job(latest.metadata)
    if recorded is None or recorded.recipe not in RECIPES:
        raise UsageError(
            f"{job_id} has unreadable or incomplete metadata (or a recipe this "
            "version does not know), so its checkpoint cannot be found",
            "export with the rl-on-gke commit in its jobs_commit metadata",
        )
    recipe = RECIPES[recorded.recipe]
    number = next_number([j.submission_id or "" for j in jobs_], run)
    sub = for_run(
        recipe,
        recorded,
        backend(recipe, recorded),
        out_template,
        step,
        number,
        stack,
        plan.git_commit(),
        best,
    )
    return sub, recipe


def submit(dashboard: Dashboard, sub: Submission, where: str) -> str:
    """Send the export job; two exports of one run racing for the same number collide."""
    try:
        return dashboard.submit(sub)
    except AlreadySubmitted:
        raise UsageError(
            f"{sub.submission_id} already exists on this cluster",
            "another export of this run started at the same time; list them "
            f"with {commands.command('list', where=where)}",
        ) from None
