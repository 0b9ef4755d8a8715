"""Submission ids, attempts and metadata."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime

import pytest

from jobs.common.errors import UsageError
from jobs.runs import plan as submission


def test_default_run_name_is_readable_utc_time_to_the_millisecond_and_a_tag():
    when = datetime(2026, 11, 30, 4, 52, 7, 83_000, tzinfo=UTC)
    assert submission.default_run_name("grpo-math", when, "xy") == "grpo-math-20261130-045207-083xy"


def test_default_run_names_in_one_millisecond_differ_and_sort_by_time():
    """Names were unique per second only, so a shell loop's second `run` failed."""
    when = datetime(2026, 11, 30, 4, 52, 7, tzinfo=UTC)
    names = {submission.default_run_name("run", when) for _ in range(50)}
    # 24 x 24 tags: 50 draws collide ~2.1 times on average (50 x 49 / 2 / 576); 11 or more
    # (under 40 names) has a probability near 1e-5 (Poisson), where 45 failed about 1 run in 60.
    assert len(names) >= 40
    later = submission.default_run_name("run", when.replace(microsecond=1000))
    assert all(n < later for n in names)
    assert all(submission.check_run_name(n) for n in names | {later})


def test_command_run_records_the_working_dirs_commit_not_the_callers(tmp_path):
    """`run --working-dir DIR` recorded rl-on-gke's own HEAD."""
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "HOME": str(tmp_path),
        "PATH": os.environ["PATH"],
    }
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print(1)\n")
    for args in (["init", "-q"], ["add", "train.py"], ["commit", "-qm", "c"]):
        subprocess.run(["git", *args], cwd=code, env=env, check=True)
    theirs = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=code, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    ours = submission.git_commit()
    sub = submission.for_command(["python", "train.py"], "r", code, None, ours)
    assert sub.metadata["git_commit"] == theirs != ours
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "x.py").write_text("")
    sub = submission.for_command(["python", "x.py"], "r", plain, None, ours)
    assert sub.metadata["git_commit"] == "unknown"


@pytest.mark.parametrize("name", ["Has Space", "../up", "", "x" * 64, "-lead"])
def test_bad_run_names_are_refused(name):
    with pytest.raises(UsageError):
        submission.check_run_name(name)


def test_next_attempt_keeps_the_command_and_changes_only_id_and_attempt():
    first = submission.for_command(["python", "-c", "print(1)"], "r1", None, "dev", "abc")
    second = submission.for_attempt(first, 2)
    assert second.submission_id == "r1-a2" and second.metadata["attempt"] == "2"
    assert second.entrypoint == first.entrypoint and second.runtime_env == first.runtime_env
    assert {k: v for k, v in second.metadata.items() if k != "attempt"} == {
        k: v for k, v in first.metadata.items() if k != "attempt"
    }
    assert first.metadata["stack"] == "dev" and first.metadata["git_commit"] == "abc"


def test_git_commit_of_this_repo_is_a_sha():
    commit = submission.git_commit()
    assert len(commit.split("-")[0]) == 40


HF = "hf_" + "Z" * 34


@pytest.mark.parametrize(
    "command, what",
    [
        (["env", f"HF_TOKEN={HF}", "python", "x.py"], "a token-shaped value"),
        (["python", "x.py", HF], "a token-shaped value"),
        (["env", "WANDB_API_KEY=abc123", "python", "x.py"], "a value for WANDB_API_KEY"),
        (["python", "train.py", "--hf-token=abc123"], "a value for hf-token"),
        (["python", "train.py", "--api-key=abc123"], "a value for api-key"),
        (["bash", "-c", "export MY_SECRET=abc123 && python x.py"], "a value for MY_SECRET"),
        (["python", "-c", "login(token='abc123')"], "a value for token"),
    ],
)
def test_a_command_holding_a_credential_is_refused_without_its_value(command, what):
    with pytest.raises(UsageError) as e:
        submission.for_command(command, "r1", None, None, "abc")
    line = e.value.line()
    assert line.startswith(f"error: the command holds {what}, refused (the value is not shown)")
    assert "abc123" not in line and HF not in line


@pytest.mark.parametrize(
    "command",
    [
        ["python", "train.py", "--tokenizer=qwen", "--max-new-tokens=5"],
        ["bash", "-c", "HF_TOKEN=$HF_TOKEN python x.py"],
        ["python", "-c", "import os; t = os.environ['HF_TOKEN']; print(len(t))"],
        ["python", "-c", "import os; token=os.getenv('HF_TOKEN')"],
    ],
)
def test_commands_that_only_read_credentials_from_the_pod_are_accepted(command):
    sub = submission.for_command(command, "r1", None, None, "abc")
    assert sub.entrypoint.startswith(command[0])
