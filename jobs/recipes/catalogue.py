"""The recipe catalogue: GRPO runs pinned to one framework version each, and how they render.

Framework versions and images come from `components.catalogue.FRAMEWORKS` only. Which keys a user
may set is not listed here: `jobs.recipes.compose` applies the final override list to the framework's
own config (NeMo RL v0.4.0's chain, veRL 0.6.0's composed default) and Hydra decides, as on the
cluster. `+key=value` adds a key the config lacks, `++key=value` adds or overrides.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from pydantic import BaseModel, ConfigDict, Field

from components.catalogue import FRAMEWORKS, FrameworkSpec
from components.contract import DATASETS_ROOT, HF_HOME_ENV, HF_HOME_PATH, RUNS_ROOT, Framework
from jobs.rewards import SANDBOX_URL_ENV as CODE_SANDBOX_URL_ENV

# NeMo RL's code in its NGC image (docker/Dockerfile WORKDIR); `uv run` needs its pyproject.
NEMO_RL_HOME = "/opt/nemo-rl"
PAYLOADS = Path(__file__).resolve().parents[1] / "payloads"


class RunContext(BaseModel):
    """What a recipe needs to know about one run to render its command."""

    model_config = ConfigDict(frozen=True)

    run: str
    nodes: int = Field(ge=1)
    gpus_per_node: int = Field(ge=1)
    # The stack gives pods WANDB_API_KEY (stack output wandbEnabled): also log to W&B.
    wandb: bool = False
    # The code-execution service the stack runs (stack output codeSandboxUrl), for recipes
    # whose reward runs model-written code (Recipe.runs_model_code); None: in-process.
    code_sandbox_url: str | None = None

    @property
    def run_dir(self) -> str:
        return f"{RUNS_ROOT}/{self.run}"

    def fill(self, value: str) -> str:
        """Replace this module's placeholders; Hydra's own `${...}` interpolations pass through."""
        return (
            value.replace("{run_dir}", self.run_dir)
            .replace("{run}", self.run)
            .replace("{nodes}", str(self.nodes))
            .replace("{gpus_per_node}", str(self.gpus_per_node))
            .replace("{datasets}", DATASETS_ROOT)
        )


class Recipe(BaseModel):
    """One GRPO run: framework, entrypoint, the overrides it sets and the keys a user may set."""

    model_config = ConfigDict(frozen=True)

    name: str
    framework: Framework
    summary: str
    # Shell run before the trainer, in the uploaded payload directory (e.g. data preparation).
    setup: str | None = None
    # Directory `cd`-ed into before the trainer starts (image code), if any.
    cwd: str | None = None
    launcher: tuple[str, ...]
    # key -> value, in order. Values may hold {run_dir} {run} {nodes} {gpus_per_node} {datasets}.
    defaults: dict[str, str]
    # The framework config the launcher names (NeMo RL: examples/configs/<file>; veRL: its
    # composed ppo_trainer), which `jobs.recipes.compose` applies the overrides to.
    config_file: str
    # Keys absent from the framework's base config: rendered `+key=value` (Hydra refuses them
    # bare); tests check this set against the config.
    new_keys: frozenset[str] = frozenset()
    # Keys the user may not change, with the reason shown when they try.
    locked: dict[str, str] = {}
    # Keys whose value is an output path: must stay absolute under /lustre/.
    path_keys: frozenset[str] = frozenset()
    # Keys that must stay a positive integer: 0 or -1 would switch checkpoint saving off.
    positive_keys: frozenset[str] = frozenset()
    # Keys with a floor: key -> (the least value allowed, why).
    floors: dict[str, tuple[int, str]] = {}
    node_key: str
    gpus_key: str
    checkpoint_key: str
    # The key that sets the save period in steps (`submit --checkpoint-every`).
    save_key: str
    default_nodes: int
    default_gpus_per_node: int = 8
    # Whether batch sizes may be raised (jobs.recipes.fit.adapt) so the run fits the cluster it is
    # given; a recipe that reproduces a published run keeps its numbers and refuses instead.
    adapt_batch: bool = False
    # Keys whose composed value must stay null: the framework crashes on anything else.
    must_be_null: dict[str, str] = {}
    # The model a checkpoint holds, and how many checkpoints the run keeps (jobs.recipes.ckpt_size).
    model_key: str
    keep_key: str
    env_vars: dict[str, str] = {}
    # Settings that also send metrics to W&B, applied when the stack has a W&B key.
    wandb_settings: dict[str, str] = {}
    # A directory under jobs/payloads/ uploaded as the job's working_dir, when the run needs it.
    payload: str | None = None
    # The reward compiles and runs model-written code: jobs.recipes.reward_placement decides where.
    runs_model_code: bool = False
    # Hub datasets the framework loads by name (`name` or `name:config`): staged before the
    # trainer starts, since the run is offline (HF_HUB_OFFLINE=1, jobs.staging).
    hub_datasets: tuple[str, ...] = ()

    @property
    def model(self) -> str:
        return self.defaults[self.model_key]

    @property
    def megatron(self) -> bool:
        """NeMo RL with the Megatron backend: converts the model once (jobs.staging.megatron)."""
        return self.framework == "nemo-rl" and "megatron" in self.config_file

    @property
    def spec(self) -> FrameworkSpec:
        return FRAMEWORKS[self.framework]

    def value_of(self, key: str, user: Mapping[str, str]) -> str | None:
        """A key's value as the run is given it: the user's override, else the recipe's."""
        return user.get(key, self.defaults.get(key))

    def save_alignment(self, user: Mapping[str, str]) -> int | None:
        """The step count every save period must be a multiple of, if any: NeMo RL ranks a
        checkpoint for keep_top_k by its validation metric only when the save lands on a
        validation step (nemo_rl/utils/checkpoint.py @v0.4.0, reference §1.5); a null or
        `train:` metric needs no validation. veRL saves and validates independently."""
        if self.framework != "nemo-rl":
            return None
        from jobs.recipes import compose

        base = compose.base_config(self.framework, self.config_file)

        def effective(key: str) -> str:
            given = self.value_of(key, user)
            return str(compose.value(base, key)) if given is None else given

        metric = effective("checkpointing.metric_name")
        if metric in ("null", "None", "~") or metric.startswith("train:"):
            return None
        period = effective("grpo.val_period")
        return int(period) if period.isdigit() and int(period) > 0 else None

    def payload_dir(self) -> Path | None:
        return PAYLOADS / self.payload if self.payload else None

    def settings(
        self,
        ctx: RunContext,
        user: dict[str, tuple[str, str]],
        adapted: dict[str, str] | None = None,
    ) -> dict[str, str]:
        """The final `key -> value` the trainer gets; `user` maps key -> (prefix, value);
        `adapted` replaces recipe defaults sized for this cluster (jobs.recipes.fit.adapt)."""
        values = {k: ctx.fill(v) for k, v in self.defaults.items()}
        values.update(adapted or {})
        values[self.node_key] = str(ctx.nodes)
        values[self.gpus_key] = str(ctx.gpus_per_node)
        if ctx.wandb:
            values.update({k: ctx.fill(v) for k, v in self.wandb_settings.items()})
        for key, (_prefix, value) in user.items():
            values[key] = value
        return values

    def args(
        self,
        ctx: RunContext,
        user: dict[str, tuple[str, str]],
        adapted: dict[str, str] | None = None,
    ) -> list[str]:
        """The exact override list the trainer's command line carries, in order."""
        args = []
        for key, value in self.settings(ctx, user, adapted).items():
            prefix = user[key][0] if key in user else ""
            if not prefix and key in self.new_keys:
                prefix = "+"
            args.append(f"{prefix}{key}={value}")
        return args

    def render(
        self,
        ctx: RunContext,
        user: dict[str, tuple[str, str]],
        adapted: dict[str, str] | None = None,
    ) -> str:
        """The job's shell entrypoint (Ray runs it with a shell)."""
        args = self.args(ctx, user, adapted)
        steps = []
        if self.setup:
            steps.append(ctx.fill(self.setup))
        if self.cwd:
            steps.append(f"cd {shlex.quote(self.cwd)}")
        steps.append(shlex.join([*self.launcher, *args]))
        return " && ".join(steps)

    def env(self, ctx: RunContext | None = None) -> dict[str, str]:
        # Offline: the model (and the datasets the framework fetches by name) are staged on
        # Lustre by the job's first step or `jobs stage`, so no worker downloads anything.
        env = {HF_HOME_ENV: HF_HOME_PATH, "HF_HUB_OFFLINE": "1", **self.env_vars}
        if ctx is None:
            return env
        env = {k: ctx.fill(v) for k, v in env.items()}
        if self.runs_model_code and ctx.code_sandbox_url:
            env[CODE_SANDBOX_URL_ENV] = ctx.code_sandbox_url
        return env


