"""An attempt's first step: a staged model is used offline; an unstaged one is staged once, here."""

from __future__ import annotations

from pathlib import Path

from jobs.staging import record
from tests.fakehub import FakeHub, Repo
from tests.jobs.staging.conftest import run_module

ENSURE = "jobs.staging.ensure"


def test_a_staged_model_is_used_without_contacting_the_hub(tmp_path: Path, hub: FakeHub,
                                                           tiny: Repo) -> None:
    home = tmp_path / "hf"
    assert run_module("jobs.staging.stage", ["--model", "org/tiny"], home, hub.url).returncode == 0
    hub.requests.clear()
    tiny.push({"config.json": b"{}"})  # main moved on: the staged commit still runs
    done = run_module(ENSURE, ["--model", "org/tiny"], home, hub.url)
    assert done.returncode == 0, done.stderr
    assert "loads it offline" in done.stdout and hub.requests == []


def test_an_unstaged_model_is_staged_by_the_attempt_itself_once(tmp_path: Path, hub: FakeHub,
                                                                tiny: Repo) -> None:
    home = tmp_path / "hf"
    done = run_module(ENSURE, ["--model", "org/tiny"], home, hub.url)
    assert done.returncode == 0, done.stderr
    assert "staging it now" in done.stdout
    staged = record.load(home, "org/tiny")
    assert staged is not None and staged.commit == tiny.branches["main"]
    gets = len(hub.file_gets())
    assert run_module(ENSURE, ["--model", "org/tiny"], home, hub.url).returncode == 0
    assert len(hub.file_gets()) == gets


def test_an_unstaged_model_with_no_hub_fails_the_attempt_with_the_reason(
        tmp_path: Path, hub: FakeHub) -> None:
    home = tmp_path / "hf"
    done = run_module(ENSURE, ["--model", "org/absent"], home, hub.url)
    assert done.returncode == 1
    assert "'org/absent' is not on the Hub" in done.stderr
    assert "HF_HUB_OFFLINE=1" in done.stderr


def test_a_local_directory_needs_no_staging(tmp_path: Path, hub: FakeHub) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    done = run_module(ENSURE, ["--model", str(weights)], tmp_path / "hf", hub.url)
    assert done.returncode == 0 and "nothing to stage" in done.stdout
    assert hub.requests == []
