"""`list`, `status` and `logs` with --runs-root: a missing root is refused by name, and the table of
recorded runs keeps ids and states whole at 80 columns (issue 29 items 5 and 8)."""

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
    """Issue 29 item 8: `list` printed an empty table with exit 0; a typo of /lustre/runs hid
    every run."""
    missing = tmp_path / "lustre" / "rnus"
    result = CliRunner().invoke(app, [*command, "--runs-root", str(missing)], env=NARROW)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: --runs-root {missing}: no such directory")
    assert not missing.exists()


def test_list_of_a_runs_root_keeps_ids_and_states_whole_at_80_columns(tmp_path):
    """Issue 29 item 5: the status column was cut to `SUPERVI`/`SED`."""
    run = "grpo-qwen2-5-math-1-5b-long-name"
    _record(tmp_path, run)
    result = CliRunner().invoke(app, ["list", "--runs-root", str(tmp_path)], env=NARROW)
    assert result.exit_code == 0, result.output
    # The title names the runs root, a path kept whole however long; the table fits the width.
    lines = [line for line in result.stdout.splitlines() if not line.startswith("runs recorded in")]
    assert max(len(line) for line in lines) <= 80
    row = next(line for line in lines if run in line)
    assert "SUPERVISED" in row
    # attempts by their suffix, whole: the run's name is the row's first column
    words = result.stdout.replace("│", " ").split()
    assert {"a1", "a2", "a3"} <= set(words) and "RUNNING" in words
