"""Recipe verl-grpo-codecontests: the CodeFu essentials in veRL 0.6.0's config, the reward shipped
with the job and loaded the way veRL loads it on a real local Ray cluster (tests/jobs/recipes/test_reward_placement.py
covers the sandbox choice at submit)."""

from __future__ import annotations

import ast
import json
import shlex
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from ray.job_submission import JobStatus
from typer.testing import CliRunner

import jobs
from jobs.cli.app import app
from jobs.common.errors import UsageError
from jobs.data import code_contests as data
from jobs.recipes import ckpt_size, compose
from jobs.recipes import prepare as validate
from jobs.recipes.catalogue import CODE_CONTESTS_REWARD, CODE_SANDBOX_URL_ENV, RECIPES, RunContext
from jobs.rewards import SANDBOX_TOKEN_ENV, service
from jobs.rewards import code_contests as cc
from jobs.runs import plan as submission
from tests.jobs.recipes.test_fit import verl_accepts
from tools import verl_snapshot

NAME = "verl-grpo-codecontests"
RECIPE = RECIPES[NAME]
runner = CliRunner()


def composed(nodes: int = 1, gpus: int = 8, **user: str):
    ctx = RunContext(run="cc", nodes=nodes, gpus_per_node=gpus)
    return validate.compose_run(RECIPE, ctx, {k: ("", v) for k, v in user.items()})


def test_the_samples_essentials_are_in_the_config_veRL_composes():
    args = RECIPE.args(RunContext(run="cc", nodes=1, gpus_per_node=8), {})
    # veRL's own Hydra composition of exactly these arguments (unknown keys would fail here).
    cfg = OmegaConf.create(verl_snapshot.compose_yaml(args))
    arr = cfg.actor_rollout_ref
    assert cfg.algorithm.adv_estimator == "grpo"
    assert arr.model.path == "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"
    assert arr.rollout.n == 8 and arr.rollout.tensor_model_parallel_size == 2
    assert (cfg.data.max_prompt_length, cfg.data.max_response_length) == (4096, 20480)
    assert arr.actor.ulysses_sequence_parallel_size == 4
    assert arr.ref.ulysses_sequence_parallel_size == 4  # follows the actor's by interpolation
    assert arr.model.use_remove_padding is True
    # vllm_rollout_spmd.py L161-165: chunked prefill needs a budget of prompt + response.
    assert (
        arr.rollout.max_num_batched_tokens
        >= cfg.data.max_prompt_length + cfg.data.max_response_length
    )
    assert cfg.data.train_files == "/lustre/datasets/code_contests/easy/train.parquet"
    assert cfg.data.val_files == "/lustre/datasets/code_contests_valid/easy/train.parquet"
    assert cfg.trainer.resume_mode == "auto" and cfg.trainer.save_freq == 16
    assert cfg.trainer.max_actor_ckpt_to_keep == 3
    assert cfg.trainer.default_local_dir == "/lustre/runs/cc/checkpoints"
    assert cfg.reward_model.reward_manager == "batch"
    assert OmegaConf.to_container(cfg.custom_reward_function) == {
        "path": CODE_CONTESTS_REWARD,
        "name": "compute_score_batch",
        "reward_kwargs": {"binary": True, "max_tests": 100, "concurrency": 8},
    }


def test_reward_kwargs_are_new_keys_in_veRL_060_and_a_user_may_flip_binary():
    base = compose.base_config("verl", "ppo_trainer.yaml")
    assert "reward_kwargs" not in base.custom_reward_function
    out = runner.invoke(
        app,
        [
            "submit",
            NAME,
            "--dry-run",
            "--json",
            "--name",
            "b",
            "--set",
            "custom_reward_function.reward_kwargs.binary=false",
        ],
    )
    assert out.exit_code == 0, out.stderr
    entry = json.loads(out.stdout)["entrypoint"]
    assert "+custom_reward_function.reward_kwargs.binary=false" in entry
    assert "binary=True" not in entry


@pytest.mark.parametrize("nodes", [1, 2, 4])
def test_submitted_sizes_pass_veRLs_checks_with_sequence_parallel(nodes):
    c = composed(nodes)
    assert verl_accepts(c.config, nodes * 8)


def test_sequence_parallel_that_does_not_divide_the_gpus_is_refused_naming_the_rule():
    with pytest.raises(UsageError) as e:
        composed(1, 2)
    assert "2 GPUs is not a multiple of actor.ulysses_sequence_parallel_size 4" in e.value.message
    assert "fsdp_workers.py L161-168" in e.value.message
    assert not verl_accepts(
        compose.apply(
            "verl",
            "ppo_trainer.yaml",
            RECIPE.args(RunContext(run="cc", nodes=1, gpus_per_node=2), {}),
        ),
        2,
    )
    # 1 x 4 GPUs is one Ulysses group: fits.
    assert verl_accepts(composed(1, 4).config, 4)


