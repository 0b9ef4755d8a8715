"""The Young/Daly save period (jobs/runs/save_period.py) and the recipes' save keys."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.recipes.catalogue import RECIPES
from jobs.runs import save_period as sp
from jobs.runs.goodput import Step


def test_the_interval_is_dalys_sqrt_2cm_minus_c():
    assert sp.young_daly_s(60.0, 8 * 3600.0) == pytest.approx(math.sqrt(2 * 60 * 28800) - 60)


def test_a_save_longer_than_two_mean_intervals_saves_once_per_interval():
    assert sp.young_daly_s(10_000.0, 3600.0) == 3600.0


@pytest.mark.parametrize("save_s, mtbi_s", [(0.0, 3600.0), (60.0, 0.0), (-1.0, 3600.0)])
def test_a_zero_or_negative_save_or_interval_is_refused_by_name(save_s, mtbi_s):
    with pytest.raises(ValueError, match="must be > 0"):
        sp.young_daly_s(save_s, mtbi_s)


@given(
    save_s=st.floats(1.0, 600.0),
    mtbi_h=st.floats(1.0, 500.0),
    restart_s=st.floats(0.0, 1800.0),
    off_by=st.sampled_from([0.5, 0.7, 1.4, 2.0]),
)
def test_no_other_interval_wastes_less_than_the_chosen_one(save_s, mtbi_h, restart_s, off_by):
    """The first-order waste (saves, half a period redone and a restart per interruption) is
    least at the chosen interval, within the first-order model's own error (C / M)."""
    mtbi_s = mtbi_h * 3600
    best = sp.young_daly_s(save_s, mtbi_s)
    at_best = sp.waste_fraction(best, save_s, mtbi_s, restart_s)
    assert at_best <= sp.waste_fraction(best * off_by, save_s, mtbi_s, restart_s) + save_s / mtbi_s


def test_the_prior_is_per_node_so_a_bigger_run_is_interrupted_more_often():
    one, _ = sp.mtbi("spot", 1, 0.0, 0)
    two, source = sp.mtbi("spot", 2, 0.0, 0)
    assert one == sp.SPOT_NODE_HOURS * 3600 and two == one / 2
    assert source == "prior (spot, 2 nodes)"
    assert sp.mtbi("reservation", 2, 0.0, 0)[0] > 100 * two


def test_the_runs_own_interruptions_replace_the_prior_as_they_come():
    prior, _ = sp.mtbi("spot", 2, 0.0, 0)  # 8 h
    value, source = sp.mtbi("spot", 2, 40 * 3600.0, 19)  # 19 interruptions in 40 h
    assert value == pytest.approx((prior + 40 * 3600) / 20)
    assert value < prior / 3 and "observed: 19 interruption(s) in 40.0 h" in source


def test_an_unknown_capacity_mode_is_priced_as_spot_and_says_so():
    assert sp.mtbi(None, 1, 0.0, 0)[1] == "prior (spot, 1 node)"


@pytest.mark.parametrize(
    "interval_s, step_s, align, expected",
    [
        (1000.0, 100.0, None, 10),
        (30.0, 100.0, None, 1),
        (1000.0, 100.0, 4, 12),
        (100.0, 100.0, 10, 10),
    ],
)
def test_the_interval_becomes_whole_steps_on_the_alignment(interval_s, step_s, align, expected):
    assert sp.period_steps(interval_s, step_s, align) == expected


def test_advice_waits_for_a_timed_step_and_a_timed_save():
    steps = {1: Step(100.0), 2: Step(100.0)}
    assert sp.advise(sp.measured(steps, [], 200.0), "spot", 2) is None


def test_advice_from_measured_medians():
    steps = {n: Step(100.0 + n % 3, 60.0 if n % 10 == 0 else 0.0) for n in range(1, 31)}
    seen = sp.measured(steps, [300.0], 3 * 3600.0)
    assert seen.step_s == 101.0 and seen.save_s == 60.0 and seen.restart_s == 300.0
    advice = sp.advise(seen, "spot", 2, align=10)
    assert advice is not None
    m = (8 * 3600 + 3 * 3600) / 2
    assert advice.mtbi_s == pytest.approx(m)
    assert advice.interval_s == pytest.approx(math.sqrt(2 * 60 * m) - 60)
    assert advice.period_steps == 20 and advice.aligned_to == 10  # 14.7 steps, up to 20
    line = sp.line_of(advice.as_json(), 10)
    assert line.startswith("every 10 steps; Young/Daly: every 20 steps (25 min")
    assert "a multiple of val_period 10" in line and "observed: 1 interruption(s)" in line


@pytest.mark.parametrize(
    "recipe, user, expected",
    [
        ("nemo-rl-grpo-math", {}, 10),  # val:accuracy ranks saves that land on validation
        ("nemo-rl-grpo-math", {"grpo.val_period": "5"}, 5),
        ("nemo-rl-grpo-math", {"checkpointing.metric_name": "train:reward"}, None),
        ("nemo-rl-grpo-math-codelab", {}, None),  # metric_name null: ranked by step
        ("verl-grpo-gsm8k", {}, None),
    ],
)
def test_nemo_rl_saves_align_to_validation_unless_ranked_otherwise(recipe, user, expected):
    assert RECIPES[recipe].save_alignment(user) == expected


def test_every_recipe_names_its_frameworks_save_key_and_sets_it():
    keys = {"nemo-rl": "checkpointing.save_period", "verl": "trainer.save_freq"}
    for recipe in RECIPES.values():
        assert recipe.save_key == keys[recipe.framework]
        assert int(recipe.value_of(recipe.save_key, {})) > 0
