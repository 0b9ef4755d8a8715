"""The recipe catalogue: GRPO runs pinned to one framework version each, and how they render.

Framework versions and images come from `components.catalogue.FRAMEWORKS` only. Config keys
are those of the pinned versions (reference grpo-jobs-and-ray.md §1.3-1.6 for NeMo RL v0.4.0,
§2.1-2.3 for veRL); a key not listed here must be written `+key=value` (a new key) or
`++key=value` (Hydra's add-or-override), which both frameworks accept.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from components.catalogue import FRAMEWORKS, FrameworkSpec
from jobs.errors import UsageError

# Managed Lustre is mounted here on the head and every worker (components/k8s Lustre PVC).
LUSTRE = "/lustre"
RUNS_ROOT = f"{LUSTRE}/runs"
DATASETS_ROOT = f"{LUSTRE}/datasets"
# One model cache for every run: a 72B download is ~150 GB and must not repeat per pod.
HF_HOME = f"{LUSTRE}/huggingface_cache"
# NeMo RL's code in its NGC image (docker/Dockerfile WORKDIR); `uv run` needs its pyproject.
NEMO_RL_HOME = "/opt/nemo-rl"
PAYLOADS = Path(__file__).parent / "payloads"

Framework = Literal["nemo-rl", "verl"]


class RunContext(BaseModel):
    """What a recipe needs to know about one run to render its command."""

    model_config = ConfigDict(frozen=True)

    run: str
    nodes: int = Field(ge=1)
    gpus_per_node: int = Field(ge=1)
    # The stack gives pods WANDB_API_KEY (stack output wandbEnabled): also log to W&B.
    wandb: bool = False

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
    # Keys absent from the framework's base config: rendered `+key=value` (Hydra refuses them bare).
    new_keys: frozenset[str] = frozenset()
    # Further keys of the pinned config a user may set with a plain `key=value`.
    known_keys: frozenset[str] = frozenset()
    # Keys the user may not change, with the reason shown when they try.
    locked: dict[str, str] = {}
    # Keys whose value is an output path: must stay absolute under /lustre/.
    path_keys: frozenset[str] = frozenset()
    # Keys that must stay a positive integer: 0 or -1 would switch checkpoint saving off.
    positive_keys: frozenset[str] = frozenset()
    node_key: str
    gpus_key: str
    checkpoint_key: str
    default_nodes: int
    default_gpus_per_node: int = 8
    # The smallest cluster the recipe's parallel layout fits, and the multiple the GPU total
    # must be (the model-parallel group size), with where the numbers come from.
    min_gpus: int = 1
    gpu_multiple: int = 1
    gpu_rule: str = ""
    env_vars: dict[str, str] = {}
    # Settings that also send metrics to W&B, applied when the stack has a W&B key.
    wandb_settings: dict[str, str] = {}
    # A directory under jobs/payloads/ uploaded as the job's working_dir, when the run needs it.
    payload: str | None = None

    @property
    def spec(self) -> FrameworkSpec:
        return FRAMEWORKS[self.framework]

    def all_keys(self) -> set[str]:
        return set(self.defaults) | set(self.known_keys)

    def payload_dir(self) -> Path | None:
        return PAYLOADS / self.payload if self.payload else None

    def settings(self, ctx: RunContext, user: dict[str, tuple[str, str]]) -> dict[str, str]:
        """The final `key -> value` the trainer gets; `user` maps key -> (prefix, value)."""
        values = {k: ctx.fill(v) for k, v in self.defaults.items()}
        values[self.node_key] = str(ctx.nodes)
        values[self.gpus_key] = str(ctx.gpus_per_node)
        if ctx.wandb:
            values.update({k: ctx.fill(v) for k, v in self.wandb_settings.items()})
        for key, (_prefix, value) in user.items():
            values[key] = value
        return values

    def render(self, ctx: RunContext, user: dict[str, tuple[str, str]]) -> str:
        """The job's shell entrypoint (Ray runs it with a shell)."""
        args = []
        for key, value in self.settings(ctx, user).items():
            prefix = user[key][0] if key in user else ""
            if not prefix and key in self.new_keys:
                prefix = "+"
            args.append(f"{prefix}{key}={value}")
        steps = []
        if self.setup:
            steps.append(ctx.fill(self.setup))
        if self.cwd:
            steps.append(f"cd {shlex.quote(self.cwd)}")
        steps.append(shlex.join([*self.launcher, *args]))
        return " && ".join(steps)

    def check_size(self, nodes: int, gpus_per_node: int) -> None:
        """Refuse, before anything is submitted, a cluster the recipe's layout cannot fit."""
        total = nodes * gpus_per_node
        if total < self.min_gpus or total % self.gpu_multiple:
            raise UsageError(
                f"recipe {self.name} needs at least {self.min_gpus} GPUs in multiples of "
                f"{self.gpu_multiple}, but {nodes} node(s) x {gpus_per_node} GPU(s) = {total}",
                f"{self.gpu_rule}; use a bigger stack or --nodes/--gpus-per-node")

    def env(self, ctx: RunContext | None = None) -> dict[str, str]:
        env = {"HF_HOME": HF_HOME, **self.env_vars}
        return {k: ctx.fill(v) for k, v in env.items()} if ctx else env


