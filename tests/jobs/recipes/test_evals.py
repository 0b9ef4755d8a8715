"""The eval settings each recipe gets, composed with the frameworks' own config code: NeMo RL
v0.4.0's run_eval.py rule (load_config + OmegaConf.from_dotlist merge + resolve) on its vendored
eval configs, veRL 0.6.0's Hydra composition of ppo_trainer; and the refusals, by name."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from jobs.common.errors import UsageError
from jobs.recipes import compose, evals, overrides
from jobs.recipes import prepare as validate
from jobs.recipes.catalogue import RECIPES, RunContext
from tests.jobs.conftest import REPO
from tools import verl_snapshot

VENDORED = REPO / "jobs" / "recipes" / "configs" / "nemo-rl-v0.4.0-evals"


def _trained(name: str, ctx: RunContext):
    recipe = RECIPES[name]
    checked = overrides.check(recipe, [], ctx.run)
    composed = validate.compose_run(recipe, ctx, checked)
    return recipe, composed, recipe.args(ctx, checked, composed.adapted)


def test_vendored_eval_configs_keep_their_licence_and_are_the_two_run_eval_reads():
    names = {p.relative_to(VENDORED).as_posix() for p in VENDORED.rglob("*") if p.is_file()}
    assert names == {
        "LICENSE",
        "examples/configs/evals/eval.yaml",
        "examples/configs/evals/local_eval.yaml",
    }
    assert "Apache License" in (VENDORED / "LICENSE").read_text()


@pytest.mark.parametrize("name", sorted(r for r in RECIPES if RECIPES[r].framework == "nemo-rl"))
def test_nemo_rl_eval_settings_load_into_its_eval_config_as_run_eval_merges_them(name):
    ctx = RunContext(run="r", nodes=RECIPES[name].default_nodes, gpus_per_node=8)
    recipe, composed, _ = _trained(name, ctx)
    held = evals.held_out(recipe)
    req = evals.request("pass@k", k=4, n=16, seed=7)
    items = evals.nemo_rl_args(
        held, req, "/lustre/runs/r/hf/step_20", "/x/raw", ctx, composed.config
    )
    config_file = evals.nemo_rl_config(held)
    got = evals.check_nemo_rl(config_file, items)
    # What run_eval.py itself does with the job's command line (L89-97): load_config, then
    # OmegaConf.from_cli() over all of sys.argv[1:] (so `--config FILE` becomes two stray keys,
    # as upstream's own runs have it), merge, resolve.
    argv = ["--config", f"examples/configs/evals/{config_file}", *items]
    base = compose.load_nemo_rl_file(evals.eval_config_path(config_file))
    theirs = OmegaConf.to_container(
        OmegaConf.merge(base, OmegaConf.from_dotlist(argv)), resolve=True
    )
    theirs.pop("--config")
    theirs.pop(f"examples/configs/evals/{config_file.removesuffix('.yaml')}")
    assert got == theirs
    assert got["eval"] == {
        "metric": "pass@k",
        "num_tests_per_prompt": 16,
        "seed": 7,
        "k_value": 4,
        "save_path": "/x/raw",
    }
    # tokenizer.name follows the model by interpolation: the converted folder's own tokenizer.
    assert got["tokenizer"]["name"] == "/lustre/runs/r/hf/step_20"
    assert got["generation"]["temperature"] == 1.0
    assert got["cluster"] == {"num_nodes": ctx.nodes, "gpus_per_node": 8}
    if held.data_path:
        assert got["data"]["dataset_name"] == "/lustre/datasets/gsm8k/nemo/test.jsonl"
        assert (got["data"]["problem_key"], got["data"]["file_format"]) == ("question", "json")
    else:
        assert got["data"]["dataset_name"] == "aime2024"


def test_a_key_run_eval_would_add_silently_is_refused_by_name():
    with pytest.raises(UsageError, match=r"eval\.k_valu is not in NeMo RL's eval\.yaml"):
        evals.check_nemo_rl("eval.yaml", ["eval.k_valu=4"])


def test_nemo_rl_setup_assertions_are_said_before_the_cluster_says_them():
    with pytest.raises(UsageError, match="temperature > 0"):
        evals.check_nemo_rl("eval.yaml", ["eval.num_tests_per_prompt=4", "eval.k_value=2"])
    with pytest.raises(UsageError, match="k_value must be between"):
        evals.check_nemo_rl("eval.yaml", ["eval.k_value=2"])


@pytest.mark.parametrize("name", sorted(r for r in RECIPES if RECIPES[r].framework == "verl"))
def test_verl_eval_settings_compose_onto_ppo_trainer_as_hydra_composes_them(name):
    ctx = RunContext(run="r", nodes=1, gpus_per_node=8)
    recipe, _, run_args = _trained(name, ctx)
    req = evals.request("pass@k", k=1, n=4)
    ckpt = "/lustre/runs/r/checkpoints/global_step_20"
    items = evals.verl_args(run_args, req, ckpt, "/lustre/runs/r/eval/raw/step_20")
    ours = evals.check_verl(recipe, items)
    live = OmegaConf.create(verl_snapshot.compose_yaml(items))
    assert OmegaConf.to_container(ours) == OmegaConf.to_container(live)
    t = ours.trainer
    assert (t.val_only, t.val_before_train, t.resume_mode) == (True, True, "resume_path")
    assert t.resume_from_path == ckpt and "global_step_" in t.resume_from_path  # L848 asserts it
    assert ours.actor_rollout_ref.rollout.val_kwargs.n == 4
    assert ours.actor_rollout_ref.rollout.val_kwargs.do_sample is True
    # The run's own settings stay (the data it validates on, the model), each key once.
    assert ours.data.val_files == RECIPES[name].defaults["data.val_files"].replace(
        "{datasets}", "/lustre/datasets"
    )
    keys = [a.split("=", 1)[0] for a in items]
    assert len(keys) == len(set(keys))


def test_verl_base_model_eval_loads_no_checkpoint():
    ctx = RunContext(run="r", nodes=1, gpus_per_node=8)
    recipe, _, run_args = _trained("verl-grpo-gsm8k", ctx)
    items = evals.verl_args(run_args, evals.request("pass@k", 1, 1), None, "/d")
    cfg = evals.check_verl(recipe, items)
    assert cfg.trainer.resume_mode == "disable" and cfg.trainer.resume_from_path is None
    assert cfg.actor_rollout_ref.rollout.val_kwargs.do_sample is False


@pytest.mark.parametrize(
    "metric, k, n, named",
    [
        ("cons@k", 1, 1, "--metric 'cons@k'"),
        ("best@N", 1, 1, "--metric 'best@N'"),
        ("pass@k", 5, 4, "--k 5 with --n 4"),
        ("pass@k", 0, 4, "--k 0 with --n 4"),
        ("pass@k", 1, 0, "--n 0"),
    ],
)
def test_bad_requests_are_refused_by_name(metric, k, n, named):
    with pytest.raises(UsageError) as e:
        evals.request(metric, k, n)
    assert str(e.value).startswith(named)


def test_a_recipe_without_a_held_out_split_is_refused_by_name():
    orphan = RECIPES["verl-grpo-gsm8k"].model_copy(update={"name": "verl-grpo-private"})
    with pytest.raises(UsageError, match="recipe verl-grpo-private has no held-out split"):
        evals.held_out(orphan)


def test_every_recipe_has_a_held_out_split():
    assert set(evals.HELD_OUT) == set(RECIPES)
