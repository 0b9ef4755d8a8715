"""Recipe dry runs: Lustre paths, checkpointing on, node counts, overrides, no tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import jobs
from components.catalogue import FRAMEWORKS
from jobs.cli.app import app
from jobs.common.redact import key_looks_secret, value_looks_secret
from jobs.recipes.catalogue import RECIPES, RunContext
from jobs.runs import plan as submission
from tests.jobs.conftest import REPO, clean_env, run_cli

FAKE_TOKEN = "hf_" + "Q" * 34
runner = CliRunner()


def dry_run(*args: str) -> dict:
    result = runner.invoke(app, ["submit", *args, "--dry-run", "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_dry_run_shows_lustre_checkpoints_nodes_overrides_and_no_credentials(name):
    recipe = RECIPES[name]
    # A key of the framework's own config that no recipe fixes.
    some_key = {"nemo-rl": "grpo.max_val_samples", "verl": "trainer.test_freq"}[recipe.framework]
    nodes = "8" if recipe.default_nodes == 8 else "4"  # the 72B layout needs 16+ GPUs
    out = dry_run(
        name,
        "--name",
        "dry-1",
        "--nodes",
        nodes,
        "--gpus-per-node",
        "4",
        "--set",
        f"{some_key}=42",
        "--set",
        "+my.extra=yes",
    )
    entry = out["entrypoint"]
    assert out["submission_id"] == "dry-1-a1"
    ckpt = f"{recipe.checkpoint_key}=/lustre/runs/dry-1/checkpoints"
    assert ckpt in entry
    assert out["metadata"]["checkpoint_dir"] == "/lustre/runs/dry-1/checkpoints"
    # Saving on: veRL's default save_freq is -1 (never); each veRL recipe sets its own period.
    on = {
        "nemo-rl": "checkpointing.enabled=true",
        "verl": f"trainer.save_freq={recipe.defaults.get('trainer.save_freq')}",
    }
    assert recipe.framework == "nemo-rl" or int(recipe.defaults["trainer.save_freq"]) > 0
    assert on[recipe.framework] in entry
    assert f"{recipe.node_key}={nodes}" in entry and f"{recipe.gpus_key}=4" in entry
    assert f"{some_key}=42" in entry and "+my.extra=yes" in entry
    assert json.loads(out["metadata"]["overrides"]) == [f"{some_key}=42", "+my.extra=yes"]
    assert all(isinstance(v, str) for v in out["metadata"].values())
    # The job's environment is exactly the recipe's fixed set, and none of it is a credential:
    # the pods get HF_TOKEN / WANDB_API_KEY from the cluster's Secret, never from the job.
    env_vars = out["runtime_env"]["env_vars"]
    ctx = RunContext(run="dry-1", nodes=4, gpus_per_node=4)
    assert env_vars == recipe.env(ctx) and env_vars["HF_HOME"] == "/lustre/huggingface_cache"
    assert not [k for k in env_vars if key_looks_secret(k)]
    for field in (entry, json.dumps(out["metadata"]), json.dumps(out["runtime_env"])):
        assert not value_looks_secret(field)
    # Every absolute path the run writes is under /lustre/.
    for key in recipe.path_keys:
        assert f"{key}=/lustre/runs/dry-1/" in entry


@pytest.mark.subprocess_cli
def test_metadata_records_the_callers_commit_and_the_jobs_commit(tmp_path):
    # Run from a directory outside any git tree: the caller's commit is "unknown" there, while
    # jobs_commit still names this rl-on-gke checkout.
    done = run_cli(
        "submit",
        "verl-grpo-gsm8k",
        "--dry-run",
        "--json",
        "--name",
        "c1",
        cwd=tmp_path,
        env=clean_env(PYTHONPATH=str(REPO), GIT_CEILING_DIRECTORIES=str(tmp_path.parent)),
    )
    assert done.returncode == 0, done.stderr
    meta = json.loads(done.stdout)["metadata"]
    assert meta["git_commit"] == "unknown"
    assert meta["jobs_commit"].split("-")[0] == submission.git_commit(REPO).split("-")[0]
    assert len(meta["jobs_commit"].split("-")[0]) == 40
    here = dry_run("verl-grpo-gsm8k", "--name", "c2")["metadata"]
    assert len(here["git_commit"].split("-")[0]) == 40


# The refusal comes from NeMo RL's own rules on the composed config
# (jobs.recipes.fit), names the rule's source and the nearest node counts that fit; 48 GPUs (3 x 16) is
# refused too, since DP 3 does not divide the global batch of 256.
@pytest.mark.parametrize(
    "nodes, gpus, rule",
    [
        ("1", "8", "lm_policy.py L121-139"),
        ("3", "8", "lm_policy.py L121-139"),
        ("1", "4", "lm_policy.py L121-139"),
        ("2", "6", "lm_policy.py L121-139"),
        ("6", "8", "batched_data_dict.py L377-380"),
    ],
)
def test_70b_recipe_refuses_a_cluster_its_tp4_pp4_layout_does_not_fit(nodes, gpus, rule):
    result = runner.invoke(
        app, ["submit", "nemo-rl-grpo-math", "--dry-run", "--nodes", nodes, "--gpus-per-node", gpus]
    )
    assert result.exit_code == 2
    assert f"recipe nemo-rl-grpo-math does not fit {nodes} node(s) x {gpus} GPU(s)" in result.stderr
    assert rule in result.stderr and "sizes that fit" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("nodes, gpus", [("2", "8"), ("8", "8"), ("4", "4")])
def test_70b_recipe_accepts_multiples_of_16_gpus(nodes, gpus):
    out = dry_run("nemo-rl-grpo-math", "--nodes", nodes, "--gpus-per-node", gpus)
    assert f"cluster.num_nodes={nodes} cluster.gpus_per_node={gpus}" in out["entrypoint"]


def test_verl_recipe_keeps_only_the_newest_checkpoints():
    entry = dry_run("verl-grpo-gsm8k", "--name", "k")["entrypoint"]
    assert "trainer.max_actor_ckpt_to_keep=3" in entry
    custom = dry_run("verl-grpo-gsm8k", "--set", "trainer.max_actor_ckpt_to_keep=5")["entrypoint"]
    assert "trainer.max_actor_ckpt_to_keep=5" in custom and "max_actor_ckpt_to_keep=3" not in custom


def test_nemo_recipes_override_runtime_env_merge_and_use_image_code():
    for recipe in RECIPES.values():
        env = recipe.env()
        if recipe.framework == "nemo-rl":
            assert env["RAY_OVERRIDE_JOB_RUNTIME_ENV"] == "1"
            assert "cd /opt/nemo-rl && uv run python examples/run_grpo_math.py" in recipe.render(
                RunContext(run="r", nodes=1, gpus_per_node=8), {}
            )
        else:
            assert "RAY_OVERRIDE_JOB_RUNTIME_ENV" not in env


def test_math_recipe_is_the_codelab_run():
    entry = dry_run("nemo-rl-grpo-math", "--name", "m")["entrypoint"]
    for part in (
        "--config examples/configs/grpo_math_70B_megatron.yaml",
        "policy.model_name=Qwen/Qwen2.5-72B-Instruct",
        "data.dataset_name=DeepScaler",
        "grpo.num_generations_per_prompt=8",
        "grpo.num_prompts_per_step=32",
        "policy.train_global_batch_size=256",
        "cluster.num_nodes=8",
    ):
        assert part in entry


def test_gsm8k_recipes_prepare_data_on_lustre_first():
    nemo = dry_run("nemo-rl-grpo-gsm8k", "--name", "g")
    staging = (
        "python3 -m jobs.staging.ensure --model Qwen/Qwen2.5-1.5B-Instruct "
        "--pin /lustre/runs/g/staged-model.json --dataset openai/gsm8k:main && "
    )
    assert nemo["entrypoint"].startswith(
        staging + "python3 prepare_gsm8k.py --format nemo "
        "--out /lustre/datasets/gsm8k && cd /opt/nemo-rl"
    )
    assert "data.dataset_name=ResponseDataset" in nemo["entrypoint"]
    assert "+data.train_data_path=/lustre/datasets/gsm8k/nemo/train.jsonl" in nemo["entrypoint"]
    assert "+data.input_key=question +data.output_key=answer" in nemo["entrypoint"]
    verl = dry_run("verl-grpo-gsm8k", "--name", "v")
    assert verl["entrypoint"].startswith(
        "python3 -m jobs.staging.ensure --model Qwen/Qwen2.5-3B-Instruct "
        "--pin /lustre/runs/v/staged-model.json --dataset "
        "openai/gsm8k:main && python3 prepare_gsm8k.py --format verl "
    )
    assert "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo" in verl["entrypoint"]
    assert "actor_rollout_ref.rollout.name=vllm" in verl["entrypoint"]
    n = int(verl["entrypoint"].split("actor_rollout_ref.rollout.n=")[1].split()[0])
    assert n > 1
    for out in (nemo, verl):
        assert out["runtime_env"]["working_dir"].endswith("jobs/payloads/gsm8k")
        assert ".git/" in out["runtime_env"]["excludes"]
        # The payload imports jobs.data.gsm8k: the jobs package travels with the job.
        (module,) = out["runtime_env"]["py_modules"]
        assert Path(module) == Path(jobs.__file__).parent


def test_recipe_versions_come_from_the_catalogue():
    result = runner.invoke(app, ["recipes", "--json"])
    assert result.exit_code == 0
    views = {v["name"]: v for v in json.loads(result.stdout)}
    assert set(views) == set(RECIPES)
    for v in views.values():
        spec = FRAMEWORKS[v["framework"]]
        assert (v["framework_version"], v["image"]) == (spec.version, spec.image)


def test_unknown_override_exits_2_naming_it_and_the_closest_key():
    result = runner.invoke(
        app,
        ["submit", "nemo-rl-grpo-math", "--dry-run", "--set", "grpo.num_generation_per_prompt=4"],
    )
    assert result.exit_code == 2
    assert "'grpo.num_generation_per_prompt'" in result.stderr
    assert "grpo.num_generations_per_prompt" in result.stderr
    assert result.stdout == ""


def test_plus_prefix_allows_a_deliberate_new_key():
    out = dry_run("verl-grpo-gsm8k", "--set", "+trainer.brand_new=1")
    assert "+trainer.brand_new=1" in out["entrypoint"]


@pytest.mark.parametrize(
    "setting, words",
    [
        ("checkpointing.enabled=false", "checkpointing stays on"),
        ("cluster.num_nodes=2", "--nodes"),
        ("checkpointing.checkpoint_dir=results/grpo", "/lustre/"),
        ("checkpointing.save_period=-1", "positive"),
    ],
)
def test_settings_that_would_lose_the_run_are_refused(setting, words):
    result = runner.invoke(app, ["submit", "nemo-rl-grpo-math", "--dry-run", "--set", setting])
    assert result.exit_code == 2
    assert words in result.stderr


def test_unknown_recipe_suggests_the_closest():
    result = runner.invoke(app, ["submit", "nemo-rl-grpo-maths", "--dry-run"])
    assert result.exit_code == 2
    assert "nemo-rl-grpo-math" in result.stderr


def test_framework_mismatch_is_refused():
    result = runner.invoke(
        app, ["submit", "verl-grpo-gsm8k", "--dry-run", "--framework", "nemo-rl"]
    )
    assert result.exit_code == 2
    assert "needs a verl cluster" in result.stderr


@pytest.mark.parametrize(
    "setting, shown",
    [
        ("logger.wandb.api_key=abc", "logger.wandb.api_key"),
        ("hf_token=abc", "hf_token"),
        (f"policy.model_name={FAKE_TOKEN}", "policy.model_name"),
        ("+data.secret=x", "data.secret"),
        ("my.password=x", "my.password"),
        (f"{FAKE_TOKEN}=x", "(hidden)"),
    ],
)
def test_token_like_settings_exit_2_without_echoing_the_value(setting, shown):
    result = runner.invoke(app, ["submit", "nemo-rl-grpo-math", "--dry-run", "--set", setting])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"error: --set {shown} looks like a credential, refused (the "
        "value is not shown) (hint: tokens come from the cluster's "
        "Kubernetes Secret"
    )
    assert FAKE_TOKEN not in result.stderr + result.stdout
    assert "abc" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_metrics_go_to_tensorboard_under_the_run_dir_and_to_wandb_only_with_a_key(name):
    recipe = RECIPES[name]
    ctx = RunContext(run="m", nodes=1, gpus_per_node=8)
    plain = recipe.settings(ctx, {})
    with_key = recipe.settings(ctx.model_copy(update={"wandb": True}), {})
    if recipe.framework == "nemo-rl":
        assert plain["logger.tensorboard_enabled"] == "true"
        assert plain["logger.log_dir"] == "/lustre/runs/m/logs"
        assert "logger.wandb_enabled" not in plain  # the base config's false stays
        assert with_key["logger.wandb_enabled"] == "true"
    else:
        assert json.loads(plain["trainer.logger"]) == ["console", "tensorboard"]
        assert recipe.env(ctx)["TENSORBOARD_DIR"] == "/lustre/runs/m/tensorboard"
        assert "wandb" in json.loads(with_key["trainer.logger"])
    # A user's own choice still wins over the stack's W&B default.
    key = next(iter(recipe.wandb_settings))
    assert recipe.settings(ctx.model_copy(update={"wandb": True}), {key: ("", "x")})[key] == "x"


def test_every_attempt_stages_first_and_runs_offline():
    """The staging step comes first, names the model the run actually loads (overrides
    included), converts for Megatron only where NeMo RL's Megatron worker runs, and the job's
    workers are offline."""
    math = dry_run("nemo-rl-grpo-math", "--name", "m")
    assert math["entrypoint"].startswith(
        "python3 -m jobs.staging.ensure --model Qwen/Qwen2.5-72B-Instruct "
        "--pin /lustre/runs/m/staged-model.json --dataset "
        "agentica-org/DeepScaleR-Preview-Dataset --dataset HuggingFaceH4/aime_2024 --megatron && "
    )
    assert math["runtime_env"]["env_vars"]["HF_HUB_OFFLINE"] == "1"
    assert math["runtime_env"]["py_modules"]
    own = dry_run(
        "verl-grpo-gsm8k",
        "--name",
        "v",
        "--set",
        "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct",
    )
    assert own["entrypoint"].startswith(
        "python3 -m jobs.staging.ensure --model Qwen/Qwen2.5-7B-Instruct "
        "--pin /lustre/runs/v/staged-model.json --dataset"
    )
    assert "--megatron" not in own["entrypoint"].split(" && ")[0]
    code = dry_run("verl-grpo-codecontests", "--name", "c")
    assert code["entrypoint"].split(" && ")[0] == (
        "python3 -m jobs.staging.ensure --model deepseek-ai/DeepSeek-R1-Distill-Qwen-7B "
        "--pin /lustre/runs/c/staged-model.json"
    )


def test_a_dry_run_without_json_reads_as_lines_not_raw_json():
    """A dry run printed the raw JSON that --json prints."""
    human = runner.invoke(app, ["submit", "verl-grpo-gsm8k", "--dry-run", "--name", "d"])
    assert human.exit_code == 0, human.stderr
    lines = human.stdout.splitlines()
    assert lines[0] == "would submit d-a1"
    assert lines[1].startswith("  entrypoint:  python3 -m jobs.staging.ensure ")
    assert any(line.startswith("  env vars:    ") and "HF_HOME" in line for line in lines)
    assert not human.stdout.lstrip().startswith("{")


@pytest.mark.parametrize("keep", ["1", "0", "-1"])
def test_verl_keeping_one_checkpoint_is_refused_with_the_reason(keep):
    """veRL removes its only kept actor checkpoint before it writes the next
    (fsdp_checkpoint_manager.py L204-213 at v0.6.0), so with keep 1 a preemption mid-save left a
    tracker on a folder without weights and every later attempt failed at load."""
    result = runner.invoke(
        app,
        [
            "submit",
            "verl-grpo-gsm8k",
            "--dry-run",
            "--set",
            f"trainer.max_actor_ckpt_to_keep={keep}",
        ],
    )
    assert result.exit_code == 2
    assert f"trainer.max_actor_ckpt_to_keep={keep}" in result.stderr
    assert "at least 2" in result.stderr and "L204-213" in result.stderr
    assert dry_run("verl-grpo-gsm8k", "--set", "trainer.max_actor_ckpt_to_keep=2")
