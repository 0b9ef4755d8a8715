"""Parsing --set and checking it against a recipe."""

from __future__ import annotations

import pytest

from jobs import overrides
from jobs.errors import UsageError
from jobs.recipes import RECIPES


def test_prefixes_are_kept():
    parsed = overrides.parse(["a.b=1", "+c.d=x=y", "++e=3"])
    assert [(o.prefix, o.key, o.value) for o in parsed] == [("", "a.b", "1"), ("+", "c.d", "x=y"),
                                                            ("++", "e", "3")]


@pytest.mark.parametrize("item", ["no_equals", "=value", "+=x"])
def test_malformed_items_are_usage_errors(item):
    with pytest.raises(UsageError):
        overrides.parse([item])


def test_new_key_of_the_recipe_is_rendered_with_plus_when_overridden():
    recipe = RECIPES["nemo-rl-grpo-gsm8k"]
    checked = overrides.check(recipe, overrides.parse(["data.train_data_path=/lustre/x.jsonl"]))
    from jobs.recipes import RunContext
    entry = recipe.render(RunContext(run="r", nodes=1, gpus_per_node=1), checked)
    assert "+data.train_data_path=/lustre/x.jsonl" in entry
    assert "/lustre/datasets/gsm8k/nemo/train.jsonl" not in entry


def test_unknown_key_error_names_close_keys():
    with pytest.raises(UsageError) as e:
        overrides.check(RECIPES["verl-grpo-gsm8k"], overrides.parse(["trainer.save_frq=5"]))
    assert "trainer.save_frq" in e.value.message
    assert e.value.hint and "trainer.save_freq" in e.value.hint
