"""`--checkpoint-every N|auto` as an override of the recipe's save key (jobs/runs/save_choice.py)."""

from __future__ import annotations

import pytest

from jobs.common.errors import UsageError
from jobs.recipes.catalogue import RECIPES
from jobs.recipes.overrides import Override
from jobs.runs import save_choice

ADVICE = {
    "period_steps": 14,
    "save_s": 20.0,
    "step_s": 100.0,
    "mtbi_s": 28800.0,
    "mtbi_source": "prior (spot, 2 nodes)",
}


@pytest.mark.parametrize(
    "text, expected", [(None, None), ("auto", "auto"), (" AUTO ", "auto"), ("12", 12)]
)
def test_the_flag_is_a_step_count_or_auto(text, expected):
    assert save_choice.parse_flag(text) == expected


@pytest.mark.parametrize("text", ["0", "-1", "1.5", "often", ""])
def test_anything_else_is_refused_naming_the_flag_and_the_value(text):
    with pytest.raises(UsageError, match=f"--checkpoint-every {text!r} is neither"):
        save_choice.parse_flag(text)


def test_a_step_count_replaces_the_recorded_save_key_and_keeps_the_rest():
    recipe = RECIPES["verl-grpo-gsm8k"]
    given = [Override("trainer.save_freq", "5"), Override("trainer.total_epochs", "2")]
    chosen, note = save_choice.choose(recipe, given, 8, None, "r")
    assert [str(o) for o in chosen] == ["trainer.total_epochs=2", "trainer.save_freq=8"]
    assert note == "checkpoint every 8 steps (trainer.save_freq=8, as asked)"


def test_auto_takes_the_advice_and_says_what_it_came_from():
    recipe = RECIPES["nemo-rl-grpo-gsm8k"]
    chosen, note = save_choice.choose(recipe, [], "auto", ADVICE, "r")
    assert [str(o) for o in chosen] == ["checkpointing.save_period=14"]
    assert "Young/Daly for save 20 s, step 100 s, an interruption every 8.0 h" in note


def test_auto_without_measurements_keeps_the_recipes_period_and_says_when_it_will_apply():
    recipe = RECIPES["verl-grpo-gsm8k"]
    chosen, note = save_choice.choose(recipe, [], "auto", None, "r")
    assert chosen == []
    assert "keeps trainer.save_freq=20" in note and "--resume r --checkpoint-every auto" in note


def test_a_nemo_period_off_the_validation_period_is_warned():
    _, note = save_choice.choose(RECIPES["nemo-rl-grpo-math"], [], 7, None, "r")
    assert "not a multiple of grpo.val_period 10" in note


def test_the_flag_and_a_set_of_the_same_key_are_refused_together():
    recipe = RECIPES["verl-grpo-gsm8k"]
    with pytest.raises(UsageError, match="both set the save period"):
        save_choice.not_twice(recipe, [Override("trainer.save_freq", "3")], 4)
    assert save_choice.not_twice(recipe, [Override("trainer.save_freq", "3")], None)
