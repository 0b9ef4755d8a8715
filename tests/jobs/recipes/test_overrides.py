"""Parsing --set and checking it against a recipe."""

from __future__ import annotations

import pytest

from jobs.common.errors import UsageError
from jobs.recipes import overrides
from jobs.recipes.catalogue import RECIPES, RunContext


def test_prefixes_are_kept():
    parsed = overrides.parse(["a.b=1", "+c.d=x=y", "++e=3"])
    assert [(o.prefix, o.key, o.value) for o in parsed] == [
        ("", "a.b", "1"),
        ("+", "c.d", "x=y"),
        ("++", "e", "3"),
    ]


@pytest.mark.parametrize("item", ["no_equals", "=value", "+=x"])
def test_malformed_items_are_usage_errors(item):
    with pytest.raises(UsageError):
        overrides.parse([item])


def test_new_key_of_the_recipe_is_rendered_with_plus_when_overridden():
    recipe = RECIPES["nemo-rl-grpo-gsm8k"]
    checked = overrides.check(
        recipe, overrides.parse(["data.train_data_path=/lustre/x.jsonl"]), "r"
    )
    entry = recipe.render(RunContext(run="r", nodes=1, gpus_per_node=1), checked)
    assert "+data.train_data_path=/lustre/x.jsonl" in entry
    assert "/lustre/datasets/gsm8k/nemo/train.jsonl" not in entry


def _check(recipe: str, *items: str, run: str = "r1") -> dict[str, tuple[str, str]]:
    return overrides.check(RECIPES[recipe], overrides.parse(list(items)), run)


# Unknown keys and `+` on an existing key are no longer judged here from a hand-kept list:
# composing on the framework's config decides (tests/jobs/recipes/test_compose.py).
def test_keys_are_passed_on_for_the_composition_to_judge():
    checked = _check("nemo-rl-grpo-math", "+my.extra=1", "++grpo.max_num_steps=5", "grpo.x=1")
    assert checked == {
        "my.extra": ("+", "1"),
        "grpo.max_num_steps": ("++", "5"),
        "grpo.x": ("", "1"),
    }


@pytest.mark.parametrize(
    "item",
    [
        "++checkpointing.enabled=false",
        "++cluster.num_nodes=2",
        "++checkpointing.checkpoint_dir=/tmp/x",
        "++checkpointing.save_period=0",
    ],
)
def test_locked_path_and_positive_checks_apply_to_prefixed_keys_too(item):
    with pytest.raises(UsageError):
        _check("nemo-rl-grpo-math", item)


@pytest.mark.parametrize(
    "value",
    [
        "/lustre/../tmp/x",  # climbs out of Lustre
        "/lustre/runs/r1/../r2/ckpt",  # climbs into another run
        "/lustre/runs/r1/..",  # the runs root
        "/lustre/runs/other/checkpoints",
        "/lustre/datasets/gsm8k",
        "/lustre/runs/r1",  # the run dir itself, not inside it
        "/lustre/runs/r10/checkpoints",  # a prefix of the name is another run
        "results/grpo",
    ],
)
def test_output_paths_must_stay_inside_the_runs_own_directory(value):
    with pytest.raises(UsageError) as e:
        _check("nemo-rl-grpo-math", f"checkpointing.checkpoint_dir={value}")
    assert "/lustre/runs/r1/" in e.value.message + (e.value.hint or "")


def test_output_paths_inside_the_run_directory_are_normalised():
    checked = _check("verl-grpo-gsm8k", "trainer.default_local_dir=/lustre/runs/r1//ckpt/./v2/")
    assert checked["trainer.default_local_dir"] == ("", "/lustre/runs/r1/ckpt/v2")