class _FrameworkRun(TypedDict, total=False):
    """The `Recipe` fields one framework's recipes share: its config keys, locks and env."""

    path_keys: frozenset[str]
    positive_keys: frozenset[str]
    floors: dict[str, tuple[int, str]]
    node_key: str
    gpus_key: str
    checkpoint_key: str
    save_key: str
    model_key: str
    keep_key: str
    locked: dict[str, str]
    must_be_null: dict[str, str]
    env_vars: dict[str, str]
    wandb_settings: dict[str, str]
    cwd: str


_NEMO_LOCKED = {
    # Restarts resume from checkpoints; the 70B and 8B-megatron configs ship with it off (§1.3).
    "checkpointing.enabled": "restarts resume from checkpoints, so checkpointing stays on",
    "cluster.num_nodes": "use --nodes",
    "cluster.gpus_per_node": "use --gpus-per-node",
}

_NEMO_COMMON = {
    "checkpointing.enabled": "true",
    # Absolute: relative paths land in Ray's temporary working_dir and are lost (§0.1).
    "checkpointing.checkpoint_dir": "{run_dir}/checkpoints",
    # A multiple of grpo.val_period (10) so every save is ranked by val:accuracy (§1.5).
    "checkpointing.save_period": "10",
    # Metrics on Lustre by default: all loggers are off in the base config (§1.6, §8).
    "logger.tensorboard_enabled": "true",
    "logger.log_dir": "{run_dir}/logs",
    "logger.wandb.name": "{run}",
}

