"""Composing overrides on the frameworks' own configs: vendored copies, Hydra's rules, errors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from jobs.common.errors import UsageError
from jobs.recipes import compose
from jobs.recipes.catalogue import RECIPES, RunContext
from tests.jobs.conftest import REPO
from tools import verl_snapshot

VENDORED_NEMO = REPO / "jobs" / "recipes" / "configs" / "nemo-rl-v0.4.0"


def test_vendored_nemo_rl_chain_keeps_its_licence_and_the_five_grpo_math_configs():
    names = {
        p.relative_to(VENDORED_NEMO).as_posix() for p in VENDORED_NEMO.rglob("*") if p.is_file()
    }
    assert names == {"LICENSE"} | {
        f"examples/configs/grpo_math_{n}.yaml"
        for n in ("1B", "1B_megatron", "8B", "8B_megatron", "70B_megatron")
    }
    assert "Apache License" in (VENDORED_NEMO / "LICENSE").read_text()


def test_vendored_nemo_rl_chain_is_the_upstream_files_at_v0_4_0():
    """Each file's SHA-256 (tests/jobs/recipes/nemo-rl-v0.4.0.sha256) was taken when it was
    copied, after comparing it with NVIDIA-NeMo/RL at tag v0.4.0 (`git show v0.4.0:<path> | cmp`):
    a config edited by hand fails here."""
    lines = Path(__file__).with_name("nemo-rl-v0.4.0.sha256").read_text().splitlines()
    recorded = {name: digest for digest, name in (line.split(maxsplit=1) for line in lines if line)}
    vendored = {
        p.relative_to(VENDORED_NEMO).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in VENDORED_NEMO.rglob("*")
        if p.is_file()
    }
    assert vendored == recorded


@pytest.mark.frameworks
def test_verl_snapshot_equals_a_live_hydra_composition_of_the_installed_verl():
    # The real veRL 0.6.0 package (requirements-verl.txt), composed by Hydra's compose API.
    from importlib.metadata import version

    assert version("verl") == verl_snapshot.VERSION
    live = OmegaConf.create(verl_snapshot.compose_yaml())
    assert OmegaConf.create(compose.VERL_CONFIG.read_text()) == live


@pytest.mark.parametrize("name", sorted(r for r in RECIPES if RECIPES[r].framework == "verl"))
def test_verl_composition_of_a_recipe_equals_hydra_composing_it_with_the_overrides(name):
    recipe = RECIPES[name]
    args = recipe.args(RunContext(run="r", nodes=4, gpus_per_node=8), {})
    ours = compose.apply("verl", recipe.config_file, args)
    live = OmegaConf.create(verl_snapshot.compose_yaml(args))
    assert OmegaConf.to_container(ours) == OmegaConf.to_container(live)


def test_nemo_rl_defaults_chain_merges_parents_first():
    cfg = compose.base_config("nemo-rl", "grpo_math_70B_megatron.yaml")
    assert "defaults" not in cfg
    # 70B_megatron's own values win over 1B_megatron's, which win over 1B's.
    assert cfg.policy.megatron_cfg.tensor_model_parallel_size == 4
    assert cfg.policy.model_name == "meta-llama/Llama-3.3-70B-Instruct"
    assert cfg.checkpointing.enabled is False  # from 1B_megatron (§1.3)
    assert cfg.grpo.val_period == 10  # only in 1B
    # The `mul` resolver NeMo RL registers resolves (run_grpo_math.py L43).
    assert (
        OmegaConf.to_container(cfg, resolve=True)["policy"]["dynamic_batching"]["train_mb_tokens"]
        == 4096
    )


def _apply(name: str, *user: str) -> object:
    recipe = RECIPES[name]
    return compose.apply(
        recipe.framework,
        recipe.config_file,
        recipe.args(RunContext(run="r", nodes=8, gpus_per_node=8), {}) + list(user),
    )


def test_plus_on_an_existing_key_is_refused_naming_double_plus():
    with pytest.raises(UsageError) as e:
        _apply("nemo-rl-grpo-math", "+policy.megatron_cfg.converter_type=X")
    assert "already has policy.megatron_cfg.converter_type" in e.value.message
    assert "++policy.megatron_cfg.converter_type=X" in (e.value.hint or "")


def test_double_plus_and_plus_on_new_keys_are_applied_like_hydra():
    cfg = _apply("nemo-rl-grpo-math", "++policy.megatron_cfg.converter_type=X", "+my.extra=1")
    assert cfg.policy.megatron_cfg.converter_type == "X" and cfg.my.extra == 1


@pytest.mark.parametrize(
    "name, item, close",
    [
        (
            "nemo-rl-grpo-math",
            "grpo.num_generation_per_prompt=4",
            "grpo.num_generations_per_prompt",
        ),
        ("verl-grpo-gsm8k", "trainer.save_frq=5", "trainer.save_freq"),
    ],
)
def test_unknown_keys_are_refused_with_close_matches_from_the_config(name, item, close):
    with pytest.raises(UsageError) as e:
        _apply(name, item)
    assert f"unknown override {item.split('=')[0]!r}" in e.value.message
    assert close in (e.value.hint or "") and "+" in (e.value.hint or "")


def test_a_required_key_left_as_missing_in_verl_config_is_still_a_key():
    # rollout.name is `???` in veRL's config; writing it bare is how veRL's docs set it.
    assert _apply("verl-grpo-gsm8k").actor_rollout_ref.rollout.name == "vllm"


def test_unparsable_override_is_a_usage_error():
    with pytest.raises(UsageError) as e:
        _apply("verl-grpo-gsm8k", "trainer.logger=[console")
    assert "trainer.logger=[console" in e.value.message


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_new_keys_are_exactly_the_recipe_defaults_the_framework_config_lacks(name):
    recipe = RECIPES[name]
    base = compose.base_config(recipe.framework, recipe.config_file)
    lacking = {k for k in recipe.defaults if not compose._has_key(base, k)}
    assert lacking == set(recipe.new_keys)


@pytest.mark.parametrize(
    "framework, config, item, key, wanted",
    [
        (
            "nemo-rl",
            "grpo_math_1B.yaml",
            "grpo.num_prompts_per_step=abc",
            "grpo.num_prompts_per_step",
            "takes a number (int",
        ),
        (
            "nemo-rl",
            "grpo_math_1B.yaml",
            "grpo.max_num_epochs=abc",
            "grpo.max_num_epochs",
            "takes a number (int",
        ),
        (
            "nemo-rl",
            "grpo_math_1B.yaml",
            "policy.dtensor_cfg.enabled=yes",
            "policy.dtensor_cfg.enabled",
            "takes true or false (bool",
        ),
        (
            "nemo-rl",
            "grpo_math_1B.yaml",
            "++checkpointing={save_period:x}",
            "checkpointing.save_period",
            "takes a number (int",
        ),
        (
            "verl",
            "ppo_trainer",
            "actor_rollout_ref.rollout.n=five",
            "actor_rollout_ref.rollout.n",
            "takes an integer (veRL 0.6.0 declares it int)",
        ),
        ("verl", "ppo_trainer", "trainer.logger=console", "trainer.logger", "takes a list"),
    ],
)
def test_an_override_of_another_type_than_the_config_holds_is_refused(
    framework, config, item, key, wanted
):
    """`abc` for a count crashed later (exit 4) or was taken silently."""
    with pytest.raises(UsageError) as e:
        compose.apply(framework, config, [item])
    assert f"--set {item}: {key} {wanted}" in e.value.message
    assert item.rsplit("=", 1)[1].split(":")[-1].rstrip("}") in e.value.message


@pytest.mark.parametrize(
    "item",
    [
        "grpo.max_num_epochs=2",
        "policy.optimizer.kwargs.lr=1e-6",
        "policy.optimizer.kwargs.weight_decay=0",
        "checkpointing.metric_name=null",
        "grpo.val_period=${grpo.max_num_steps}",
        "policy.model_name=Qwen/Qwen2.5-1.5B",
    ],
)
def test_overrides_of_the_config_types_pass(item):
    compose.apply("nemo-rl", "grpo_math_1B.yaml", [item])


@pytest.mark.frameworks
def test_verl_field_types_snapshot_equals_a_live_reading_of_the_installed_verl():
    import json

    from tools.verl_snapshot import TYPES_OUT, live_field_types

    assert json.loads(TYPES_OUT.read_text()) == live_field_types()
    assert live_field_types()["actor_rollout_ref.actor.ppo_micro_batch_size"] == "Optional[int]"


@pytest.mark.parametrize(
    "item, words",
    [
        # null in the YAML, Optional[int] in veRL's FSDPActorConfig: the YAML alone could not tell.
        (
            "actor_rollout_ref.actor.ppo_micro_batch_size=abc",
            "takes an integer or null (veRL 0.6.0 declares it Optional[int]), not 'abc'",
        ),
        ("actor_rollout_ref.actor.ppo_epochs=1.5", "takes an integer (veRL 0.6.0 declares it int)"),
        (
            "actor_rollout_ref.actor.use_dynamic_bsz=1",
            "takes true or false (veRL 0.6.0 declares it bool)",
        ),
        (
            "actor_rollout_ref.rollout.n=null",
            "takes an integer (veRL 0.6.0 declares it int), not null",
        ),
    ],
)
def test_verl_overrides_are_checked_against_its_dataclass_types(item, words):
    with pytest.raises(UsageError) as e:
        compose.apply("verl", "ppo_trainer", [item])
    assert words in e.value.message


@pytest.mark.parametrize(
    "item",
    [
        "actor_rollout_ref.actor.ppo_micro_batch_size=null",
        "actor_rollout_ref.actor.ppo_micro_batch_size=4",
        "actor_rollout_ref.actor.clip_ratio=1",
        "actor_rollout_ref.rollout.temperature=0.7",
    ],
)
def test_verl_overrides_of_the_declared_types_pass(item):
    compose.apply("verl", "ppo_trainer", [item])
