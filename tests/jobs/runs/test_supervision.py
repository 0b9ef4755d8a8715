"""On a stack whose GPUs can be taken back, a submitted run is supervised unless the user said
otherwise (issue 24 item 7: a plain `submit --stack` on spot ended at its first preemption)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from components.contract import RUNS_ROOT
from jobs.cli.app import app
from jobs.client.net import free_port
from jobs.runs import address, handoff, stack
from jobs.runs.handoff import DEFAULT_MAX_PREEMPTIONS, Options
from tests.jobs.conftest import stack_outputs


@pytest.mark.parametrize("provisioning", ["spot", "flex-start"])
def test_a_plain_run_on_preemptible_gpus_is_supervised_with_its_record_where_rearmed(
    provisioning: str,
) -> None:
    chosen, note = handoff.surviving_defaults(Options(), 0, provisioning, "dev")
    assert chosen.supervised(0)
    assert chosen.max_preemptions == DEFAULT_MAX_PREEMPTIONS and chosen.runs_root == RUNS_ROOT
    assert f"stack dev has {provisioning} GPUs" in note and "--max-preemptions 0" in note


@pytest.mark.parametrize("provisioning", ["on-demand", "reservation", None])
def test_gpus_that_stay_leave_the_run_as_asked(provisioning: str | None) -> None:
    assert handoff.surviving_defaults(Options(), 0, provisioning, "dev") == (Options(), "")


def test_an_explicit_zero_preemptions_keeps_the_run_unsupervised() -> None:
    asked = Options(max_preemptions=0)
    assert handoff.surviving_defaults(asked, 0, "spot", "dev") == (asked, "")


def test_a_supervised_run_keeps_its_budgets_and_gets_the_watched_runs_root() -> None:
    chosen, note = handoff.surviving_defaults(Options(stall_timeout_s=600), 3, "spot", "dev")
    assert chosen == Options(stall_timeout_s=600, runs_root=RUNS_ROOT)
    assert "record goes to" in note


def test_a_chosen_runs_root_is_kept_without_a_note() -> None:
    asked = Options(runs_root="/lustre/team-a/runs")
    assert handoff.surviving_defaults(asked, 0, "spot", "dev") == (asked, "")


def _no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """Contacting the cluster ends the command with exit 99: what was said before it is the test."""

    def no_connect(*args: object, **kwargs: object) -> None:
        raise SystemExit(99)

    monkeypatch.setattr(address, "connect", no_connect)


def _outputs(provisioning: str | None) -> stack.StackOutputs:
    return stack_outputs(
        rayDashboardPort=free_port(), rayFramework="nemo-rl", gpuProvisioning=provisioning
    )


@pytest.mark.parametrize(("provisioning", "noted"), [("spot", True), ("on-demand", False)])
def test_submit_says_it_supervises_before_it_contacts_the_cluster(
    monkeypatch: pytest.MonkeyPatch, provisioning: str, noted: bool
) -> None:
    monkeypatch.setattr(stack, "read", lambda name: _outputs(provisioning))

    _no_cluster(monkeypatch)
    result = CliRunner().invoke(
        app, ["submit", "nemo-rl-grpo-math", "--stack", "dev", "--name", "grpo-1"]
    )
    assert result.exit_code == 99
    assert ("the run is supervised" in result.stderr) is noted, result.stderr


@pytest.mark.parametrize(("provisioning", "noted"), [("flex-start", True), ("reservation", False)])
def test_run_on_preemptible_gpus_is_supervised_too(
    monkeypatch: pytest.MonkeyPatch, provisioning: str, noted: bool
) -> None:
    """Issue 24 "defaults that survive": `run` as well as `submit` (its supervised attempts now
    carry --gpus/--cpus/--resource, item 11)."""
    monkeypatch.setattr(stack, "read", lambda name: _outputs(provisioning))

    _no_cluster(monkeypatch)
    result = CliRunner().invoke(app, ["run", "--stack", "dev", "--gpus", "1", "--", "nvidia-smi"])
    assert result.exit_code == 99
    assert ("the run is supervised (up to 100 preemptions" in result.stderr) is noted, result.stderr


def test_a_supervised_run_on_flex_start_gpus_saves_before_its_nodes_end() -> None:
    chosen, note = handoff.saves_before_node_end(Options(max_preemptions=100), 0, 48, "verl")
    assert (chosen.node_max_run_s, chosen.save_before_node_end) == (48 * 3600.0, "verl")
    assert "run at most 48 h" in note


@pytest.mark.parametrize(
    ("asked", "hours"), [(Options(max_preemptions=0), 48), (Options(max_preemptions=5), None)]
)
def test_no_save_before_a_node_end_unsupervised_or_without_a_maximum_run(
    asked: Options, hours: int | None
) -> None:
    assert handoff.saves_before_node_end(asked, 0, hours, "nemo-rl") == (asked, "")


def test_submit_on_flex_start_says_when_attempts_save_before_it_contacts_the_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outputs = stack_outputs(
        rayDashboardPort=free_port(),
        rayFramework="nemo-rl",
        gpuProvisioning="flex-start",
        gpuMaxRunHours=72,
    )
    monkeypatch.setattr(stack, "read", lambda name: outputs)

    _no_cluster(monkeypatch)
    result = CliRunner().invoke(
        app, ["submit", "nemo-rl-grpo-math", "--stack", "dev", "--name", "grpo-1"]
    )
    assert result.exit_code == 99
    assert "the run is supervised" in result.stderr
    assert "flex-start GPU nodes run at most 72 h" in result.stderr, result.stderr


def test_gpus_that_scale_on_demand_are_asked_for_by_a_supervised_run() -> None:
    """Issue 27: neither framework makes a request Ray's autoscaler sees while the GPUs are
    missing, so a run on a scaled-to-zero stack is supervised and its supervisor asks."""
    chosen, note = handoff.gpus_on_request(Options(), 0, "on-demand", 8, 16, "dev")
    assert chosen.supervised(0) and chosen.request_gpus and chosen.gpus_per_node == 8
    assert chosen.max_preemptions == DEFAULT_MAX_PREEMPTIONS and chosen.runs_root == RUNS_ROOT
    assert "asks Ray's autoscaler for 16 GPUs (2 node(s))" in note
    assert "the run is supervised" in note


def test_a_supervised_run_on_demand_keeps_its_budgets() -> None:
    asked = Options(max_preemptions=7, runs_root="/lustre/team-a/runs")
    chosen, note = handoff.gpus_on_request(asked, 2, "on-demand", 8, 8, "dev")
    assert (chosen.max_preemptions, chosen.runs_root) == (7, "/lustre/team-a/runs")
    assert chosen.request_gpus and "the run is supervised" not in note


@pytest.mark.parametrize(("scaling", "gpus"), [("static", 16), (None, 16), ("on-demand", 0)])
def test_static_gpus_or_a_run_without_gpus_ask_for_nothing(scaling: str | None, gpus: int) -> None:
    assert handoff.gpus_on_request(Options(), 0, scaling, 8, gpus, "dev") == (Options(), "")


def test_an_explicitly_unsupervised_run_on_demand_is_warned_that_nobody_asks() -> None:
    asked = Options(max_preemptions=0)
    chosen, note = handoff.gpus_on_request(asked, 0, "on-demand", 8, 8, "dev")
    assert chosen == asked and not chosen.request_gpus
    assert note.startswith("warning:") and "asks nobody for them" in note


def test_submit_on_a_stack_that_scales_on_demand_says_it_asks_before_it_contacts_the_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outputs = stack_outputs(
        rayDashboardPort=free_port(),
        rayFramework="nemo-rl",
        gpuProvisioning="on-demand",
        gpuScaling="on-demand",
    )
    monkeypatch.setattr(stack, "read", lambda name: outputs)

    _no_cluster(monkeypatch)
    result = CliRunner().invoke(
        app, ["submit", "nemo-rl-grpo-math", "--stack", "dev", "--name", "grpo-1"]
    )
    assert result.exit_code == 99
    assert "GPU nodes scale on demand: the run's supervisor asks Ray's autoscaler" in (
        result.stderr
    ), result.stderr
