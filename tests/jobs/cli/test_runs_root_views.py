"""`list`, `status` and `logs` with --runs-root: a missing root is refused by name, and the table of
recorded runs keeps ids and states whole at 80 columns."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head import events as ev
from jobs.head.run_store import RunStore

NARROW = {"COLUMNS": "80", "RAY_ADDRESS": None, "JOBS_DEBUG": None}


def _record(root, run: str) -> None:
    store = RunStore(root, run)
    store.acquire(f"{run}-s1", ttl_s=3600)
    store.write_spec({"run": run})
    for n in (1, 2, 3):
        sid = f"{run}-a{n}"
        store.append(ev.record(ev.SUBMITTED, run, "submitted", attempt=n, submission_id=sid))
        if n < 3:
            store.append(
                ev.record(
                    ev.ATTEMPT_ENDED, run, "ended", attempt=n, submission_id=sid, status="FAILED"
                )
            )
            store.append(
                ev.record(
                    ev.PREEMPTED, run, "node 10.0.0.7 died under it", attempt=n, submission_id=sid
                )
            )


@pytest.mark.parametrize("command", [["list"], ["status", "r"], ["logs", "r"]])
def test_a_runs_root_that_does_not_exist_is_refused_by_name(tmp_path, command):
    """`list` printed an empty table with exit 0; a typo of /lustre/runs hid
    every run."""
    missing = tmp_path / "lustre" / "rnus"
    result = CliRunner().invoke(app, [*command, "--runs-root", str(missing)], env=NARROW)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: --runs-root {missing}: no such directory")
    assert not missing.exists()


def test_list_of_a_runs_root_keeps_ids_and_states_whole_at_80_columns(tmp_path):
    """The status column was cut to `SUPERVI`/`SED`."""
    run = "grpo-qwen2-5-math-1-5b-long-name"
    _record(tmp_path, run)
    result = CliRunner().invoke(app, ["list", "--runs-root", str(tmp_path)], env=NARROW)
    assert result.exit_code == 0, result.output
    # The title names the runs root, a path kept whole however long; the table fits the width.
    lines = [line for line in result.stdout.splitlines() if not line.startswith("runs recorded in")]
    assert max(len(line) for line in lines) <= 80
    row = next(line for line in lines if run in line)
    assert "RUNNING" in row.split()
    # attempts by their suffix, whole: the run's name is the row's first column
    words = result.stdout.replace("│", " ").split()
    assert {"a1", "a2", "a3"} <= set(words) and "RUNNING" in words


def test_list_of_a_runs_root_shows_each_runs_step_and_time(tmp_path):
    """`list` shows step and duration per run; from the runs root, the step is the last
    one the latest ended attempt logged (its step lines kept beside the record)."""
    run, t0 = "grpo-1", 1_800_000_000.0
    store = RunStore(tmp_path, run)
    store.write_spec({"run": run})
    store.append(
        ev.record(ev.SUBMITTED, run, "submitted", at=t0, attempt=1, submission_id="grpo-1-a1")
    )
    store.keep_progress("grpo-1-a1", "step:11 - timing_s/step:2.0\nstep:12 - timing_s/step:2.0\n")
    store.append(
        ev.record(ev.ATTEMPT_ENDED, run, "ended", at=t0 + 3700, attempt=1,
                  submission_id="grpo-1-a1", status="SUCCEEDED")
    )  # fmt: skip
    store.append(ev.record(ev.FINISHED, run, "run grpo-1 succeeded", at=t0 + 3725))
    result = CliRunner().invoke(app, ["list", "--runs-root", str(tmp_path)], env=NARROW)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if run in line)
    assert "step 12" in row and "1 h 02 min" in row, result.stdout
    js = CliRunner().invoke(app, ["list", "--runs-root", str(tmp_path), "--json"], env=NARROW)
    (listed,) = __import__("json").loads(js.stdout)
    assert (listed["step"], listed["duration_s"]) == (12, 3725.0)