@pytest.mark.parametrize(
    "user, words",
    [
        (
            {"actor_rollout_ref.model.use_remove_padding": "False"},
            "needs actor_rollout_ref.model.use_remove_padding=True",
        ),
        (
            {"actor_rollout_ref.ref.ulysses_sequence_parallel_size": "2"},
            "differs from the actor's 4",
        ),
    ],
)
def test_sequence_parallel_settings_veRL_would_refuse_are_refused(user, words):
    with pytest.raises(UsageError) as e:
        composed(1, 8, **user)
    assert words in e.value.message
    args = RECIPE.args(
        RunContext(run="cc", nodes=1, gpus_per_node=8), {k: ("", v) for k, v in user.items()}
    )
    assert not verl_accepts(compose.apply("verl", "ppo_trainer.yaml", args), 8)


def test_checkpoint_estimate_covers_the_7b_model():
    fp = ckpt_size.footprint(RECIPE, composed().config)
    assert fp is not None and fp.params == 7.62e9 and fp.kept == 3
    assert 80 < fp.checkpoint_gib < 90  # 7.62e9 x 12 B


def test_dry_run_json_carries_the_reward_path_its_kwargs_and_the_payload():
    result = runner.invoke(app, ["submit", NAME, "--dry-run", "--json", "--name", "d"])
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    staging, trainer = out["entrypoint"].split(" && ")
    assert shlex.split(staging)[:3] == ["python3", "-m", "jobs.staging.ensure"]
    entry = shlex.split(trainer)
    assert entry[:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    for item in (
        f"custom_reward_function.path={CODE_CONTESTS_REWARD}",
        "custom_reward_function.name=compute_score_batch",
        "+custom_reward_function.reward_kwargs.binary=True",
        "+custom_reward_function.reward_kwargs.concurrency=8",
        "reward_model.reward_manager=batch",
    ):
        assert item in entry
    workdir = Path(out["runtime_env"]["working_dir"])
    assert (workdir / CODE_CONTESTS_REWARD).is_file()  # what the relative path names
    assert out["runtime_env"]["py_modules"] == [str(Path(jobs.__file__).parent)]
    # A dry run reads no stack: no sandbox URL, and a warning says what submitting needs.
    assert CODE_SANDBOX_URL_ENV not in out["runtime_env"]["env_vars"]
    human = runner.invoke(app, ["submit", NAME, "--dry-run", "--name", "d"])
    assert human.exit_code == 0
    assert "warning: a dry run has no code sandbox service" in human.stderr
    assert "submitting needs --allow-unsandboxed-reward" in human.stderr


# ------------------------------------------------------------- end to end on a real Ray cluster

SUM = '#include <cstdio>\nint main() { long long a, b; scanf("%lld %lld", &a, &b); printf("%lld\\n", a + b); }'
WRONG = '#include <cstdio>\nint main() { puts("0"); }'


def _verl_loader_source() -> str:
    """veRL 0.6.0's own `_call_with_kwargs` and `get_custom_reward_fn`, cut from the installed
    verl/trainer/ppo/reward.py (the module imports torch, which this venv lacks)."""
    path = verl_snapshot.verl_config_dir().parent / "ppo" / "reward.py"
    text = path.read_text()
    tree = ast.parse(text)
    wanted = {"_call_with_kwargs", "get_custom_reward_fn"}
    parts = [
        ast.get_source_segment(text, n)
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name in wanted
    ]
    assert len(parts) == 2, f"{path} no longer defines {wanted}"
    return "\n\n".join(parts)


# The driver does what veRL's main_ppo does up to the reward (main_ppo.py L55-82, L282-287):
# ray.init with veRL's runtime env inside the job, a TaskRunner actor, and in it
# get_custom_reward_fn(config), called as BatchRewardManager.verify calls it.
DRIVER = """
import importlib.util, json, os, sys
from functools import partial
from typing import Optional
import ray
from omegaconf import DictConfig, OmegaConf
RawRewardFn = object
spec = importlib.util.spec_from_file_location("verl_constants_ppo", {constants!r})
constants = importlib.util.module_from_spec(spec); spec.loader.exec_module(constants)
{loader}
ray.init(runtime_env=constants.get_ppo_ray_runtime_env())

@ray.remote(num_cpus=1)
class TaskRunner:
    def run(self, config, batch):
        fn = get_custom_reward_fn(OmegaConf.create(config))
        scores = fn(**batch)
        return {{"cwd": os.getcwd(), "file": sys.modules["custom_module"].__file__,
                 "sandbox": os.environ.get("CODE_SANDBOX_URL"), "scores": scores}}

print("RESULT " + json.dumps(ray.get(TaskRunner.remote().run.remote({config!r}, {batch!r}))))
"""


def _batch() -> dict:
    record = {
        "name": "1000_A. A+B",
        "description": "Print a + b.",
        "cf_rating": 800,
        "time_limit": {"seconds": 1, "nanos": 0},
        "memory_limit_bytes": 256000000,
        "private_tests": {"input": ["1 2\n", "5 5\n"], "output": ["3\n", "10\n"]},
        "public_tests": {"input": ["0 0\n"], "output": ["0\n"]},
    }
    tier, row = data.to_row(record, 0)  # the row `jobs data code-contests` writes
    assert tier == "easy"
    answers = [
        f"<think>sum</think><code>\n```cpp\n{SUM}\n```\n</code>",
        f"<think>guess</think><code>\n```cpp\n{WRONG}\n```\n</code>",
        "I cannot solve it.",
        "<code>\n```cpp\nint main( {\n```\n</code>",
    ]
    n = len(answers)
    return {
        "data_sources": [row["data_source"]] * n,
        "solution_strs": answers,
        "ground_truths": [row["reward_model"]["ground_truth"]] * n,
        "extra_infos": [dict(row["extra_info"]) for _ in range(n)],
    }


def _submit_as_the_recipe(
    ray_client, sandbox_url: str | None, pod_env: dict[str, str] | None = None
) -> dict:
    run = f"cc-e2e-{uuid.uuid4().hex[:8]}"
    sub = submission.for_recipe(
        RECIPE, run, 1, 8, [], {}, None, "test", code_sandbox_url=sandbox_url
    )
    # The recipe never puts the service token in the job's runtime env: on the cluster it is in the
    # Ray pods' own environment (the token Secret by secretKeyRef).
    assert SANDBOX_TOKEN_ENV not in json.dumps(sub.runtime_env)
    runtime_env = dict(sub.runtime_env)
    if pod_env:
        # Stands in for that pod environment: the local test head was not started with it.
        runtime_env["env_vars"] = {**runtime_env.get("env_vars", {}), **pod_env}
    cfg = OmegaConf.create(
        verl_snapshot.compose_yaml(RECIPE.args(RunContext(run=run, nodes=1, gpus_per_node=8), {}))
    )
    config = {
        "custom_reward_function": OmegaConf.to_container(cfg.custom_reward_function),
        "reward_model": {"reward_manager": cfg.reward_model.reward_manager},
    }
    constants = verl_snapshot.verl_config_dir().parent / "constants_ppo.py"
    code = DRIVER.format(
        constants=str(constants), loader=_verl_loader_source(), config=config, batch=_batch()
    )
    # The recipe's runtime_env exactly (working_dir payload, py_modules jobs, env vars); only the
    # entrypoint stands in for `python3 -m verl.trainer.main_ppo`.
    job = ray_client.submit_job(
        entrypoint=f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}",
        runtime_env=runtime_env,
        submission_id=sub.submission_id,
    )
    deadline = time.monotonic() + 240
    while (status := ray_client.get_job_status(job)) not in (
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.STOPPED,
    ):
        assert time.monotonic() < deadline, f"{job} still {status}"
        time.sleep(1)
    logs = ray_client.get_job_logs(job)
    assert status == JobStatus.SUCCEEDED, logs[-3000:]
    line = next(ln for ln in logs.splitlines() if ln.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


@pytest.mark.ray
def test_a_job_submitted_as_the_recipe_loads_the_reward_by_its_path_and_scores_with_gpp(ray_client):
    result = _submit_as_the_recipe(ray_client, None)
    # The relative path resolved in the actor's cwd: the extracted payload, not this checkout.
    assert Path(result["file"]).name == CODE_CONTESTS_REWARD
    assert Path(result["file"]).parent == Path(result["cwd"])
    assert not Path(result["cwd"]).is_relative_to(Path(jobs.__file__).parents[1])
    assert result["sandbox"] is None
    # binary=True: right 1, wrong 0, no code -1, compile error -0.5.
    assert result["scores"] == [1.0, 0.0, cc.NO_CODE, cc.COMPILE_ERROR]


@pytest.mark.ray
def test_with_the_stacks_sandbox_url_the_job_scores_through_the_service(ray_client):
    token = "service-token-" + uuid.uuid4().hex  # 46 characters, above the service's minimum
    server = service.serve("127.0.0.1", 0, concurrency=8, max_body_bytes=1 << 20, token=token)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    calls = []
    handle = server.RequestHandlerClass.do_POST

    def counting(self):
        calls.append(self.path)
        handle(self)

    server.RequestHandlerClass = type(
        "Counting", (server.RequestHandlerClass,), {"do_POST": counting}
    )
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        result = _submit_as_the_recipe(ray_client, url, {SANDBOX_TOKEN_ENV: token})
    finally:
        server.shutdown()
        server.server_close()
        server.executor.close()
        thread.join(timeout=5)
    assert result["sandbox"] == url
    assert result["scores"] == [1.0, 0.0, cc.NO_CODE, cc.COMPILE_ERROR]
    assert calls == ["/run"] * 3  # every solution with code went to the service
