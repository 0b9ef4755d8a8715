"""What a resumed run may change: refused only where its checkpoints could not load, with why."""

from __future__ import annotations

import pytest

from jobs.common.errors import UsageError
from jobs.recipes.catalogue import RECIPES
from jobs.recipes.overrides import Override, parse
from jobs.runs.resume_changes import check_changes, merged

VERL = RECIPES["verl-grpo-gsm8k"]
NEMO = RECIPES["nemo-rl-grpo-gsm8k"]
MEGATRON = next(r for r in RECIPES.values() if r.megatron)


@pytest.mark.parametrize(
    ("recipe", "key"),
    [
        (VERL, "actor_rollout_ref.actor.optim.lr"),
        (VERL, "algorithm.kl_ctrl.kl_coef"),
        (VERL, "trainer.total_training_steps"),
        (NEMO, "policy.optimizer.kwargs.lr"),
        (NEMO, "grpo.max_num_steps"),
        (NEMO, "loss_fn.reference_policy_kl_penalty"),
    ],
)
def test_a_fix_the_checkpoints_load_under_is_taken(recipe, key) -> None:
    check_changes("r", recipe, [Override(key, "1")], recorded_nodes=1, nodes=None)


@pytest.mark.parametrize(
    ("recipe", "key", "why"),
    [
        (VERL, "actor_rollout_ref.model.path", "the model the checkpoints hold"),
        (NEMO, "policy.model_name", "the model the checkpoints hold"),
        (NEMO, "policy.optimizer.name", "optimizer's state"),
        (VERL, "actor_rollout_ref.actor.fsdp_config.fsdp_size", "saved per rank"),
        (VERL, "trainer.n_gpus_per_node", "world size"),
        (VERL, "trainer.default_local_dir", "the run's checkpoints are there"),
        (MEGATRON, "policy.megatron_cfg.tensor_model_parallel_size", "parallel layout"),
    ],
)
def test_a_change_the_checkpoints_cannot_load_under_is_refused_by_name(recipe, key, why) -> None:
    with pytest.raises(UsageError) as caught:
        check_changes("r", recipe, [Override(key, "2")], recorded_nodes=1, nodes=None)
    assert f"--set {key}: " in str(caught.value) and why in str(caught.value)


def test_a_new_node_count_reshards_for_nemo_rl_dcp_and_is_refused_for_verl_and_megatron() -> None:
    check_changes("r", NEMO, [], recorded_nodes=1, nodes=2)  # torch.distributed.checkpoint
    for recipe, why in ((VERL, "world size"), (MEGATRON, "parallel layout")):
        with pytest.raises(UsageError) as caught:
            check_changes("r", recipe, [], recorded_nodes=1, nodes=2)
        assert "--nodes 2" in str(caught.value) and why in str(caught.value)
    check_changes("r", VERL, [], recorded_nodes=2, nodes=2)  # the same count is no change


def test_every_refusal_is_named_at_once() -> None:
    with pytest.raises(UsageError) as caught:
        check_changes(
            "r", VERL, parse(["actor_rollout_ref.model.path=x/y", "trainer.nnodes=4"]), 1, 4
        )
    text = str(caught.value)
    assert text.count("--set ") == 2 and "--nodes 4" in text


def test_a_changed_key_replaces_its_recorded_value_and_comes_last() -> None:
    recorded = parse(["a.b=1", "c=2"])
    assert [str(o) for o in merged(recorded, parse(["a.b=3"]))] == ["c=2", "a.b=3"]
    assert merged(recorded, []) == recorded


def test_a_run_that_saved_no_checkpoint_may_change_its_model_and_size_and_is_told_so() -> None:
    asked: list[bool] = []

    def none_saved() -> bool:
        asked.append(True)
        return False

    changes = parse(
        ["actor_rollout_ref.model.path=/models/q", "actor_rollout_ref.actor.optim.lr=1"]
    )
    note = check_changes("r", VERL, changes, 1, 2, none_saved)
    assert note == (
        "no checkpoint saved: run r starts over with --set actor_rollout_ref.model.path=/models/q"
        ", --nodes 2"
    )
    assert check_changes("r", VERL, parse(["trainer.total_epochs=2"]), 1, None, none_saved) == ""
    assert len(asked) == 1  # the head is asked only when a change would be refused
    with pytest.raises(UsageError):
        check_changes("r", VERL, changes, 1, 2, lambda: True)
