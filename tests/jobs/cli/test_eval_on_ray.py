"""`rl-jobs eval RUN --step N` on a real local Ray head with a fake GPU node: the eval job runs the
framework's entrypoint (`python3 -m verl.trainer.main_ppo`, answered by the stub generator with
veRL's interface through an actor holding a GPU), writes eval/step_N.json, and `status` and
`report` show it. The eval is supervised: a kill of the GPU node mid-eval (a shard kept, the
last not yet) is judged a preemption, the eval is sent again once the node is back, resumes
from the kept shards and writes the same bytes as an uninterrupted one."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray.job_submission import JobSubmissionClient
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head import events, pass_k
from tests import localray
from tests.jobs import eval_fixture as fx
from tests.jobs.conftest import wait_until
from tests.jobs.gpu_node import GpuNode

pytestmark = pytest.mark.ray

FAST_HEALTH = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
    "RAY_health_check_initial_delay_ms": "1000",
}


def _python3_shim(folder: Path) -> Path:
    """`python3` first on the head's PATH: veRL's entrypoint goes to the stub generator with its
    arguments; every other use (the eval job itself, the checkpoint listing) to this venv's."""
    folder.mkdir(parents=True)
    shim = folder / "python3"
    shim.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "verl.trainer.main_ppo" ]; then\n'
        f'  shift 2; exec "{sys.executable}" "{fx.STUB}" "$@"\n'
        "fi\n"
        f'exec "{sys.executable}" "$@"\n'
    )
    shim.chmod(0o755)
    return folder


def _hold(lustre: fx.Lustre) -> Path:
    """While this file exists, the stub's generator holds its GPU inside its answer."""
    return lustre.root / "generator-hold"


@pytest.fixture(scope="module")
def lustre(tmp_path_factory: pytest.TempPathFactory) -> fx.Lustre:
    return fx.make(tmp_path_factory.mktemp("lustre"), "warmup")