_NEMO_WANDB = {"logger.wandb_enabled": "true", "logger.wandb.project": "rl-on-gke"}

_NEMO_ENV = {
    # NeMo RL's init_ray() passes os.environ as a runtime_env; without this Ray refuses to
    # merge it with the job's env_vars and the job fails (reference §1.7).
    "RAY_OVERRIDE_JOB_RUNTIME_ENV": "1",
}

_NEMO_RUN: _FrameworkRun = {
    "path_keys": frozenset({"checkpointing.checkpoint_dir", "logger.log_dir"}),
    "positive_keys": frozenset({"checkpointing.save_period"}),
    "node_key": "cluster.num_nodes",
    "gpus_key": "cluster.gpus_per_node",
    "checkpoint_key": "checkpointing.checkpoint_dir",
    "save_key": "checkpointing.save_period",
    "model_key": "policy.model_name",
    "keep_key": "checkpointing.keep_top_k",
    "locked": _NEMO_LOCKED,
    "env_vars": _NEMO_ENV,
    "wandb_settings": _NEMO_WANDB,
    "cwd": NEMO_RL_HOME,
}

_MATH_72B = {
    "policy.model_name": "Qwen/Qwen2.5-72B-Instruct",
    "data.dataset_name": "DeepScaler",
    "grpo.num_prompts_per_step": "32",
    "grpo.num_generations_per_prompt": "8",
    "policy.train_global_batch_size": "256",
}


