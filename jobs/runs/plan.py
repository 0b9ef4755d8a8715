"""What one attempt sends to Ray: submission id, entrypoint, runtime_env and metadata."""

from __future__ import annotations

import re
import secrets
import shlex
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import jobs

# re-exported (`as`): the CLI reaches the client only through the runs library
from jobs.client.types import Submission as Submission
from jobs.common.errors import UsageError
from jobs.common.redact import command_secret

# COMMAND re-exported (`as`): the CLI tells a command run by its kind through this module
from jobs.head.protocol import COMMAND as COMMAND
from jobs.head.protocol import attempt_id
from jobs.recipes.overrides import TOKEN_HINT
from jobs.runs import workdir
from jobs.runs.metadata import SUBMITTED_BY, RecipeRun, RunMetadata
from jobs.runs.metadata import Reserve as Reserve

if TYPE_CHECKING:
    from jobs.recipes import prepare as validate
    from jobs.recipes.catalogue import Recipe
    from jobs.recipes.overrides import Override

# Run names become a Lustre directory and a Ray submission id: keep them to safe characters.
_TAG_LETTERS = "abcdefghijkmnpqrstuvwxyz"  # no l or o: not mistaken for 1 or 0
_RUN_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


def for_attempt(sub: Submission, attempt: int) -> Submission:
    """The same run (same entrypoint, so the same checkpoint directory) as attempt N."""
    meta = {**sub.metadata, "attempt": str(attempt)}
    return sub.model_copy(update={"submission_id": attempt_id(sub.run, attempt), "metadata": meta})


def default_run_name(prefix: str, now: datetime | None = None, tag: str | None = None) -> str:
    """`<prefix>-YYYYMMDD-HHMMSS-mmmxx` in UTC: readable, sorts by time to the millisecond, and
    two random letters so runs started in the same millisecond (a shell loop, a sweep, two
    users) still differ; a name is its checkpoint directory, so it must never repeat."""
    now = now or datetime.now(UTC)
    tag = tag if tag is not None else "".join(secrets.choice(_TAG_LETTERS) for _ in range(2))
    return f"{prefix}-{now:%Y%m%d-%H%M%S}-{now.microsecond // 1000:03d}{tag}"


def check_run_name(name: str) -> str:
    if not _RUN_NAME.match(name):
        raise UsageError(
            f"run name {name!r} is not allowed",
            "use lowercase letters, digits, '.', '_' or '-' (at most 63)",
        )
    return name


# This checkout of rl-on-gke (jobs/ lives at its top level).
JOBS_PACKAGE = Path(jobs.__file__).resolve().parent
JOBS_REPO = JOBS_PACKAGE.parent


def shipped_env(env_vars: dict[str, str], payload: Path | None = None) -> dict[str, object]:
    """A job's runtime_env: `env_vars`, the `payload` directory (checked) as its working dir
    when there is one, and this package (checked) as py_modules, importable as `jobs` on the
    cluster."""
    runtime_env: dict[str, object] = {"env_vars": env_vars}
    if payload is not None:
        workdir.check(payload)
        runtime_env.update(workdir.runtime_env(payload))
    workdir.check(JOBS_PACKAGE)
    runtime_env["py_modules"] = [str(JOBS_PACKAGE)]
    return runtime_env


def driver_job(
    submission_id: str,
    argv: list[str],
    runtime_env: dict[str, object],
    meta: RunMetadata,
    cpus: float,
) -> Submission:
    """A job whose driver runs `argv` itself, reserving `cpus` (entrypoint_num_cpus) so that it
    lands on a worker: the eval and export jobs."""
    return Submission(
        submission_id=submission_id,
        entrypoint=shlex.join(argv),
        runtime_env=runtime_env,
        metadata=meta.to_ray(),
        entrypoint_num_cpus=cpus,
    )