# NeMo RL v0.4.0 config keys a user may set (grpo_math_1B.yaml and its megatron/70B children).
_NEMO_KEYS = frozenset({
    "policy.model_name", "policy.tokenizer.name", "policy.train_global_batch_size",
    "policy.train_micro_batch_size", "policy.max_total_sequence_length", "policy.precision",
    "policy.generation.vllm_cfg.tensor_parallel_size",
    "policy.generation.vllm_cfg.gpu_memory_utilization",
    "policy.generation.colocated.enabled", "policy.dtensor_cfg.enabled",
    "policy.dtensor_cfg.tensor_parallel_size", "policy.megatron_cfg.enabled",
    "policy.megatron_cfg.tensor_model_parallel_size",
    "policy.megatron_cfg.pipeline_model_parallel_size",
    "grpo.num_prompts_per_step", "grpo.num_generations_per_prompt", "grpo.max_num_steps",
    "grpo.max_num_epochs", "grpo.val_period", "grpo.val_at_start", "grpo.max_val_samples",
    "grpo.async_grpo.enabled",
    "checkpointing.enabled", "checkpointing.checkpoint_dir", "checkpointing.save_period",
    "checkpointing.keep_top_k", "checkpointing.metric_name", "checkpointing.higher_is_better",
    "checkpointing.checkpoint_must_save_by",
    "logger.log_dir", "logger.wandb_enabled", "logger.tensorboard_enabled",
    "logger.mlflow_enabled", "logger.swanlab_enabled", "logger.monitor_gpus",
    "logger.num_val_samples_to_print", "logger.wandb.project", "logger.wandb.name",
    "data.dataset_name", "env.math.math_verify_impl",
    "cluster.num_nodes", "cluster.gpus_per_node",
})

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

