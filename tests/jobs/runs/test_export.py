"""The export job built from a recorded recipe run: backend from the composed config, output
kept inside the run's directory, what is sent to Ray, and how `list` files it under the run."""

from __future__ import annotations

import shlex
from types import SimpleNamespace

import pytest
from ray.job_submission import JobStatus

from components.contract import SECRET_ENV
from jobs.common.errors import UsageError
from jobs.recipes import overrides
from jobs.recipes.catalogue import RECIPES
from jobs.runs import export, state
from jobs.runs import plan as submission
from jobs.runs.metadata import ExportRun, RecipeRun, RunMetadata


def recorded(recipe: str, run: str = "r1", sets: tuple[str, ...] = (), nodes: int = 8) -> RecipeRun:
    """A run's metadata exactly as `submit` records it."""
    r = RECIPES[recipe]
    parsed = overrides.parse(list(sets))
    sub = submission.for_recipe(
        r, run, nodes, 8, parsed, overrides.check(r, parsed, run), None, "abc"
    )
    rec = RecipeRun.of_job(sub.metadata)
    assert rec is not None
    return rec


@pytest.mark.parametrize(
    ("recipe", "sets", "nodes", "want"),
    [
        ("nemo-rl-grpo-math", (), 8, "megatron"),
        ("nemo-rl-grpo-math-codelab", (), 8, "megatron"),
        ("nemo-rl-grpo-gsm8k", (), 1, "dcp"),
        ("verl-grpo-gsm8k", (), 1, "fsdp"),
        ("verl-grpo-gsm8k", ("actor_rollout_ref.actor.strategy=fsdp2",), 1, "fsdp"),
    ],
)
def test_backend_follows_the_composed_config(recipe, sets, nodes, want):
    rec = recorded(recipe, sets=sets, nodes=nodes)
    assert export.backend(RECIPES[recipe], rec) == want


def test_out_defaults_inside_the_run_and_refuses_escapes():
    assert export.check_out("r1", None) == "/lustre/runs/r1/hf/step_{step}"
    assert export.check_out("r1", "/lustre/runs/r1/final//x/") == "/lustre/runs/r1/final/x"
    for bad in (
        "/lustre/runs/r2/hf",
        "/lustre/runs/r1/../r2/hf",
        "hf/step_1",
        "/tmp/x",
        "/lustre/runs/r1",
    ):
        with pytest.raises(UsageError) as e:
            export.check_out("r1", bad)
        assert e.value.message.startswith(f"--out {bad}: ")
        assert "/lustre/runs/r1/" in e.value.message + (e.value.hint or "")


def test_export_numbers_count_up_per_run():
    ids = ["r1-a1", "r1-export-1", "r1-export-3", "r10-export-7", "other-export-9"]
    assert export.next_number(ids, "r1") == 4
    assert export.next_number(ids, "r10") == 8
    assert export.next_number([], "r1") == 1


def test_the_submission_runs_the_payload_on_a_worker_without_secrets():
    rec = recorded("nemo-rl-grpo-math", run="big")
    sub = export.for_run(
        RECIPES["nemo-rl-grpo-math"],
        rec,
        "megatron",
        export.check_out("big", None),
        30,
        2,
        "h200",
        "abc",
    )
    assert sub.submission_id == "big-export-2"
    assert shlex.split(sub.entrypoint) == [
        "python3",
        "export_checkpoint.py",
        "--framework",
        "nemo-rl",
        "--backend",
        "megatron",
        "--checkpoint-dir",
        "/lustre/runs/big/checkpoints",
        "--out",
        "/lustre/runs/big/hf/step_{step}",
        "--step",
        "30",
    ]
    assert sub.runtime_env["working_dir"] == str(export.PAYLOAD)
    assert sub.runtime_env["py_modules"] == [str(submission.JOBS_PACKAGE)]
    env = sub.runtime_env["env_vars"]
    # Offline: the run staged the model; an online read could move refs/main (jobs/staging).
    assert env == {"HF_HOME": "/lustre/huggingface_cache", "HF_HUB_OFFLINE": "1"}
    assert not set(SECRET_ENV.values()) & set(env)
    # The head has num-cpus 0: one CPU sends the driver to a worker with the host memory.
    assert sub.entrypoint_num_cpus == 1.0
    meta = ExportRun.model_validate(sub.metadata)
    assert (meta.run, meta.kind, meta.attempt, meta.backend, meta.step, meta.stack) == (
        "big",
        "export",
        None,
        "megatron",
        "30",
        "h200",
    )
    assert "attempt" not in sub.metadata
    assert RecipeRun.of_job(sub.metadata) is None  # never mistaken for an attempt to resume


def _job(sid: str, meta: dict[str, str], status: JobStatus, start: int):
    return SimpleNamespace(
        submission_id=sid,
        job_id=None,
        metadata=meta,
        status=status,
        start_time=start,
        end_time=None,
        entrypoint="",
        message="",
        driver_exit_code=None,
    )


def test_list_files_exports_after_the_attempts_and_keeps_the_run_status():
    a1 = _job(
        "r-a1",
        RunMetadata(run="r", attempt=1, kind="recipe", recipe="x").to_ray(),
        JobStatus.FAILED,
        1,
    )
    a2 = _job(
        "r-a2",
        RunMetadata(run="r", attempt=2, kind="recipe", recipe="x").to_ray(),
        JobStatus.STOPPED,
        5,
    )
    ex = _job("r-export-1", {"run": "r", "kind": "export", "recipe": "x"}, JobStatus.RUNNING, 9)
    [group] = state.group([ex, a2, a1])
    assert [a["submission_id"] for a in group["attempts"]] == ["r-a1", "r-a2", "r-export-1"]
    assert group["status"] == "STOPPED"
