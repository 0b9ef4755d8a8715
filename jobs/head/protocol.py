"""What the CLI and the supervisor on the Ray head agree on: job kinds, ids, the hand-off spec, settings.

Both sides import this module (the CLI to hand a run over, the supervisor to read it), so a renamed
key fails in the tests on a laptop, not on the head at run time. Standard library only: it is
shipped to the head with the rest of `jobs.head`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Final, Literal

# Every Ray job this tool submits records one of these as its metadata `kind`; each name below is
# Final, so its type is its own literal (a `RecipeRun.kind` takes RECIPE, not any Kind).
Kind = Literal["recipe", "command", "export", "supervisor", "stage", "stop", "checkpoints", "eval"]
RECIPE: Final = "recipe"
COMMAND: Final = "command"
EXPORT: Final = "export"
SUPERVISOR: Final = "supervisor"
STAGE: Final = "stage"
# `rl-jobs stop RUN` recording the stop in the run's record (jobs/head/stop.py)
STOP: Final = "stop"
STOP_MODULE = "jobs.head.stop"
# `rl-jobs checkpoints RUN` listing the run's checkpoint folders on the head (jobs/head/list_checkpoints.py)
CHECKPOINTS: Final = "checkpoints"
CHECKPOINTS_MODULE = "jobs.head.list_checkpoints"
# `rl-jobs eval RUN` evaluating a checkpoint on held-out data (jobs/head/eval_job.py)
EVAL: Final = "eval"
EVAL_MODULE = "jobs.head.eval_job"
# `submit --eval-at-end`: the eval job is composed by the CLI at submit time, before any step is
# known; the supervisor puts the newest complete step in place of this wherever it appears.
EVAL_STEP = "__EVAL_STEP__"

# The module the supervisor job runs: `python -m jobs.head.supervisor <its own submission id>`.
SUPERVISOR_MODULE = "jobs.head.supervisor"
# A supervisor job's metadata key set by the re-armer (jobs/head/rearm.py): the supervisor
# continues the run's current life instead of starting a new one (jobs/head/events.py `life`).
REARMED_KEY = "rearmed"

_SUPERVISOR_SUFFIX = re.compile(r"^(?P<run>.+)-s(?P<n>[0-9]+)$")


def attempt_id(run: str, attempt: int) -> str:
    """Attempt N of a run is the Ray job `<run>-aN`: Ray's unique submission ids make a resubmit
    of the same attempt collide instead of running twice."""
    return f"{run}-a{attempt}"


def supervisor_id(run: str, n: int) -> str:
    """The run's Nth supervisor `<run>-sN`: two commands arming a run at once collide on it."""
    return f"{run}-s{n}"


def supervisor_number(submission_id: str) -> int:
    """N of `<run>-sN`, 0 for anything else."""
    m = _SUPERVISOR_SUFFIX.match(submission_id)
    return int(m.group("n")) if m else 0


def live_job_ids(jobs: Iterable[Any], kind: Kind, run: str) -> list[str | None]:
    """The submission ids of the run's jobs of `kind` (their metadata) that Ray has not ended,
    in the Jobs API's order."""
    found: list[str | None] = []
    for job in jobs:
        meta = job.metadata or {}
        if meta.get("kind") == kind and meta.get("run") == run and not job.status.is_terminal():
            found.append(job.submission_id)
    return found


def runs_root_refusal(spec: Spec, is_dir: Callable[[str], bool]) -> str:
    """Why the supervisor must not start on this runs root ("" when it may): a root that does
    not exist on the head is refused unless it is the stack's own (created, a typed root's
    typo would put the run's records where nothing looks)."""
    root = spec.runs_root
    if not root or spec.create_runs_root or is_dir(root):
        return ""
    return (
        f"the runs root {root} does not exist on the Ray head: nothing was submitted (a typo "
        "would put the run's record where the re-armer never looks); create it there first, or "
        "leave --runs-root out on a stack to use the stack's own runs root"
    )


def supervisor_entrypoint(submission_id: str) -> str:
    return f"python -m {SUPERVISOR_MODULE} {submission_id}"


def supervisor_metadata(
    spec: dict[str, Any],
    n: int,
    submitted_by: str,
    *,
    rearmed: bool = False,
    jobs_commit: str = "",
) -> dict[str, str]:
    """The one writer of a supervisor job's Ray metadata (the CLI's hand-off and the re-armer):
    the spec the supervisor reads, and the keys `list`/`status` show (str -> str, as Ray wants)."""
    provenance = spec.get("metadata") or {}
    meta = {
        "run": str(spec["run"]),
        "kind": SUPERVISOR,
        "supervisor": str(n),
        Spec.METADATA_KEY: json.dumps(spec, sort_keys=True),
        "max_restarts": str(spec.get("max_restarts", "")),
        "gpus": str(spec.get("gpus_needed", "")),
        "stack": str(provenance.get("stack", "")),
        "git_commit": str(provenance.get("git_commit", "")),
        "jobs_commit": jobs_commit or str(provenance.get("jobs_commit", "")),
        "submitted_by": submitted_by,
    }
    if rearmed:
        meta[REARMED_KEY] = "1"
    return meta