def _grpo_math_launcher(config_file: str) -> tuple[str, ...]:
    """NeMo RL's GRPO math example (run from NEMO_RL_HOME) on one of its example configs."""
    example = ("uv", "run", "python", "examples/run_grpo_math.py")
    return (*example, "--config", f"examples/configs/{config_file}")


def _math_72b(name: str, summary: str, extra: dict[str, str]) -> Recipe:
    # grpo_math_70B_megatron.yaml is laid out for 8 x 8 GPUs (§1.3): Megatron TP 4 x PP 4 = 16
    # GPUs per model replica, so the run needs 16, 32, 64 or 128 GPUs (DP 1, 2, 4, 8 divides
    # the global batch of 256); jobs.recipes.fit says why any other size is refused. Its numbers are the
    # codelab's, so they are not adapted to other sizes.
    return Recipe(
        name=name,
        framework="nemo-rl",
        summary=summary,
        launcher=_grpo_math_launcher("grpo_math_70B_megatron.yaml"),
        config_file="grpo_math_70B_megatron.yaml",
        defaults={**_MATH_72B, **_NEMO_COMMON, **extra},
        # dataset_name DeepScaler loads these two by name
        # (nemo_rl/data/datasets/response_datasets/deepscaler.py L43-46 @v0.4.0).
        hub_datasets=("agentica-org/DeepScaleR-Preview-Dataset", "HuggingFaceH4/aime_2024"),
        default_nodes=8,
        **_NEMO_RUN,
    )


_VERL_COMMON = {
    "trainer.project_name": "rl-on-gke",
    "trainer.experiment_name": "{run}",
    # TensorBoard to TENSORBOARD_DIR on Lustre (env below); wandb only with a key
    # (wandb_settings), as its init fails without one.
    "trainer.logger": '["console","tensorboard"]',
    # Defaults are relative and -1 (never save): both lose the run (§2.1, §2.3).
    "trainer.default_local_dir": "{run_dir}/checkpoints",
    "trainer.resume_mode": "auto",
}

_VERL_RUN: _FrameworkRun = {
    "locked": {
        "trainer.resume_mode": "restarts resume with resume_mode=auto",
        "trainer.nnodes": "use --nodes",
        "trainer.n_gpus_per_node": "use --gpus-per-node",
    },
    # main_ppo.py passes ray_kwargs.ray_init to ray.init, which on an existing cluster
    # refuses these (ray/_private/worker.py, "When connecting to an existing cluster").
    "must_be_null": {
        f"ray_kwargs.ray_init.{k}": "the job joins the running cluster, and ray.init "
        "refuses it then ('When connecting to an existing cluster ... must not be "
        "provided')"
        for k in ("num_cpus", "num_gpus", "resources", "labels", "object_store_memory")
    },
    "path_keys": frozenset({"trainer.default_local_dir"}),
    "positive_keys": frozenset({"trainer.save_freq"}),
    # veRL deletes the oldest kept actor checkpoint before it saves the next one
    # (verl/utils/checkpoint/fsdp_checkpoint_manager.py L204-213 at v0.6.0): keeping one, a
    # preemption mid-save leaves its tracker on a folder without weights, and every later
    # attempt fails at load.
    "floors": {
        "trainer.max_actor_ckpt_to_keep": (
            2,
            "veRL removes the only kept checkpoint before it writes the next "
            "(fsdp_checkpoint_manager.py L204-213 at v0.6.0): a preemption during that save "
            "leaves nothing to resume from; keep 2 or more",
        )
    },
    "node_key": "trainer.nnodes",
    "gpus_key": "trainer.n_gpus_per_node",
    "checkpoint_key": "trainer.default_local_dir",
    "save_key": "trainer.save_freq",
    "model_key": "actor_rollout_ref.model.path",
    "keep_key": "trainer.max_actor_ckpt_to_keep",
    # From verl/trainer/runtime_env.yaml, which `ray job submit` users pass (§2.5).
    "env_vars": {
        "TORCH_NCCL_AVOID_RECORD_STREAMS": "1",
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
        # veRL's TensorBoard adapter writes to a relative tensorboard_log/ unless
        # this is set (verl/utils/tracking.py, v0.6.0).
        "TENSORBOARD_DIR": "{run_dir}/tensorboard",
    },
    "wandb_settings": {"trainer.logger": '["console","tensorboard","wandb"]'},
}

