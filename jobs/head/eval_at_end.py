"""The evaluation a run asked for at its end (`submit --eval-at-end`): its newest complete step sent as an eval job once the run succeeded.

The CLI composed the eval job at submit time (jobs/runs/eval_at_end.py: the same job `rl-jobs
eval RUN` sends, its step left as protocol.EVAL_STEP) and handed it over in the run's spec, so
the head needs no recipe code. The supervisor, having recorded the run's success, puts the
newest complete checkpoint's step in place (jobs/head/checkpoints.py, the rule export and eval
share) and submits the job as `<run>-eval-N` (N after the run's evals so far), recorded as
`eval_queued`. Whatever goes wrong is recorded as `eval_not_queued` with its reason: the run
stays a success and the supervisor never crashes over it. The eval is one Ray job, not
supervised: a lost node ends it, and `rl-jobs eval RUN --step N` sent again keeps its scored
shards. Standard library only (Python 3.10+): this runs on the Ray head.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.client import errors
from jobs.head import checkpoints, protocol
from jobs.head import events as ev

if TYPE_CHECKING:
    from jobs.head.supervisor_port import SupervisorPort


class NotQueued(Exception):
    """Why the eval cannot be sent, with the reason recorded beside it."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def eval_number(submission_ids: list[str], run: str) -> int:
    """1 + the highest N among the run's eval jobs `<run>-eval-N`, their supervisors (`-sK`)
    and tries (`-aK`): the number `rl-jobs eval` would take next (jobs/runs/evaluate.py)."""
    pattern = re.compile(rf"^{re.escape(run)}-eval-(?P<n>[0-9]+)(-[as][0-9]+)?$")
    numbers = [int(m["n"]) for s in submission_ids if (m := pattern.match(s))]
    return max(numbers, default=0) + 1


def newest_step(job: dict[str, Any], checkpoint_dir: str) -> int:
    """The newest complete checkpoint of the run, by its framework's layout."""
    framework = (job.get("metadata") or {}).get("framework") or None
    if not checkpoint_dir:
        raise NotQueued("no_checkpoint", "the run records no checkpoint directory")
    complete = checkpoints.complete_steps(framework, Path(checkpoint_dir))
    if not complete:
        raise NotQueued(
            "no_checkpoint", f"the run left no complete checkpoint in {checkpoint_dir} to evaluate"
        )
    return max(complete)


def filled(job: dict[str, Any], step: int) -> dict[str, Any]:
    """The eval job's submit arguments with `step` in place of protocol.EVAL_STEP."""

    def put(text: str) -> str:
        return text.replace(protocol.EVAL_STEP, str(step))

    metadata = {str(k): put(str(v)) for k, v in (job.get("metadata") or {}).items()}
    sent: dict[str, Any] = {
        "entrypoint": put(str(job["entrypoint"])),
        "runtime_env": job.get("runtime_env") or {},
        "metadata": metadata,
    }
    if job.get("entrypoint_num_cpus"):
        sent["entrypoint_num_cpus"] = job["entrypoint_num_cpus"]
    return sent


def _send(sup: SupervisorPort, job: dict[str, Any]) -> tuple[str, int]:
    spec = sup.spec
    step = newest_step(job, spec.checkpoint_dir)
    listed = sup.retry(sup.client.list_jobs) or []
    sid = f"{spec.run}-eval-{eval_number([j.submission_id or '' for j in listed], spec.run)}"
    try:
        sent = sup.retry(lambda: sup.client.submit_job(submission_id=sid, **filled(job, step)))
    except RuntimeError as e:
        if not errors.is_duplicate(e):
            raise
        sent = sid  # a retry whose first answer was lost: the job is there
    if sent is None:
        raise NotQueued("stopped", "a stop came while the dashboard was away")
    return sid, step


def queue(sup: SupervisorPort) -> str | None:
    """Send the run's eval job if it asked for one; its submission id, or None (not asked, or
    not sent: then `eval_not_queued` says why). Never raises: the run already succeeded."""
    spec = sup.spec
    if not spec.eval_at_end:
        return None
    try:
        if not spec.eval_job or not spec.eval_job.get("entrypoint"):
            raise NotQueued("no_eval_job", "the run's spec holds no eval job to send")
        sid, step = _send(sup, spec.eval_job)
    except Exception as e:  # the run's success must stand whatever the eval's fault
        reason = e.reason if isinstance(e, NotQueued) else "submit_failed"
        text = " ".join(str(e).split())[:500]
        why = text if isinstance(e, NotQueued) else f"{type(e).__name__}: {text}"
        sup.record(
            ev.EVAL_NOT_QUEUED,
            f"the evaluation asked at the end of run {spec.run} was not queued: {why}; "
            f"the run stays a success (evaluate it with `rl-jobs eval {spec.run}`)",
            reason=reason,
        )
        return None
    sup.record(
        ev.EVAL_QUEUED,
        f"evaluation of step {step} queued as {sid} (its score shows in "
        f"`status {spec.run}` once it ends)",
        submission_id=sid,
        step=step,
    )
    return sid