# Supervision's defaults, defined once: the CLI's help, the hand-off and the policy read these.
# Preemptions are not the run's fault: a generous budget, apart from --max-restarts.
DEFAULT_MAX_PREEMPTIONS = 100
# A recipe's stall timeout: longer than the first model load of the largest recipe (70B, with a
# one-time Megatron conversion) and a ~1 TB checkpoint save on Lustre (reference §8).
RECIPE_STALL_TIMEOUT_S = 7200.0


@dataclass(frozen=True)
class Spec:
    """The run as the CLI hands it over (the supervisor job's metadata `spec`, JSON)."""

    run: str
    first_attempt: int
    max_restarts: int
    gpus_needed: int
    checkpoint_dir: str
    entrypoint: str
    runtime_env: dict[str, Any]
    metadata: dict[str, str]
    # Attempts ended by a lost node (read from Ray's node table) spend this, never max_restarts.
    max_preemptions: int = DEFAULT_MAX_PREEMPTIONS
    stall_timeout_s: float = 0.0  # 0: no stall watchdog
    runs_root: str = ""  # "": the run's record stays in the supervisor's job log only
    keep: int = 0  # complete checkpoints kept between attempts (jobs/head/hygiene.py); 0: all
    # Longest wait for the GPUs after a failure before the run gives up; 0: no deadline (the
    # default: waiting for spot capacity alone never ends a run).
    capacity_deadline_s: float = 0.0
    # What each attempt's driver reserves, as the CLI's Submission had it (`run --cpus/--gpus/
    # --resource`: Ray's entrypoint_num_cpus/gpus/resources); None: nothing. Kept in the spec
    # so every attempt the supervisor sends reserves what the first did.
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: dict[str, float] | None = None
    # Flex-start GPUs: each node's maximum run duration (0: the nodes have none), and the
    # recipe's framework, told per attempt to save before its nodes end (jobs/head/node_end.py;
    # "": a command run, whose trainer the supervisor cannot tell).
    node_max_run_s: float = 0.0
    save_before_node_end: str = ""
    # The runs root may be created by the supervisor: only the stack's own (`/lustre/runs`, the
    # re-armer's), never one the user typed, whose typo would put records where nothing looks.
    create_runs_root: bool = False
    # GPUs that scale on demand (`gpu.scaling: on-demand`): the supervisor asks Ray's autoscaler
    # for the run's GPU nodes, `gpus_per_node` each, and releases them at the run's end
    # (jobs/head/scale_up.py).
    request_gpus: bool = False
    gpus_per_node: int = 0
    # `submit --eval-at-end`: when the run succeeds, the supervisor sends `eval_job` (the eval
    # job `rl-jobs eval` builds, as a Submission's fields, its step EVAL_STEP) for the newest
    # complete checkpoint (jobs/head/eval_at_end.py). Composed on the CLI side, where the
    # recipes are: the head needs no recipe code.
    eval_at_end: bool = False
    eval_job: dict[str, Any] | None = None

    METADATA_KEY = "spec"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Spec:
        values = json.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"hand-off spec has unknown keys {unknown}: the CLI and the head "
                "run different versions of jobs"
            )
        return cls(**values)

    def attempt_id(self, attempt: int) -> str:
        return attempt_id(self.run, attempt)

    def reservations(self) -> dict[str, Any]:
        """The entrypoint reservations to pass to submit_job (only those set)."""
        given = {
            "entrypoint_num_cpus": self.entrypoint_num_cpus,
            "entrypoint_num_gpus": self.entrypoint_num_gpus,
            "entrypoint_resources": self.entrypoint_resources,
        }
        return {k: v for k, v in given.items() if v}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Settings:
    """The supervisor's timings. Callers may shorten them through the environment (tests do);
    they are never secrets, so the CLI forwards exactly these variables to the head."""

    poll_s: float = 1.0
    max_wait_s: float = 1800.0
    settle_s: float = 60.0
    progress_s: float = 60.0
    lease_s: float = 15.0  # the run's lease on the runs root (jobs/head/run_store.py)
    backoff_max_s: float = 60.0  # longest pause after an unexpected error
    gauges_s: float = 30.0  # how often the run's gauges are set from its log (run_gauges.py)

    ENV = {
        "poll_s": "JOBS_SUPERVISOR_POLL_S",
        "max_wait_s": "JOBS_SUPERVISOR_MAX_WAIT_S",
        "settle_s": "JOBS_SUPERVISOR_SETTLE_S",
        "progress_s": "JOBS_SUPERVISOR_PROGRESS_S",
        "lease_s": "JOBS_SUPERVISOR_LEASE_S",
        "backoff_max_s": "JOBS_SUPERVISOR_BACKOFF_MAX_S",
        "gauges_s": "JOBS_SUPERVISOR_GAUGES_S",
    }

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        return cls(**{name: float(env[var]) for name, var in cls.ENV.items() if var in env})

    @classmethod
    def forwarded(cls, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The settings variables set in `env`, to pass on to the supervisor job."""
        env = os.environ if env is None else env
        return {var: env[var] for var in cls.ENV.values() if var in env}
