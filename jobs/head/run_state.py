"""Where a supervised run stands between two steps of its supervisor: enough to resume the loop.

The supervisor (jobs/head/supervisor.py) keeps one `RunState`; after an unexpected error it
resumes from it, and a re-armed supervisor rebuilds it from the run's record
(jobs/head/run_restore.py). Standard library only: this runs on the Ray head.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.head.restart_policy import Failure, Situation


@dataclass
class RunState:
    """Where the run is: enough to resume the loop after an error or a re-arm."""

    attempt: int
    restarts: int = 0
    preemptions: int = 0
    current: str | None = None  # the live (or last) attempt's submission id
    started_ms: int = 0
    watching: bool = False  # `current` is submitted and its end not recorded yet
    baseline: frozenset[str] = field(default_factory=frozenset)
    has_baseline: bool = False
    # Whether the previous failure that was not a preemption had made progress itself: a crash
    # is two such failures in a row without progress (a transient failure during a load, after
    # a failure that had trained, is retried).
    prev_progressed: bool | None = None
    own_progress: bool | None = None
    # How the ended attempt failed, and the previous failure that was not a preemption (exit
    # code, last exception): a crash is two alike (restart_policy.is_crash).
    failure: Failure | None = None
    prev_failure: Failure | None = None
    stop_requested: bool = False  # the user stopped the run before this supervisor came
    situation: Situation | None = None
    ended_at: float = 0.0
    end_entries: frozenset[str] = field(default_factory=frozenset)
    # The ended attempt's restart or preemption is counted: a submit that fails after it and is
    # retried (after an error's backoff) must not count it again.
    charged: bool = False
    # Where the ended attempt's workers ran (Probes.hosts; None: unknown), and when it ended.
    hosts: frozenset[str] | None = None
    ended_ms: int = 0
    # The attempt the stall watchdog stopped: Ray says STOPPED, the run says STALLED, also when
    # an API error came between the stop and its end (found by the simulation, seed 1010).
    stall_stopped: str | None = None
    # The GPUs of the nodes the run's last attempt that reached any GPU node ran on: a run that
    # declares none (`run` without --gpus, its workers on GPU nodes) waits for them after a
    # preemption, instead of submitting into a stockout and failing at placement.
    gpus_used: int = 0
    # The run's one W&B run id (jobs/head/tracking.py), kept in its record.
    wandb_id: str = ""
