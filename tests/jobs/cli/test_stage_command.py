"""What `jobs stage` sends: the model and datasets a recipe loads, a conversion only where NeMo RL's Megatron worker reads one."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.common.errors import UsageError
from jobs.recipes.catalogue import RECIPES
from jobs.runs import stage

runner = CliRunner()


def _dry(*args: str) -> dict:
    result = runner.invoke(app, ["stage", *args, "--dry-run", "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_megatron_recipe_stages_its_model_datasets_and_conversion_on_a_gpu_node():
    sub = _dry("nemo-rl-grpo-math")
    assert sub["entrypoint"] == (
        "python3 -m jobs.staging.stage --model Qwen/Qwen2.5-72B-Instruct --revision main "
        "--dataset agentica-org/DeepScaleR-Preview-Dataset --dataset HuggingFaceH4/aime_2024 "
        "--convert --gpus 8 --dtype bfloat16"
    )
    assert sub["entrypoint_num_gpus"] == 8
    assert sub["runtime_env"]["env_vars"] == {"HF_HOME": "/lustre/huggingface_cache"}
    assert sub["metadata"]["kind"] == "stage" and sub["metadata"]["convert"] == "True"
    assert sub["submission_id"] == "stage-qwen--qwen2.5-72b-instruct-1"


def test_a_model_id_gets_what_its_recipes_need_and_a_veRL_model_no_conversion():
    by_model = _dry("Qwen/Qwen2.5-72B-Instruct", "--revision", "abc123", "--gpus", "4")
    assert "--revision abc123" in by_model["entrypoint"] and "--gpus 4" in by_model["entrypoint"]
    verl = _dry("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B")
    assert "--convert" not in verl["entrypoint"] and verl["entrypoint_num_gpus"] is None
    skip = _dry("nemo-rl-grpo-math", "--no-convert")
    assert "--convert" not in skip["entrypoint"]


def test_the_hub_endpoint_is_forwarded_and_no_token_is(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1")
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    sub = _dry("org/some-model")
    assert sub["runtime_env"]["env_vars"]["HF_ENDPOINT"] == "http://127.0.0.1:1"
    assert "hf_secret_value" not in json.dumps(sub)


def test_bad_input_is_refused_by_name():
    bad = runner.invoke(app, ["stage", "../etc/passwd", "--dry-run"])
    assert bad.exit_code == 2 and "MODEL '../etc/passwd'" in bad.stderr
    no_megatron = runner.invoke(app, ["stage", "verl-grpo-gsm8k", "--convert", "--dry-run"])
    assert no_megatron.exit_code == 2 and "--convert" in no_megatron.stderr
    zero = runner.invoke(app, ["stage", "nemo-rl-grpo-math", "--gpus", "0", "--dry-run"])
    assert zero.exit_code == 2 and "--gpus" in zero.stderr


def test_numbers_count_up_per_model():
    first = stage.stage_id("Qwen/Qwen2.5-72B-Instruct", 1)
    assert stage.next_number([first, "stage-other-3", "x"], "Qwen/Qwen2.5-72B-Instruct") == 2
    with pytest.raises(UsageError):
        stage.target_of("not a model")


def test_every_megatron_recipe_converts_and_no_other_does():
    for recipe in RECIPES.values():
        assert stage.target_of(recipe.name).converts == (
            recipe.framework == "nemo-rl" and "megatron" in recipe.config_file
        )
