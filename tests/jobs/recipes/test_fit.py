"""Every recipe x 1..16 nodes x 8 GPUs: what the CLI submits passes the framework's checks, and
what it refuses would have failed them."""

from __future__ import annotations

import importlib.util
import json

import pytest
from hydra.errors import InstantiationException
from omegaconf import OmegaConf
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.client.net import free_port
from jobs.common.errors import UsageError
from jobs.recipes import compose
from jobs.recipes import prepare as validate
from jobs.recipes.catalogue import RECIPES, RunContext
from tools import verl_snapshot

runner = CliRunner()


def _verl_validate_config():
    """veRL 0.6.0's own `validate_config`, loaded by file path: `import verl` pulls torch."""
    path = verl_snapshot.verl_config_dir().parents[1] / "utils" / "config.py"
    spec = importlib.util.spec_from_file_location("verl_utils_config_060", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.validate_config


VALIDATE_CONFIG = _verl_validate_config()


def verl_accepts(cfg, world: int) -> bool:
    cfg = OmegaConf.create(OmegaConf.to_container(cfg))
    try:
        # main_ppo.py L261-265: a reference policy exists when use_kl_loss is on; GRPO has no critic.
        VALIDATE_CONFIG(cfg, use_reference_policy=True, use_critic=False)
    except AssertionError:
        return False
    except InstantiationException:
        # validate_config's batch check (utils/config.py L87-113) has passed; its next step
        # builds veRL's actor dataclass, whose module imports torch, which this venv lacks.
        # TEST-SIDE RESTATEMENT of the two checks that follow, marked as such:
        pass
    actor = cfg.actor_rollout_ref.actor
    sp = actor.ulysses_sequence_parallel_size
    # fsdp_workers.py L161-168: init_device_mesh((world // sp, sp)) needs sp to divide the world.
    if world % sp:
        return False
    # verl/workers/config/actor.py FSDPActorConfig.validate: Ulysses needs use_remove_padding.
    if sp > 1 and not cfg.actor_rollout_ref.model.use_remove_padding:
        return False
    # fsdp_workers.py L823: the ref policy's forward runs with config.ref on the actor's mesh.
    if cfg.actor_rollout_ref.ref.ulysses_sequence_parallel_size != sp:
        return False
    # verl/workers/config/actor.py ActorConfig.validate: train_batch_size >= ppo_mini_batch_size.
    if cfg.data.train_batch_size < actor.ppo_mini_batch_size:
        return False
    # verl/workers/fsdp_workers.py L234-254 (normalisation of the actor's mini-batch).
    mini = actor.ppo_mini_batch_size * cfg.actor_rollout_ref.rollout.n
    mini //= world // sp
    if mini <= 0 or mini % actor.ppo_micro_batch_size_per_gpu:
        return False
    # fsdp_workers.py L573-579: the rollout's TP x DP x PP divides the world.
    r = cfg.actor_rollout_ref.rollout
    return (
        world
        % (r.tensor_model_parallel_size * r.data_parallel_size * r.pipeline_model_parallel_size)
        == 0
    )


def nemo_accepts(cfg, world: int) -> bool:
    """TEST-SIDE RESTATEMENT of NeMo RL v0.4.0's asserts (its code needs torch and a GPU):
    lm_policy.py L121-139, vllm_generation.py L61-66, batched_data_dict.py L373-380."""
    c = OmegaConf.to_container(cfg, resolve=True)  # run_grpo_math.py L144 resolves like this
    p = c["policy"]
    if p["megatron_cfg"]["enabled"]:
        m = p["megatron_cfg"]
        mp = (
            m["tensor_model_parallel_size"]
            * m["pipeline_model_parallel_size"]
            * m["context_parallel_size"]
        )
    else:
        mp = p["dtensor_cfg"]["tensor_parallel_size"] * p["dtensor_cfg"]["context_parallel_size"]
    if world < mp or world % mp:
        return False
    v = p["generation"]["vllm_cfg"]
    if world % (v["tensor_parallel_size"] * v["pipeline_parallel_size"]):
        return False
    total = c["grpo"]["num_prompts_per_step"] * c["grpo"]["num_generations_per_prompt"]
    gbs = p["train_global_batch_size"]
    return total % gbs == 0 and gbs % (world // mp) == 0


def accepts(framework: str, cfg, world: int) -> bool:
    return (nemo_accepts if framework == "nemo-rl" else verl_accepts)(cfg, world)


@pytest.mark.frameworks
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_sweep_submitted_configs_pass_and_refused_ones_fail_the_framework_checks(name):
    recipe = RECIPES[name]
    submitted, refused = [], []
    for nodes in range(1, 17):
        ctx = RunContext(run="sweep", nodes=nodes, gpus_per_node=8)
        try:
            composed = validate.compose_run(recipe, ctx, {})
        except UsageError as e:
            refused.append(nodes)
            assert "sizes that fit" in (e.hint or "")
            assert "NeMo RL v0.4.0" in e.message or "veRL 0.6.0" in e.message
            as_given = compose.apply(recipe.framework, recipe.config_file, recipe.args(ctx, {}))
            assert not accepts(recipe.framework, as_given, nodes * 8), nodes
            continue
        submitted.append(nodes)
        # The config the framework would build from exactly the submitted argument list.
        args = recipe.args(ctx, {}, composed.adapted)
        if recipe.framework == "verl":
            cfg = OmegaConf.create(verl_snapshot.compose_yaml(args))
        else:
            cfg = compose.apply(recipe.framework, recipe.config_file, args)
        assert accepts(recipe.framework, cfg, nodes * 8), nodes
    if recipe.adapt_batch:
        assert refused == []  # batch sizes adapt, so every size runs
    else:
        # Megatron TP4 x PP4: DP 1, 2, 4, 8 divide the global batch of 256.
        assert submitted == [2, 4, 8, 16]


def test_h200_stack_size_runs_verl_with_batch_sizes_derived_from_32_gpus():
    composed = validate.compose_run(
        RECIPES["verl-grpo-gsm8k"], RunContext(run="h", nodes=4, gpus_per_node=8), {}
    )
    assert composed.adapted == {"actor_rollout_ref.actor.ppo_mini_batch_size": "256"}
    assert verl_accepts(composed.config, 32)


def test_a_tp_pp_override_changes_the_replica_size_the_rule_uses():
    recipe = RECIPES["nemo-rl-grpo-math"]
    user = {"policy.megatron_cfg.pipeline_model_parallel_size": ("", "2")}
    # TP 4 x PP 2 = 8 GPUs per replica: 1 node fits (DP 1), 3 nodes do not (DP 3 vs 256).
    validate.compose_run(recipe, RunContext(run="t", nodes=1, gpus_per_node=8), user)
    with pytest.raises(UsageError) as e:
        validate.compose_run(recipe, RunContext(run="t", nodes=3, gpus_per_node=8), user)
    assert "data-parallel size 3 = 24 GPUs / 8 (megatron TP 4 x PP 2" in e.value.message
    assert "--nodes 2 or --nodes 4" in (e.value.hint or "")


def test_user_batch_sizes_are_not_adapted_and_the_refusal_says_so():
    with pytest.raises(UsageError) as e:
        validate.compose_run(
            RECIPES["verl-grpo-gsm8k"],
            RunContext(run="u", nodes=2, gpus_per_node=8),
            {"data.train_batch_size": ("", "256")},
        )
    assert "fsdp_workers.py" in e.value.message
    assert "drop --set data.train_batch_size" in (e.value.hint or "")


def _closed_address() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens: a contact would be exit 3


@pytest.mark.parametrize(
    "setting, words",
    [
        ("+policy.megatron_cfg.converter_type=X", "++policy.megatron_cfg.converter_type=X"),
        ("++checkpointing={enabled:false}", "checkpointing stays on"),
        ("++checkpointing={checkpoint_dir:/tmp/x}", "checkpointing.checkpoint_dir=/tmp/x"),
    ],
)
def test_refused_before_the_cluster_is_contacted(setting, words):
    result = runner.invoke(
        app, ["submit", "nemo-rl-grpo-math", "--set", setting, "--address", _closed_address()]
    )
    assert result.exit_code == 2, result.stderr
    assert words in result.stderr


@pytest.mark.parametrize(
    "setting",
    [
        "ray_kwargs.ray_init.num_cpus=4",
        "++trainer={resume_mode:disable}",
        "++trainer={save_freq:-1}",
    ],
)
def test_verl_settings_that_crash_or_unlock_are_refused_before_contact(setting):
    result = runner.invoke(
        app, ["submit", "verl-grpo-gsm8k", "--set", setting, "--address", _closed_address()]
    )
    assert result.exit_code == 2, result.stderr


def test_codelab_recipe_is_the_codelabs_short_run():
    result = runner.invoke(
        app, ["submit", "nemo-rl-grpo-math-codelab", "--dry-run", "--json", "--name", "c"]
    )
    assert result.exit_code == 0, result.stderr
    entry = json.loads(result.stdout)["entrypoint"]
    for part in (
        "grpo.max_num_steps=20",
        "checkpointing.save_period=2",
        "checkpointing.keep_top_k=2",
        "checkpointing.metric_name=null",
    ):
        assert part in entry
    cfg = compose.apply(
        "nemo-rl",
        "grpo_math_70B_megatron.yaml",
        RECIPES["nemo-rl-grpo-math-codelab"].args(
            RunContext(run="c", nodes=8, gpus_per_node=8), {}
        ),
    )
    assert cfg.checkpointing.metric_name is None and cfg.grpo.max_num_steps == 20


@pytest.mark.parametrize("nodes, gpus, prompts, gbs", [(3, 4, 33, 528), (5, 8, 35, 560)])
def test_nemo_batch_adaptation_lands_on_the_fewest_extra_prompts(nodes, gpus, prompts, gbs):
    """3 x 4 GPUs raised 32 prompts to 129 (batch 516) where 33 (batch 528) fits."""
    recipe = RECIPES["nemo-rl-grpo-gsm8k"]
    composed = validate.compose_run(
        recipe, RunContext(run="a", nodes=nodes, gpus_per_node=gpus), {}
    )
    assert composed.adapted == {
        "grpo.num_prompts_per_step": str(prompts),
        "policy.train_global_batch_size": str(gbs),
    }
    assert nemo_accepts(composed.config, nodes * gpus)
    # Nothing nearer fits: one prompt fewer, whatever the global batch, breaks the rules.
    below = OmegaConf.create(OmegaConf.to_container(composed.config))
    below.grpo.num_prompts_per_step = prompts - 1
    assert not any(
        nemo_accepts(_with_gbs(below, g), nodes * gpus) for g in range(512, (prompts - 1) * 16 + 1)
    )


def _with_gbs(cfg, gbs):
    cfg.policy.train_global_batch_size = gbs
    return cfg


def test_verl_train_batch_grows_on_the_gpu_steps_not_the_mini_batch_steps():
    """3 x 4 GPUs: 264 (the first multiple of 12 / gcd(5, 12) above 256), not 288."""
    composed = validate.compose_run(
        RECIPES["verl-grpo-gsm8k"], RunContext(run="v", nodes=3, gpus_per_node=4), {}
    )
    assert composed.adapted == {
        "data.train_batch_size": "264",
        "actor_rollout_ref.actor.ppo_mini_batch_size": "96",
    }
    assert verl_accepts(composed.config, 12)


@pytest.mark.parametrize(
    "recipe, setting, words",
    [
        (
            "nemo-rl-grpo-gsm8k",
            "grpo.num_prompts_per_step=abc",
            "grpo.num_prompts_per_step takes a number (int 32 in the nemo-rl config), not 'abc'",
        ),
        ("nemo-rl-grpo-gsm8k", "grpo.max_num_epochs=abc", "grpo.max_num_epochs takes a number"),
        (
            "nemo-rl-grpo-math",
            "policy.train_global_batch_size=1.5",
            "policy.train_global_batch_size must be a positive integer",
        ),
        (
            "verl-grpo-gsm8k",
            "actor_rollout_ref.rollout.n=0",
            "actor_rollout_ref.rollout.n must be a positive integer",
        ),
    ],
)
def test_a_bad_batch_override_exits_2_naming_it_not_4_or_a_size(recipe, setting, words):
    """Before: exit 4 ("a bug"), silent acceptance, or "sizes that fit: none"."""
    result = runner.invoke(app, ["submit", recipe, "--dry-run", "--nodes", "2", "--set", setting])
    assert result.exit_code == 2, result.stderr
    assert words in result.stderr
    assert "sizes that fit" not in result.stderr


def test_a_size_refusal_caused_by_an_override_blames_the_override():
    result = runner.invoke(
        app,
        [
            "submit",
            "nemo-rl-grpo-math",
            "--dry-run",
            "--set",
            "++grpo.num_generations_per_prompt=4",
        ],
    )
    assert result.exit_code == 2, result.stderr
    assert "the cause is --set ++grpo.num_generations_per_prompt=4" in result.stderr
    assert "sizes that fit" not in result.stderr