_VERL_KEYS = frozenset({
    "algorithm.adv_estimator", "algorithm.use_kl_in_reward",
    "data.train_files", "data.val_files", "data.train_batch_size", "data.max_prompt_length",
    "data.max_response_length", "data.filter_overlong_prompts", "data.truncation",
    "data.prompt_key", "data.reward_fn_key",
    "actor_rollout_ref.model.path", "actor_rollout_ref.rollout.name",
    "actor_rollout_ref.rollout.mode", "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "actor_rollout_ref.rollout.gpu_memory_utilization",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.actor.optim.lr",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "actor_rollout_ref.actor.use_kl_loss",
    "actor_rollout_ref.actor.kl_loss_coef", "actor_rollout_ref.actor.kl_loss_type",
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size",
    "trainer.nnodes", "trainer.n_gpus_per_node", "trainer.default_local_dir",
    "trainer.save_freq", "trainer.test_freq", "trainer.resume_mode", "trainer.resume_from_path",
    "trainer.max_actor_ckpt_to_keep", "trainer.logger", "trainer.total_epochs",
    "trainer.total_training_steps", "trainer.project_name", "trainer.experiment_name",
    "custom_reward_function.path", "custom_reward_function.name", "reward_model.enable",
    "ray_kwargs.ray_init.num_cpus",
})

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            name="nemo-rl-grpo-math",
            framework="nemo-rl",
            summary="Qwen2.5-72B-Instruct GRPO on DeepScaleR (the GKE codelab run), Megatron backend",
            cwd=NEMO_RL_HOME,
            launcher=("uv", "run", "python", "examples/run_grpo_math.py",
                      "--config", "examples/configs/grpo_math_70B_megatron.yaml"),
            defaults={
                "policy.model_name": "Qwen/Qwen2.5-72B-Instruct",
                "data.dataset_name": "DeepScaler",
                "grpo.num_prompts_per_step": "32",
                "grpo.num_generations_per_prompt": "8",
                "policy.train_global_batch_size": "256",
                **_NEMO_COMMON,
            },
            known_keys=_NEMO_KEYS,
            locked=_NEMO_LOCKED,
            path_keys=frozenset({"checkpointing.checkpoint_dir", "logger.log_dir"}),
            positive_keys=frozenset({"checkpointing.save_period"}),
            node_key="cluster.num_nodes",
            gpus_key="cluster.gpus_per_node",
            checkpoint_key="checkpointing.checkpoint_dir",
            # grpo_math_70B_megatron.yaml is laid out for 8 x 8 GPUs (§1.3).
            default_nodes=8,
            # Its Megatron policy is tensor 4 x pipeline 4 = 16 GPUs per model replica (and
            # vLLM generation is TP 8, which divides 16): fewer GPUs cannot hold one replica,
            # and a total that is not a multiple of 16 leaves data parallelism uneven.
            min_gpus=16,
            gpu_multiple=16,
            gpu_rule=("grpo_math_70B_megatron.yaml (NeMo RL v0.4.0) sets megatron "
                      "tensor_model_parallel_size=4 x pipeline_model_parallel_size=4 = 16 GPUs per "
                      "replica, laid out for cluster.num_nodes=8 x gpus_per_node=8"),
            env_vars=_NEMO_ENV,
            wandb_settings=_NEMO_WANDB,
        ),
        Recipe(
            name="nemo-rl-grpo-gsm8k",
            framework="nemo-rl",
            summary="Qwen2.5-1.5B-Instruct GRPO on GSM8K through NeMo RL's ResponseDataset",
            # v0.4.0's ResponseDataset cannot pass GSM8K's "main" subset to load_dataset (§1.4),
            # so the payload writes question/answer/task_name JSONL on Lustre once (jobs.data.gsm8k)
            # and the run reads that.
            setup="python3 prepare_gsm8k.py --format nemo --out {datasets}/gsm8k",
            cwd=NEMO_RL_HOME,
            launcher=("uv", "run", "python", "examples/run_grpo_math.py",
                      "--config", "examples/configs/grpo_math_1B.yaml"),
            defaults={
                "policy.model_name": "Qwen/Qwen2.5-1.5B-Instruct",
                "data.dataset_name": "ResponseDataset",
                "data.train_data_path": "{datasets}/gsm8k/nemo/train.jsonl",
                "data.val_data_path": "{datasets}/gsm8k/nemo/test.jsonl",
                "data.input_key": "question",
                "data.output_key": "answer",
                "grpo.num_prompts_per_step": "32",
                "grpo.num_generations_per_prompt": "16",
                **_NEMO_COMMON,
            },
            new_keys=frozenset({"data.train_data_path", "data.val_data_path", "data.input_key",
                                "data.output_key", "data.train_split", "data.val_split"}),
            known_keys=_NEMO_KEYS | {"data.train_split", "data.val_split"},
            locked=_NEMO_LOCKED,
            path_keys=frozenset({"checkpointing.checkpoint_dir", "logger.log_dir"}),
            positive_keys=frozenset({"checkpointing.save_period"}),
            node_key="cluster.num_nodes",
            gpus_key="cluster.gpus_per_node",
            checkpoint_key="checkpointing.checkpoint_dir",
            default_nodes=1,
            env_vars=_NEMO_ENV,
            wandb_settings=_NEMO_WANDB,
            payload="gsm8k",
        ),
        Recipe(
            name="verl-grpo-gsm8k",
            framework="verl",
            summary="Qwen2.5-3B-Instruct GRPO on GSM8K with veRL, vLLM rollout (n=5)",
            setup="python3 prepare_gsm8k.py --format verl --out {datasets}/gsm8k",
            launcher=("python3", "-m", "verl.trainer.main_ppo"),
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
                "trainer.project_name": "rl-on-gke",
                "trainer.experiment_name": "{run}",
                # TensorBoard to TENSORBOARD_DIR on Lustre (env below); wandb only with a key
                # (wandb_settings), as its init fails without one.
                "trainer.logger": '["console","tensorboard"]',
                # Defaults are relative and -1 (never save): both lose the run (§2.1, §2.3).
                "trainer.default_local_dir": "{run_dir}/checkpoints",
                "trainer.save_freq": "20",
                # veRL keeps every global_step_N by default (null, §2.1): a 3B actor with its
                # optimizer is tens of GB per save, so keep the newest 3 and Lustre does not fill.
                "trainer.max_actor_ckpt_to_keep": "3",
                "trainer.test_freq": "5",
                "trainer.resume_mode": "auto",
                "trainer.total_epochs": "15",
            },
            known_keys=_VERL_KEYS,
            locked={
                "trainer.resume_mode": "restarts resume with resume_mode=auto",
                "trainer.nnodes": "use --nodes",
                "trainer.n_gpus_per_node": "use --gpus-per-node",
            },
            path_keys=frozenset({"trainer.default_local_dir"}),
            positive_keys=frozenset({"trainer.save_freq"}),
            node_key="trainer.nnodes",
            gpus_key="trainer.n_gpus_per_node",
            checkpoint_key="trainer.default_local_dir",
            default_nodes=1,
            # From verl/trainer/runtime_env.yaml, which `ray job submit` users pass (§2.5).
            env_vars={"TORCH_NCCL_AVOID_RECORD_STREAMS": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                      # veRL's TensorBoard adapter writes to a relative tensorboard_log/ unless
                      # this is set (verl/utils/tracking.py, v0.6.0).
                      "TENSORBOARD_DIR": "{run_dir}/tensorboard"},
            wandb_settings={"trainer.logger": '["console","tensorboard","wandb"]'},
            payload="gsm8k",
        ),
    )
}
