"""The CLI <-> supervisor protocol: one Spec both sides read, ids, kinds and settings."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from jobs.head import protocol
from jobs.head.protocol import Settings, Spec

JOBS = Path(__file__).resolve().parents[3] / "jobs"


def spec(**changes):
    values = dict(
        run="r",
        first_attempt=2,
        max_restarts=3,
        gpus_needed=16,
        checkpoint_dir="/lustre/runs/r/checkpoints",
        entrypoint="python train.py",
        runtime_env={"working_dir": "gcs://_ray_pkg_x.zip"},
        metadata={"run": "r", "attempt": "2"},
    )
    values.update(changes)
    return Spec(**values)


def test_a_spec_survives_the_trip_through_job_metadata():
    sent = spec()
    assert Spec.from_json(sent.to_json()) == sent
    assert sent.attempt_id(3) == "r-a3"


def test_a_spec_from_another_version_is_refused_by_name():
    text = json.dumps({**json.loads(spec().to_json()), "max_migrations": 5})
    with pytest.raises(ValueError, match="max_migrations"):
        Spec.from_json(text)


def test_the_survival_settings_ride_in_the_spec_with_generous_defaults():
    sent = spec()
    assert (sent.max_preemptions, sent.stall_timeout_s, sent.runs_root, sent.keep) == (
        100,
        0.0,
        "",
        0,
    )
    assert Spec.from_json(sent.to_json()).to_dict() == sent.to_dict()


def test_ids_round_trip():
    assert protocol.attempt_id("grpo-a-1", 12) == "grpo-a-1-a12"
    assert protocol.supervisor_number(protocol.supervisor_id("run-s2", 7)) == 7
    assert protocol.supervisor_number("run-a1") == 0
    assert protocol.supervisor_entrypoint("r-s1") == "python -m jobs.head.supervisor r-s1"


def test_settings_come_from_the_environment_with_production_defaults():
    assert Settings.from_env({}) == Settings(
        poll_s=1.0, max_wait_s=1800.0, settle_s=60.0, progress_s=60.0
    )
    assert Settings.from_env({"JOBS_SUPERVISOR_MAX_WAIT_S": "30"}).max_wait_s == 30.0
    env = {"JOBS_SUPERVISOR_POLL_S": "0.2", "HF_TOKEN": "hf_x", "JOBS_OTHER": "1"}
    assert Settings.forwarded(env) == {"JOBS_SUPERVISOR_POLL_S": "0.2"}


def test_the_supervisor_module_named_by_the_protocol_exists():
    module = JOBS.parent / (protocol.SUPERVISOR_MODULE.replace(".", "/") + ".py")
    assert module.is_file()


def _hand_written_kinds(path: Path) -> set[str]:
    """Kinds compared with, or stored under a "kind" key, as string literals."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare) and all(
            isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops
        ):
            found |= {
                n.value
                for n in [node.left, *node.comparators]
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            }
        elif isinstance(node, ast.Dict):
            found |= {
                v.value
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == "kind" and isinstance(v, ast.Constant)
            }
        elif (
            isinstance(node, ast.keyword)
            and node.arg == "kind"
            and isinstance(node.value, ast.Constant)
        ):
            found.add(node.value.value)
    return found


def _settings_spelled(path: Path) -> set[str]:
    return {
        n.value
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Constant) and n.value in Settings.ENV.values()
    }


def test_protocol_words_are_written_only_in_the_protocol():
    # A kind or a setting spelled by hand elsewhere would drift from the protocol unnoticed.
    kinds = {protocol.RECIPE, protocol.COMMAND, protocol.EXPORT, protocol.SUPERVISOR}
    for path in JOBS.rglob("*.py"):
        if path.name == "protocol.py":
            continue
        found = (_hand_written_kinds(path) & kinds) | _settings_spelled(path)
        assert not found, f"{path.relative_to(JOBS.parent)} spells {sorted(found)}"


def test_lease_and_backoff_knobs_come_from_the_environment():
    assert (Settings().lease_s, Settings().backoff_max_s) == (15.0, 60.0)
    assert Settings.from_env({"JOBS_SUPERVISOR_LEASE_S": "3"}).lease_s == 3.0
    assert "JOBS_SUPERVISOR_LEASE_S" in Settings.forwarded({"JOBS_SUPERVISOR_LEASE_S": "3"})


def test_live_job_ids_are_the_runs_unended_jobs_of_a_kind_in_order():
    from types import SimpleNamespace

    from jobs.client.types import JobStatus

    def job(sid, kind, run="r", status=JobStatus.RUNNING, metadata=True):
        meta = {"kind": kind, "run": run} if metadata else None
        return SimpleNamespace(submission_id=sid, metadata=meta, status=status)

    jobs = [
        job("r-s2", protocol.SUPERVISOR),
        job("r-e1", protocol.EXPORT),
        job("q-s1", protocol.SUPERVISOR, run="q"),
        job("r-s1", protocol.SUPERVISOR, status=JobStatus.FAILED),
        job("plain", protocol.SUPERVISOR, metadata=False),
        job("r-s3", protocol.SUPERVISOR, status=JobStatus.PENDING),
    ]
    assert protocol.live_job_ids(jobs, protocol.SUPERVISOR, "r") == ["r-s2", "r-s3"]
    assert protocol.live_job_ids(jobs, protocol.EXPORT, "r") == ["r-e1"]
    assert protocol.live_job_ids(jobs, protocol.STOP, "r") == []


def test_a_spec_from_before_eval_at_end_loads_without_one():
    old = {k: v for k, v in json.loads(spec().to_json()).items() if not k.startswith("eval_")}
    loaded = Spec.from_json(json.dumps(old))
    assert loaded.eval_at_end is False and loaded.eval_job is None


def test_a_spec_asking_for_an_eval_at_the_end_carries_its_job_through_metadata():
    job = {"entrypoint": f"python3 -m jobs.head.eval_job --step {protocol.EVAL_STEP}"}
    sent = spec(eval_at_end=True, eval_job=job)
    assert Spec.from_json(sent.to_json()) == sent
    assert Spec.from_json(sent.to_json()).eval_job == job
