"""Continuing a run from its record: the runs root a resume keeps, and what it says of it."""

from __future__ import annotations

from jobs.client.types import JobDetails, JobStatus
from jobs.head import protocol
from jobs.runs.resume import runs_root_kept
from jobs.runs.state import Run


def _run(*roots: str) -> Run:
    """A run whose supervisors (oldest first) recorded `roots`."""
    sups = tuple(
        JobDetails(
            status=JobStatus.FAILED,
            entrypoint="python -m jobs.head.supervisor",
            submission_id=f"r-s{n}",
            metadata={
                protocol.Spec.METADATA_KEY: protocol.Spec(
                    "r", 1, 1, 0, "", "true", {}, {}, runs_root=root
                ).to_json()
            },
        )
        for n, root in enumerate(roots, 1)
    )
    return Run("r", (), sups, ())


def test_a_resume_keeps_the_runs_root_its_latest_supervisor_recorded_and_says_so() -> None:
    assert runs_root_kept(_run("/old", "/runs"), "") == (
        "/runs",
        "keeping the runs root run r was started with: /runs",
    )
    assert runs_root_kept(_run("/runs"), "/runs") == ("/runs", "")
    assert runs_root_kept(_run(""), "") == ("", "")
    assert runs_root_kept(Run("r", (), (), ()), "/x") == ("/x", "")


def test_another_runs_root_or_an_unsupervised_resume_is_said_never_silent() -> None:
    root, note = runs_root_kept(_run("/runs"), "/other")
    assert root == "/other" and note == "runs root /other (run r was started with /runs)"
    root, note = runs_root_kept(_run("/runs"), "", unsupervised=True)
    assert root == "" and "started with the runs root /runs: resumed unsupervised" in note