# The reward file veRL loads by path (custom_reward_function.path). veRL 0.6.0 loads it with
# importlib from that path (verl/trainer/ppo/reward.py get_custom_reward_fn L62-93), in the
# TaskRunner actor (main_ppo.py L282-287), so the path must resolve in that actor's process:
# relative, it resolves against the job's working_dir, which Ray extracts on every node and
# makes each worker's cwd. The payload is that working_dir; the file in it only re-exports
# jobs.rewards (shipped as py_modules, importable in every worker of the job).
CODE_CONTESTS_REWARD = "code_contests_reward.py"


# The CodeFu-7B sample's settings (see `_codecontests`).
_CODECONTESTS_DEFAULTS: dict[str, str] = {
    "algorithm.adv_estimator": "grpo",
    # Written by `rl-jobs data code-contests` (docs/code-contests.md); easy is the
    # tier CodeFu trains on. Validation: the same conversion of the dataset's own `valid`
    # split, so no validation problem is a training problem.
    "data.train_files": "{datasets}/code_contests/easy/train.parquet",
    "data.val_files": "{datasets}/code_contests_valid/easy/train.parquet",
    "data.train_batch_size": "64",
    "data.max_prompt_length": "4096",
    "data.max_response_length": "20480",
    # A statement longer than 4096 tokens is dropped, not a crash (truncation: error).
    "data.filter_overlong_prompts": "True",
    "actor_rollout_ref.model.path": "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
    # Ulysses needs it (workers/config/actor.py FSDPActorConfig.validate).
    "actor_rollout_ref.model.use_remove_padding": "True",
    "actor_rollout_ref.actor.optim.lr": "1e-5",
    "actor_rollout_ref.actor.ppo_mini_batch_size": "32",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "1",
    # 4 divides the model's 28 attention heads and 4 KV heads (monkey_patch.py L273-279)
    # and every 8-GPU node count; the ref's size follows the actor's by interpolation.
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size": "4",
    "actor_rollout_ref.actor.use_kl_loss": "True",
    "actor_rollout_ref.actor.kl_loss_coef": "0.001",
    "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",
    "actor_rollout_ref.actor.fsdp_config.param_offload": "True",
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload": "True",
    "actor_rollout_ref.ref.fsdp_config.param_offload": "True",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": "2",
    "actor_rollout_ref.rollout.name": "vllm",
    "actor_rollout_ref.rollout.n": "8",
    "actor_rollout_ref.rollout.tensor_model_parallel_size": "2",
    "actor_rollout_ref.rollout.gpu_memory_utilization": "0.9",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": "2",
    # With chunked prefill on, vLLM rollout refuses a token budget below prompt +
    # response (vllm_rollout_spmd.py L161-165): 4096 + 20480.
    "actor_rollout_ref.rollout.max_num_batched_tokens": "24576",
    "algorithm.use_kl_in_reward": "False",
    # One call per batch (workers/reward_manager/batch.py): jobs.rewards.batch scores the
    # batch's solutions concurrently and raises on a broken executor, where `naive` scores
    # one solution at a time and `prime` turns any error or timeout into a 0 reward.
    "reward_model.reward_manager": "batch",
    "custom_reward_function.path": CODE_CONTESTS_REWARD,
    "custom_reward_function.name": "compute_score_batch",
    # v0.6.0's config has no reward_kwargs (get_custom_reward_fn reads it if present):
    # added with `+`. binary: the sample's all-or-nothing reward; concurrency: the
    # sandbox service's replicas x concurrency (components/k8s/sandbox.py, 2 x 4).
    "custom_reward_function.reward_kwargs.binary": "True",
    "custom_reward_function.reward_kwargs.max_tests": "100",
    "custom_reward_function.reward_kwargs.concurrency": "8",
    **_VERL_COMMON,
    "trainer.save_freq": "16",
    "trainer.test_freq": "16",
    # A 7.6B actor with fp32 Adam state is ~85 GiB per save (jobs.recipes.ckpt_size).
    "trainer.max_actor_ckpt_to_keep": "3",
    "trainer.total_epochs": "2",
}


