"""Saves before flex-start nodes end, held to the frameworks' own code that reads them.

NeMo RL's `TimeoutChecker` runs from its v0.4.0 source (tests/jobs/head/upstream/); veRL's
`should_save_ckpt_esi` from the installed veRL 0.6.0 package (its module imports torch, so the one
function is compiled from the package's file); the overrides are composed against the recipes' real
configs by Hydra (jobs/recipes/compose.py).
"""

from __future__ import annotations

import ast
import importlib.util
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from jobs.head import node_end
from jobs.recipes import compose
from jobs.recipes.catalogue import RECIPES, RunContext
from tools import verl_snapshot

UPSTREAM = Path(__file__).resolve().parent / "upstream"
DAY = 86400.0
WEEK = 7 * DAY
NOW = 1_800_000_000.0


def _nemo_timer() -> Any:
    spec = importlib.util.spec_from_file_location(
        "nemo_rl_timer_v040", UPSTREAM / "nemo_rl_v0_4_0_timer.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _verl_should_save() -> Any:
    """veRL 0.6.0's `should_save_ckpt_esi`, compiled alone from the installed package's file."""
    path = (
        verl_snapshot.verl_config_dir().parents[1]
        / "utils"
        / "checkpoint"
        / "checkpoint_manager.py"
    )
    tree = ast.parse(path.read_text())
    (fn,) = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "should_save_ckpt_esi"
    ]
    namespace: dict[str, Any] = {"os": __import__("os")}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), namespace)
    return namespace["should_save_ckpt_esi"]


def node(node_id: str, started_s: float, gpus: float = 8, state: str = "ALIVE", head: bool = False):
    return {
        "node_id": node_id,
        "state": state,
        "is_head_node": head,
        "start_time_ms": int(started_s * 1000),
        "resources_total": {"GPU": gpus} if gpus else {"CPU": 8},
    }


TABLE = [
    node("head", NOW - 30 * DAY, gpus=0, head=True),
    node("old-dead", NOW - 6.9 * DAY, state="DEAD"),
    node("cpu-only", NOW - 6.5 * DAY, gpus=0),
    node("gpu-a", NOW - 2 * DAY),
    node("gpu-b", NOW - 3 * DAY),  # the first to end
]


def test_the_first_alive_gpu_node_to_reach_its_maximum_run_ends_the_attempts_time():
    assert node_end.nodes_end_at(TABLE, WEEK, NOW) == NOW - 3 * DAY + WEEK
    # No GPU node yet (flex-start scales from zero): none can end before now + the maximum run.
    assert node_end.nodes_end_at(TABLE[:3], WEEK, NOW) == NOW + WEEK


def test_nodes_that_end_within_the_save_margin_are_not_capacity():
    table = [*TABLE, node("gpu-c", NOW - WEEK + node_end.SAVE_MARGIN_S - 60)]
    assert node_end.ending(table, WEEK, NOW, node_end.SAVE_MARGIN_S) == {"gpu-c"}
    assert node_end.ending(TABLE, WEEK, NOW, node_end.SAVE_MARGIN_S) == frozenset()


@pytest.mark.parametrize("start_s", [0.0, 300.0, node_end.NEMO_RL_START_S])
@pytest.mark.parametrize("step_s", [60.0, 900.0])
def test_nemo_rl_saves_before_its_nodes_end_by_its_own_timeout_checker(
    monkeypatch, step_s, start_s
):
    timer = _nemo_timer()
    ends_at = node_end.nodes_end_at(TABLE, WEEK, NOW)
    entrypoint, _env, said = node_end.for_attempt(
        "nemo-rl", "python run_grpo_math.py", {}, ends_at, NOW
    )
    value = shlex.split(entrypoint)[-1].removeprefix(node_end.NEMO_RL_KEY + "=")
    assert value in said
    clock = {"t": NOW + start_s}  # the trainer's timer starts after the submit and the loads
    monkeypatch.setattr(timer.time, "time", lambda: clock["t"])
    checker = timer.TimeoutChecker(timeout=value, fit_last_save_time=True)
    checker.start_iterations()
    saved_at = None
    while clock["t"] < ends_at:
        clock["t"] += step_s
        checker.mark_iteration()
        if checker.check_save():
            saved_at = clock["t"]
            break
    assert saved_at is not None, "NeMo RL never saved before the node ended"
    # The save starts with at least the margin left, however long the start took up to its
    # allowance, and not more than the allowance and two steps earlier.
    left = ends_at - saved_at
    assert left >= node_end.SAVE_MARGIN_S
    assert left <= node_end.SAVE_MARGIN_S + node_end.NEMO_RL_START_S + 2 * step_s