@pytest.fixture(scope="module")
def head(
    lustre: fx.Lustre, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[localray.LocalRay]:
    shim = _python3_shim(tmp_path_factory.mktemp("shim") / "bin")
    env = {
        **FAST_HEALTH,
        "PATH": os.pathsep.join([str(shim), str(localray.venv_bin()), os.environ["PATH"]]),
        "EVAL_STUB_ANSWERS": str(lustre.answers),
        "EVAL_STUB_RAY": "1",
        "EVAL_STUB_SLEEP": "1.5",
        "EVAL_STUB_HOLD": str(_hold(lustre)),
        # 5 problems in shards of 2: a kill can fall after a kept shard and before the last.
        "JOBS_EVAL_SHARD_SIZE": "2",
    }
    h = localray.start(num_cpus=2, extra_env=env)
    try:
        yield h
    finally:
        h.stop()


# The eval's supervisor, quick as the survival tests': the settle after a failure is a back-off
# between tries, the lost node being judged by Ray's node table and the probe.
SUPERVISOR = {
    "JOBS_SUPERVISOR_POLL_S": "0.5",
    "JOBS_SUPERVISOR_SETTLE_S": "3",
    "JOBS_SUPERVISOR_PROGRESS_S": "5",
    "JOBS_SUPERVISOR_MAX_WAIT_S": "300",
}


def cli(*args: str) -> tuple[int, str, str]:
    env = {"RAY_ADDRESS": None, "COLUMNS": "250", **SUPERVISOR}
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def _attempt(client: JobSubmissionClient, lustre: fx.Lustre, run: str) -> None:
    """The run's ended attempt 1, with the metadata `submit` records; its checkpoints and the
    held-out file on the stand-in for Lustre (a CPU head trains nothing)."""
    (lustre.runs / run).mkdir(parents=True)
    (lustre.runs / run / "staged-model.json").write_text('{"commit": "c0ffee"}')
    rec = fx.recorded(lustre, run, "verl-grpo-gsm8k")
    val = lustre.datasets / "gsm8k" / "verl" / "test.parquet"
    meta = rec.model_copy(
        update={
            "checkpoint_dir": str(lustre.runs / run / "checkpoints"),
            "overrides": [f"data.val_files={val}"],
            "gpus_per_node": 1,  # what the eval's supervisor waits for: the fake node's one
        }
    )
    client.submit_job(entrypoint="true", submission_id=f"{run}-a1", metadata=meta.to_ray())
    wait_until(lambda: client.get_job_status(f"{run}-a1").is_terminal(), 60, "attempt 1 to end")


def _kept(lustre: fx.Lustre, run: str, shard: int) -> bool:
    return any((lustre.runs / run / "eval" / "parts").glob(f"step_20-*/shard-{shard}.json"))


def test_a_supervised_eval_cut_by_a_lost_node_resumes_and_writes_the_same_bytes(head, lustre):
    url = head.dashboard_url
    client = JobSubmissionClient(url)
    run = f"ev-{uuid.uuid4().hex[:8]}"
    _attempt(client, lustre, run)
    node = GpuNode(head, gpus=1)
    try:
        node.join()
        ask = ["--step", "20", "--k", "2", "--n", "4", "--runs-root", str(lustre.runs)]
        code, out, err = cli("eval", run, *ask, "--follow", "--address", url)
        assert code == 0, out + err
        assert f"supervised by {run}-eval-1-s1" in err
        result = lustre.runs / run / "eval" / "step_20.json"
        first = result.read_bytes()
        assert f'"score": {pass_k.mean_pass_at_k(fx.RIGHT["step_20"], 4, 2)}'.encode() in first

        code, out, _ = cli("status", run, "--address", url)
        line = (
            f"GSM8K pass@2 {100 * pass_k.mean_pass_at_k(fx.RIGHT['step_20'], 4, 2):.1f}% at step 20"
        )
        assert f"eval: {line}" in out
        page = lustre.root / f"{run}.html"
        code, out, err = cli("report", run, "--address", url, "--out", str(page))
        assert code == 0, out + err
        assert f"Held-out evaluation: {line}" in page.read_text()

        # Cut mid-evaluation: the GPU node dies under the generator once shard 1 of 3 is kept.
        result.unlink()
        code, out, err = cli("eval", run, *ask, "--address", url)
        assert code == 0, out + err
        name, cut = f"{run}-eval-2", f"{run}-eval-2-a1"
        wait_until(lambda: _kept(lustre, run, 1), 180, "shard 1 kept")
        # The kill falls while a later shard's generator holds the GPU: one killed before its
        # actor is placed would wait, pending, for the node to come back rather than fail.
        hold = _hold(lustre)
        hold.touch()
        held = hold.with_name(f"{hold.name}.held")
        wait_until(held.exists, 180, "a later shard's generator on the GPU node")
        assert not _kept(lustre, run, 3)
        node.kill()
        hold.unlink()
        held.unlink()
        wait_until(lambda: client.get_job_status(cut).is_terminal(), 180, "the cut try to end")
        assert not result.exists()

        node.join()
        sup = f"{name}-s1"
        wait_until(lambda: client.get_job_status(sup).is_terminal(), 300, "the eval's end")
        recs = events.parse(client.get_job_logs(sup))
        assert [r["event"] for r in recs if r["event"] in ("preempted", "finished")] == [
            "preempted",
            "finished",
        ], recs
        resumed = client.get_job_logs(f"{name}-a2")
        assert "eval: shard 1 of 3 already evaluated; kept" in resumed
        assert "eval: shard 1 of 3\n" not in resumed
        assert result.read_bytes() == first

        code, out, _ = cli("status", run, "--address", url)
        assert f"eval: {line}" in out
        code, out, err = cli("report", run, "--address", url, "--out", str(page))
        assert code == 0, out + err
        assert f"Held-out evaluation: {line}" in page.read_text()
        # The next eval of the run takes the next number past the supervised one's jobs.
        code, out, err = cli("eval", run, "--dry-run", "--json", "--address", url)
        assert json.loads(out)["submission_id"] == f"{run}-eval-3", err
    finally:
        node.close()


def test_refusals_name_the_flag_and_submit_nothing(head, lustre):
    url = head.dashboard_url
    client = JobSubmissionClient(url)
    run = f"ev-{uuid.uuid4().hex[:8]}"
    _attempt(client, lustre, run)
    # A step that is not complete (none was saved at 30), read from the head's own listing.
    code, _, err = cli("eval", run, "--step", "30", "--address", url)
    assert code == 2
    assert f"error: --step 30: step 30 of run {run} does not exist" in err
    assert "complete steps: 20, 40" in err
    # A run started from a command has no recipe, so no held-out split.
    cmd = f"cmd-{uuid.uuid4().hex[:8]}"
    assert cli("run", "--address", url, "--name", cmd, "--follow", "--", "true")[0] == 0
    code, _, err = cli("eval", cmd, "--address", url)
    assert code == 2 and "not a recipe run" in err
    evals_sent = [j for j in client.list_jobs() if "-eval-" in (j.submission_id or "")]
    assert not [j for j in evals_sent if j.submission_id.startswith((run, cmd))]
    # The dry run prints the job it would send: the eval module, then veRL's entrypoint.
    code, out, err = cli("eval", run, "--dry-run", "--json", "--address", url)
    assert code == 0, err
    sent = json.loads(out)
    assert sent["submission_id"] == f"{run}-eval-1"
    assert sent["entrypoint"].startswith("python3 -m jobs.head.eval_job --framework verl")
    assert " --step 40 " in sent["entrypoint"]  # the newest complete step
    assert " -- python3 -m verl.trainer.main_ppo " in sent["entrypoint"]
    assert "trainer.val_only=True" in sent["entrypoint"]
    assert sent["metadata"]["kind"] == "eval"


def test_a_run_submitted_with_eval_at_end_queues_its_eval_when_it_succeeds(
    head, lustre, monkeypatch
):
    """`submit --eval-at-end` end to end but for the trainer: the run's attempt (`true`) stands
    for a training that succeeded with steps 20 and 40 saved; its supervisor sends the eval job
    the CLI composed for it, for step 40, which runs the stub framework and writes the result."""
    from jobs.client.dashboard import Dashboard
    from jobs.client.types import Submission
    from jobs.recipes.catalogue import RECIPES
    from jobs.runs import eval_at_end, handoff

    for key, value in SUPERVISOR.items():
        monkeypatch.setenv(key, value)  # forwarded to the supervisor at the hand-off
    url = head.dashboard_url
    client = JobSubmissionClient(url)
    run = f"ev-{uuid.uuid4().hex[:8]}"
    (lustre.runs / run).mkdir(parents=True)
    (lustre.runs / run / "staged-model.json").write_text('{"commit": "c0ffee"}')
    rec = fx.recorded(lustre, run, "verl-grpo-gsm8k")
    val = lustre.datasets / "gsm8k" / "verl" / "test.parquet"
    meta = rec.model_copy(
        update={
            "checkpoint_dir": str(lustre.runs / run / "checkpoints"),
            "overrides": [f"data.val_files={val}"],
            "gpus_per_node": 1,
        }
    )
    attempt = Submission(
        submission_id=f"{run}-a1", entrypoint="true", runtime_env={}, metadata=meta.to_ray()
    )
    job = eval_at_end.job(
        RECIPES["verl-grpo-gsm8k"], attempt, str(lustre.runs), None, "c0ffee", None
    )
    node = GpuNode(head, gpus=1)
    try:
        node.join()
        handed = handoff.hand_off(
            Dashboard(url),
            attempt,
            max_restarts=0,
            gpus=0,
            checkpoint_dir=meta.checkpoint_dir,
            hint_where="",
            options=handoff.Options(eval_job=eval_at_end.for_spec(job)),
        )
        sup = handed.supervisor
        wait_until(lambda: client.get_job_status(sup).is_terminal(), 120, "the run's end")
        recs = events.parse(client.get_job_logs(sup))
        ends = [r for r in recs if r["event"] in ("finished", "eval_queued", "eval_not_queued")]
        assert [r["event"] for r in ends] == ["finished", "eval_queued"], recs
        assert (ends[1]["submission_id"], ends[1]["step"]) == (f"{run}-eval-1", 40)
        sent = f"{run}-eval-1"
        wait_until(lambda: client.get_job_status(sent).is_terminal(), 300, "the eval's end")
        assert client.get_job_status(sent).value == "SUCCEEDED", client.get_job_logs(sent)
        assert client.get_job_info(sent).metadata["step"] == "40"
        result = json.loads((lustre.runs / run / "eval" / "step_40.json").read_text())
        assert (result["step"], result["k"], result["n"]) == (40, 1, 1)

        code, out, err = cli("status", run, "--address", url)
        assert code == 0, out + err
        assert f"eval at end: evaluation of step 40 queued as {sent}" in out
        assert "eval: GSM8K " in out and " at step 40" in out
    finally:
        node.close()