def _codecontests() -> Recipe:
    # The CodeFu-7B sample's essentials (reference §3.3; every key checked against veRL 0.6.0's
    # composed config by tests/jobs/recipes/test_fit.py): GRPO on DeepSeek-R1-Distill-Qwen-7B, rollout
    # n 8, prompts up to 4096 and responses up to 20480 tokens, Ulysses sequence parallel 4,
    # vLLM TP 2, FSDP param and optimizer offload, KL loss 0.001 low_var_kl, lr 1e-5, 2 epochs,
    # save and test every 16 steps. Not kept: the sample's dynamic batch sizes; fixed micro-batches
    # of 1 keep the batch rules (jobs.recipes.fit) checkable and the sizes adaptable to the GPU count.
    return Recipe(
        name="verl-grpo-codecontests",
        framework="verl",
        summary="DeepSeek-R1-Distill-Qwen-7B GRPO on code_contests (the CodeFu-7B recipe): C++ "
        "solutions compiled and run on hidden tests in a sandbox, rollout n=8, 20k-token "
        "responses, Ulysses SP 4; 2 epochs, a checkpoint every 16 steps, the newest 3 "
        "kept; batch sizes grow with the GPU count",
        launcher=("python3", "-m", "verl.trainer.main_ppo"),
        config_file="ppo_trainer.yaml",
        defaults=_CODECONTESTS_DEFAULTS,
        new_keys=frozenset(
            {
                "custom_reward_function.reward_kwargs.binary",
                "custom_reward_function.reward_kwargs.max_tests",
                "custom_reward_function.reward_kwargs.concurrency",
            }
        ),
        default_nodes=1,
        adapt_batch=True,
        payload="code_contests",
        runs_model_code=True,
        **_VERL_RUN,
    )


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        _math_72b(
            "nemo-rl-grpo-math",
            "Qwen2.5-72B-Instruct GRPO on DeepScaleR, Megatron TP4 x PP4: one full epoch "
            "(grpo.max_num_epochs=1), a checkpoint every 10 steps, the best 3 by val:accuracy "
            "kept (plus the latest)",
            {},
        ),
        _math_72b(
            "nemo-rl-grpo-math-codelab",
            "The GKE codelab's short run: the same 72B DeepScaleR setup for 20 GRPO steps, a "
            "checkpoint every 2 steps, the newest 2 kept",
            # The codelab's settings (reference §8): 20 steps, save every 2, keep the newest 2
            # (metric_name null ranks by step, so no validation metric is needed).
            {
                "grpo.max_num_steps": "20",
                "checkpointing.save_period": "2",
                "checkpointing.keep_top_k": "2",
                "checkpointing.metric_name": "null",
            },
        ),
        Recipe(
            name="nemo-rl-grpo-gsm8k",
            framework="nemo-rl",
            summary="Qwen2.5-1.5B-Instruct GRPO on GSM8K through NeMo RL's ResponseDataset "
            "(DTensor): one epoch, a checkpoint every 10 steps, the best 3 kept; the "
            "global batch grows to a multiple of the GPU count",
            # v0.4.0's ResponseDataset cannot pass GSM8K's "main" subset to load_dataset (§1.4),
            # so the payload writes question/answer/task_name JSONL on Lustre once (jobs.data.gsm8k)
            # and the run reads that.
            setup="python3 prepare_gsm8k.py --format nemo --out {datasets}/gsm8k",
            launcher=_grpo_math_launcher("grpo_math_1B.yaml"),
            config_file="grpo_math_1B.yaml",
            defaults={
                "policy.model_name": "Qwen/Qwen2.5-1.5B-Instruct",
                "data.dataset_name": "ResponseDataset",
                "data.train_data_path": "{datasets}/gsm8k/nemo/train.jsonl",
                "data.val_data_path": "{datasets}/gsm8k/nemo/test.jsonl",
                "data.input_key": "question",
                "data.output_key": "answer",
                # grpo_math_1B.yaml saves DTensor v2 checkpoints, which v0.4.0's
                # convert_dcp_to_hf.py cannot read (fixed upstream after v0.4.0, NVIDIA-NeMo/RL
                # PR #1881): a Hugging Face copy in each checkpoint is what `jobs export` takes.
                "checkpointing.save_consolidated": "true",
                "grpo.num_prompts_per_step": "32",
                "grpo.num_generations_per_prompt": "16",
                **_NEMO_COMMON,
            },
            new_keys=frozenset(
                {"data.train_data_path", "data.val_data_path", "data.input_key", "data.output_key"}
            ),
            default_nodes=1,
            adapt_batch=True,
            payload="gsm8k",
            # prepare_gsm8k.py loads it by name (jobs/payloads/gsm8k).
            hub_datasets=("openai/gsm8k:main",),
            **_NEMO_RUN,
        ),
        Recipe(
            name="verl-grpo-gsm8k",
            framework="verl",
            summary="Qwen2.5-3B-Instruct GRPO on GSM8K with veRL (FSDP, vLLM rollout n=5): 15 "
            "epochs, a checkpoint every 20 steps, the newest 3 kept; batch sizes grow "
            "with the GPU count",
            setup="python3 prepare_gsm8k.py --format verl --out {datasets}/gsm8k",
            launcher=("python3", "-m", "verl.trainer.main_ppo"),
            config_file="ppo_trainer.yaml",
            defaults={
                "algorithm.adv_estimator": "grpo",
                "data.train_files": "{datasets}/gsm8k/verl/train.parquet",
                "data.val_files": "{datasets}/gsm8k/verl/test.parquet",
                "data.train_batch_size": "256",
                "data.max_prompt_length": "512",
                "data.max_response_length": "1024",
                "actor_rollout_ref.model.path": "Qwen/Qwen2.5-3B-Instruct",
                "actor_rollout_ref.rollout.name": "vllm",
                # GRPO compares several answers per prompt; n=1 has no group to compare (§2.1).
                "actor_rollout_ref.rollout.n": "5",
                "actor_rollout_ref.rollout.tensor_model_parallel_size": "1",
                "actor_rollout_ref.rollout.gpu_memory_utilization": "0.6",
                "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": "16",
                "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": "16",
                "actor_rollout_ref.actor.ppo_mini_batch_size": "64",
                "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "8",
                "actor_rollout_ref.actor.use_kl_loss": "True",
                "actor_rollout_ref.actor.kl_loss_coef": "0.001",
                "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",
                "algorithm.use_kl_in_reward": "False",
                **_VERL_COMMON,
                "trainer.save_freq": "20",
                # veRL keeps every global_step_N by default (null, §2.1): a 3B actor with its
                # optimizer is tens of GB per save, so keep the newest 3 and Lustre does not fill.
                "trainer.max_actor_ckpt_to_keep": "3",
                "trainer.test_freq": "5",
                "trainer.total_epochs": "15",
            },
            default_nodes=1,
            adapt_batch=True,
            payload="gsm8k",
            # prepare_gsm8k.py loads it by name (jobs/payloads/gsm8k).
            hub_datasets=("openai/gsm8k:main",),
            **_VERL_RUN,
        ),
        _codecontests(),
    )
}