def test_verl_saves_before_its_nodes_end_by_its_own_expiry_check(monkeypatch):
    should_save = _verl_should_save()
    ends_at = node_end.nodes_end_at(TABLE, WEEK, NOW)
    entrypoint, env, said = node_end.for_attempt(
        "verl", "python3 -m verl.trainer.main_ppo", {"env_vars": {"A": "1"}}, ends_at, NOW
    )
    margin = float(shlex.split(entrypoint)[-1].removeprefix(node_end.VERL_MARGIN_KEY + "="))
    assert env["env_vars"]["A"] == "1" and node_end.VERL_EXPIRY_ENV in said
    monkeypatch.setenv(node_end.VERL_EXPIRY_ENV, env["env_vars"][node_end.VERL_EXPIRY_ENV])
    longest_step = 600.0
    clock = {"t": NOW}
    monkeypatch.setattr(time, "time", lambda: clock["t"])
    clock["t"] = ends_at - node_end.SAVE_MARGIN_S - longest_step - 1
    assert not should_save(max_steps_duration=longest_step, redundant_time=margin)
    # The last step that can still finish and save within the margin saves.
    clock["t"] = ends_at - node_end.SAVE_MARGIN_S - longest_step + 1
    assert should_save(max_steps_duration=longest_step, redundant_time=margin)


def test_a_users_own_setting_stands():
    mine = f"python run_grpo_math.py {node_end.NEMO_RL_KEY}=00:01:00:00"
    assert node_end.for_attempt("nemo-rl", mine, {}, NOW + WEEK, NOW)[:2] == (mine, {})
    verl = f"python3 -m verl.trainer.main_ppo {node_end.VERL_MARGIN_KEY}=5"
    entrypoint, env, _ = node_end.for_attempt("verl", verl, {}, NOW + WEEK, NOW)
    assert entrypoint == verl and env["env_vars"][node_end.VERL_EXPIRY_ENV] == str(int(NOW + WEEK))


def test_an_unknown_framework_is_refused_by_name():
    with pytest.raises(ValueError, match="'megatron'"):
        node_end.for_attempt("megatron", "python x.py", {}, NOW + WEEK, NOW)


def test_nodes_ending_sooner_than_the_margin_save_at_once():
    assert node_end.dd_hh_mm_ss(-5) == "00:00:00:00"
    assert node_end.dd_hh_mm_ss(DAY + 3661) == "01:01:01:01"


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_every_recipes_trainer_gets_the_setting_from_its_launcher_line(name):
    recipe = RECIPES[name]
    ctx = RunContext(run="r", nodes=2, gpus_per_node=8)
    entrypoint = recipe.render(ctx, {})
    given, env, _ = node_end.for_attempt(recipe.framework, entrypoint, {}, NOW + WEEK, NOW)
    added = given.removeprefix(entrypoint).strip()
    assert given.startswith(entrypoint) and added
    # Appended to the launcher, the last command of the shell entrypoint (Ray runs it with sh).
    assert shlex.split(given)[-len(shlex.split(added)) :] == shlex.split(added)
    cfg = compose.apply(
        recipe.framework, recipe.config_file, recipe.args(ctx, {}) + shlex.split(added)
    )
    if recipe.framework == "nemo-rl":
        assert compose.value(cfg, node_end.NEMO_RL_KEY) == node_end.dd_hh_mm_ss(
            WEEK - node_end.SAVE_MARGIN_S - node_end.NEMO_RL_START_S
        )
    else:
        assert (
            compose.value(cfg, node_end.VERL_MARGIN_KEY)
            == node_end.SAVE_MARGIN_S - node_end.VERL_RESERVED_S
        )
        assert compose.value(cfg, "trainer.save_freq") > 0  # veRL checks the expiry only then
        assert env["env_vars"][node_end.VERL_EXPIRY_ENV] == str(int(NOW + WEEK))


def test_nemo_rls_early_stop_after_the_deadline_save_is_recognised():
    # Ray's log repeats the entrypoint, which may hold the words: only the driver's line counts.
    echoed = f"Running entrypoint for job r-a1: python -c 'print({node_end.NEMO_RL_STOPPED!r})'"
    assert not node_end.stopped_for_node_end(echoed + "\ndone\n")
    assert node_end.stopped_for_node_end(
        "Saving checkpoint\nTimeout has been reached, stopping training early\n"
    )
    assert not node_end.stopped_for_node_end(
        "Max number of steps has been reached, stopping training early\n"
    )
