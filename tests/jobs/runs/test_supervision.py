"""The supervision a run gets from its stack's GPUs: on GPUs that can be taken back a submitted run
is supervised unless the user said otherwise (a plain `submit --stack` on spot would end at its
first preemption), GPUs that scale on demand are asked for, and flex-start attempts save before
their nodes end; every command that submits gets the same defaults (the table below)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from typer.testing import CliRunner

from components.catalogue import CAPACITY_MODES
from components.contract import RUNS_ROOT
from jobs.cli.app import app
from jobs.client.net import free_port
from jobs.runs import address, stack, supervision
from jobs.runs.handoff import DEFAULT_MAX_PREEMPTIONS, Options
from tests.jobs.conftest import stack_outputs


@pytest.mark.parametrize("provisioning", ["spot", "flex-start"])
def test_a_plain_run_on_preemptible_gpus_is_supervised_with_its_record_where_rearmed(
    provisioning: str,
) -> None:
    chosen, note = supervision.surviving_defaults(Options(), 0, provisioning, "dev")
    assert chosen.supervised(0)
    assert chosen.max_preemptions == DEFAULT_MAX_PREEMPTIONS and chosen.runs_root == RUNS_ROOT
    assert f"stack dev has {provisioning} GPUs" in note and "--max-preemptions 0" in note


@pytest.mark.parametrize("provisioning", ["on-demand", "reservation", None])
def test_gpus_that_stay_leave_the_run_as_asked(provisioning: str | None) -> None:
    assert supervision.surviving_defaults(Options(), 0, provisioning, "dev") == (Options(), "")


def test_an_explicit_zero_preemptions_keeps_the_run_unsupervised() -> None:
    asked = Options(max_preemptions=0)
    assert supervision.surviving_defaults(asked, 0, "spot", "dev") == (asked, "")


def test_a_supervised_run_keeps_its_budgets_and_gets_the_watched_runs_root() -> None:
    chosen, note = supervision.surviving_defaults(Options(stall_timeout_s=600), 3, "spot", "dev")
    assert chosen == Options(stall_timeout_s=600, runs_root=RUNS_ROOT)
    assert "record goes to" in note


def test_a_chosen_runs_root_is_kept_without_a_note() -> None:
    asked = Options(runs_root="/lustre/team-a/runs")
    assert supervision.surviving_defaults(asked, 0, "spot", "dev") == (asked, "")


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
    """Defaults that survive a preemption apply to `run` as well as `submit` (its supervised
    attempts carry --gpus/--cpus/--resource)."""
    monkeypatch.setattr(stack, "read", lambda name: _outputs(provisioning))

    _no_cluster(monkeypatch)
    result = CliRunner().invoke(app, ["run", "--stack", "dev", "--gpus", "1", "--", "nvidia-smi"])
    assert result.exit_code == 99
    assert ("the run is supervised (up to 100 preemptions" in result.stderr) is noted, result.stderr


def test_a_supervised_run_on_flex_start_gpus_saves_before_its_nodes_end() -> None:
    chosen, note = supervision.saves_before_node_end(Options(max_preemptions=100), 0, 48, "verl")
    assert (chosen.node_max_run_s, chosen.save_before_node_end) == (48 * 3600.0, "verl")
    assert "run at most 48 h" in note


@pytest.mark.parametrize(
    ("asked", "hours"), [(Options(max_preemptions=0), 48), (Options(max_preemptions=5), None)]
)
def test_no_save_before_a_node_end_unsupervised_or_without_a_maximum_run(
    asked: Options, hours: int | None
) -> None:
    assert supervision.saves_before_node_end(asked, 0, hours, "nemo-rl") == (asked, "")


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
    """Neither framework makes a request Ray's autoscaler sees while the GPUs are missing, so a
    run on a scaled-to-zero stack is supervised and its supervisor asks."""
    chosen, note = supervision.gpus_on_request(Options(), 0, "on-demand", 8, 16, "dev")
    assert chosen.supervised(0) and chosen.request_gpus and chosen.gpus_per_node == 8
    assert chosen.max_preemptions == DEFAULT_MAX_PREEMPTIONS and chosen.runs_root == RUNS_ROOT
    assert "asks Ray's autoscaler for 16 GPUs (2 node(s))" in note
    assert "the run is supervised" in note


def test_a_supervised_run_on_demand_keeps_its_budgets() -> None:
    asked = Options(max_preemptions=7, runs_root="/lustre/team-a/runs")
    chosen, note = supervision.gpus_on_request(asked, 2, "on-demand", 8, 8, "dev")
    assert (chosen.max_preemptions, chosen.runs_root) == (7, "/lustre/team-a/runs")
    assert chosen.request_gpus and "the run is supervised" not in note


@pytest.mark.parametrize(("scaling", "gpus"), [("static", 16), (None, 16), ("on-demand", 0)])
def test_static_gpus_or_a_run_without_gpus_ask_for_nothing(scaling: str | None, gpus: int) -> None:
    assert supervision.gpus_on_request(Options(), 0, scaling, 8, gpus, "dev") == (Options(), "")


def test_an_explicitly_unsupervised_run_on_demand_is_warned_that_nobody_asks() -> None:
    asked = Options(max_preemptions=0)
    chosen, note = supervision.gpus_on_request(asked, 0, "on-demand", 8, 8, "dev")
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


# ------------------------------------------ every command that submits, on every capacity mode

# What each capacity mode's stack exports (its default gpu.scaling; flex-start's 7-day node end).
STACKS = {
    "spot": {"gpuScaling": "on-demand"},
    "reservation": {"gpuScaling": "static"},
    "on-demand": {"gpuScaling": "on-demand"},
    "flex-start": {"gpuScaling": "on-demand", "gpuMaxRunHours": 168},
}
# The framework each command passes: a recipe run's attempts can save before a node ends, a
# command's cannot (`resume-command` is `submit --resume` of a run started with `run`).
FRAMEWORK = {"submit": "nemo-rl", "run": "", "resume": "nemo-rl", "resume-command": ""}

SUPERVISED = Options(max_preemptions=DEFAULT_MAX_PREEMPTIONS, runs_root=RUNS_ROOT)
ASKING = replace(SUPERVISED, request_gpus=True, gpus_per_node=8)
SAVING = replace(ASKING, node_max_run_s=168 * 3600.0, save_before_node_end="nemo-rl")
ASKS = "asks Ray's autoscaler for 16 GPUs (2 node(s)) and releases them when the run ends"
SAVES = "flex-start GPU nodes run at most 168 h: each attempt saves a checkpoint"


def _preempted(mode: str) -> str:
    return f"stack dev has {mode} GPUs: the run is supervised (up to {DEFAULT_MAX_PREEMPTIONS}"


# (capacity mode, command) -> the options chosen for a plain run needing 16 GPUs, and what each
# note says, in order.
TABLE: dict[tuple[str, str], tuple[Options, tuple[str, ...]]] = {
    **{("spot", c): (ASKING, (_preempted("spot"), f"{ASKS}")) for c in FRAMEWORK},
    **{("reservation", c): (Options(), ()) for c in FRAMEWORK},
    **{
        ("on-demand", c): (ASKING, (f"{ASKS} (the run is supervised, its record in {RUNS_ROOT})",))
        for c in FRAMEWORK
    },
    ("flex-start", "submit"): (SAVING, (_preempted("flex-start"), ASKS, SAVES)),
    ("flex-start", "resume"): (SAVING, (_preempted("flex-start"), ASKS, SAVES)),
    ("flex-start", "run"): (ASKING, (_preempted("flex-start"), ASKS)),
    ("flex-start", "resume-command"): (ASKING, (_preempted("flex-start"), ASKS)),
}


def test_the_table_covers_every_capacity_mode_and_every_command_that_submits() -> None:
    assert set(STACKS) == set(CAPACITY_MODES)
    assert set(TABLE) == {(mode, command) for mode in STACKS for command in FRAMEWORK}


@pytest.mark.parametrize(("mode", "command"), sorted(TABLE), ids="-".join)
def test_supervision_defaults_by_capacity_mode_and_command(mode: str, command: str) -> None:
    outputs = stack_outputs(gpuProvisioning=mode, **STACKS[mode])
    chosen = supervision.supervision_defaults(
        outputs, "dev", Options(), 0, 16, framework=FRAMEWORK[command]
    )
    options, notes = TABLE[mode, command]
    assert chosen.options == options
    assert len(chosen.notes) == len(notes), chosen.notes
    for said, expected in zip(chosen.notes, notes, strict=True):
        assert expected in said, (said, expected)
        if "autoscaler" in expected:  # whether it says the run became supervised is its end
            assert said.endswith(expected), (said, expected)


@pytest.mark.parametrize("command", sorted(FRAMEWORK))
def test_a_cluster_named_by_address_keeps_the_run_as_asked(command: str) -> None:
    asked = Options(stall_timeout_s=60)
    chosen = supervision.supervision_defaults(None, "", asked, 2, 16, FRAMEWORK[command])
    assert chosen == supervision.Supervision(asked)