def git_commit(cwd: Path | None = None) -> str:
    """The commit of the git tree at `cwd` (default: the caller's working directory, i.e. the
    user's own code), `-dirty` when it has changes, or "unknown" outside a git tree."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{sha}-dirty" if dirty else sha


def jobs_commit() -> str:
    """The rl-on-gke commit whose recipes rendered the job (may differ from the caller's)."""
    return git_commit(JOBS_REPO)


class Provenance(TypedDict):
    """Where a submitted job comes from, as every job's metadata records it: the stack, the
    caller's commit, the rl-on-gke commit that rendered it, and the tool that submitted it."""

    stack: str
    git_commit: str
    jobs_commit: str
    submitted_by: str


def provenance(stack: str | None, commit: str) -> Provenance:
    """The job's `Provenance` on `stack` ("" for a bare address), from the caller's `commit`."""
    return Provenance(
        stack=stack or "",
        git_commit=commit,
        jobs_commit=jobs_commit(),
        submitted_by=SUBMITTED_BY,
    )


def for_recipe(
    recipe: Recipe,
    run: str,
    nodes: int,
    gpus_per_node: int,
    overrides: list[Override],
    checked: dict[str, tuple[str, str]],
    stack: str | None,
    commit: str,
    wandb: bool = False,
    composed: validate.Composed | None = None,
    code_sandbox_url: str | None = None,
) -> Submission:
    """The attempt-1 submission; `composed` is `validate.compose_run`'s result for this size
    (composed here when not given), so what is sent is what the framework was checked with."""
    # Lazy, for start-up time: a `run -- COMMAND` or a `list` never composes a recipe.
    from jobs.recipes import compose
    from jobs.recipes import prepare as validate
    from jobs.recipes.catalogue import RunContext

    ctx = RunContext(
        run=run,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        wandb=wandb,
        code_sandbox_url=code_sandbox_url,
    )
    if composed is None:
        composed = validate.compose_run(recipe, ctx, checked)
    # The first step (jobs.staging.ensure) and payloads (e.g. jobs.data.gsm8k, the same
    # conversion as `rl-jobs data`) import shared code: shipped_env ships this package.
    runtime_env = shipped_env(recipe.env(ctx), recipe.payload_dir())
    checkpoint_dir = ctx.fill(recipe.defaults.get(recipe.checkpoint_key, ""))
    if recipe.checkpoint_key in checked:
        checkpoint_dir = checked[recipe.checkpoint_key][1]
    meta = RecipeRun(
        run=run,
        attempt=1,
        **provenance(stack, commit),
        recipe=recipe.name,
        framework=recipe.framework,
        framework_version=recipe.spec.version,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        checkpoint_dir=checkpoint_dir,
        overrides=[str(o) for o in overrides],
    )
    model = recipe.settings(ctx, checked, composed.adapted)[recipe.model_key]
    megatron = recipe.framework == "nemo-rl" and bool(
        compose.value(composed.config, "policy.megatron_cfg.enabled")
    )
    entrypoint = " && ".join(
        [
            staging_step(model, megatron, recipe.hub_datasets, f"{ctx.run_dir}/{MODEL_PIN}"),
            recipe.render(ctx, checked, composed.adapted),
        ]
    )
    return Submission(
        submission_id=attempt_id(run, 1),
        entrypoint=entrypoint,
        runtime_env=runtime_env,
        metadata=meta.to_ray(),
    )


# In the run's directory: the model commit its first attempt loaded (jobs.staging.ensure --pin).
MODEL_PIN = "staged-model.json"


def staging_step(
    model: str, megatron: bool, datasets: tuple[str, ...], pin: str | None = None
) -> str:
    """Every attempt's first step: the model and datasets staged, a partial conversion gone, the
    commit the run started on pinned (a restage during the run is refused, not loaded)."""
    argv = ["python3", "-m", "jobs.staging.ensure", "--model", model]
    if pin:
        argv += ["--pin", pin]
    for spec in datasets:
        argv += ["--dataset", spec]
    return shlex.join([*argv, "--megatron"] if megatron else argv)


def parse_resources(items: list[str]) -> dict[str, float] | None:
    """`NAME=AMOUNT` items (`--resource`) as Ray's entrypoint_resources."""
    found: dict[str, float] = {}
    for item in items:
        name, sep, amount = item.partition("=")
        try:
            value = float(amount) if sep and name.strip() else -1.0
        except ValueError:
            value = -1.0
        if value <= 0:
            raise UsageError(
                f"--resource {item!r} is not NAME=AMOUNT with a positive amount",
                "e.g. --resource accel_slot=1 (a custom resource the nodes declare)",
            )
        if name.strip() in ("CPU", "GPU"):
            # Ray refuses these as custom resources (ray/_common/ray_option_utils.py L122-125,
            # Ray 2.60): they have their own fields.
            raise UsageError(
                f"--resource {item!r}: {name.strip()} has its own option",
                "use --cpus N or --gpus N",
            )
        found[name.strip()] = value
    return found or None


def for_command(
    command: list[str],
    run: str,
    working_dir: Path | None,
    stack: str | None,
    commit: str,
    reserve: Reserve | None = None,
    checkpoint_dir: str = "",
) -> Submission:
    """The attempt-1 submission of a command; `commit` is the caller's code, replaced by the
    working directory's own commit when one is uploaded; `checkpoint_dir` (`--checkpoint-dir`)
    is recorded so a resume knows where the run saves."""
    if not command:
        raise UsageError("no command given", "write the command after --, e.g. -- nvidia-smi")
    # The command becomes the job's entrypoint, which Ray stores in the job record, shows on
    # the dashboard and prints in the driver log: a token in it leaks to all of them.
    secret = command_secret(command)
    if secret is not None:
        raise UsageError(
            f"the command holds {secret}, refused (the value is not shown)", TOKEN_HINT
        )
    runtime_env: dict[str, object] = {}
    if working_dir is not None:
        workdir.check(working_dir)
        runtime_env.update(workdir.runtime_env(working_dir))
        # The code that runs is the uploaded directory's: record its repository's commit
        # (or "unknown"), not that of wherever this command was started.
        commit = git_commit(working_dir.resolve())
    reserve = reserve or Reserve()
    return Submission(
        submission_id=attempt_id(run, 1),
        entrypoint=shlex.join(command),
        runtime_env=runtime_env,
        entrypoint_num_cpus=reserve.cpus,
        entrypoint_num_gpus=reserve.gpus or None,
        entrypoint_resources=reserve.resources,
        metadata=RunMetadata(
            run=run,
            attempt=1,
            kind=COMMAND,
            **provenance(stack, commit),
            checkpoint_dir=checkpoint_dir,
            reserve=reserve.to_json(),
        ).to_ray(),
    )
