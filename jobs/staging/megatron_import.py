"""The conversion worker: one torchrun rank of NeMo RL's own HF -> Megatron import.

Runs in NeMo RL's image with the Megatron worker's interpreter (the venv NeMo RL builds for
MegatronPolicyWorker, nemo_rl/distributed/ray_actor_environment_registry.py L34 @v0.4.0), started
by `jobs.staging.stage` as `torchrun --standalone --nproc-per-node N`. Standard library and
NeMo RL only: the `jobs` package is not on this interpreter's path.

Each rank does what the policy worker does before its first step (megatron_policy_worker.py
L501-511 @v0.4.0): init the NCCL process group, then `import_model_from_hf_name(name, path,
megatron_cfg)` (nemo_rl/models/megatron/community_import.py L23-100), which reads the seven
parallelism keys below and saves a Megatron distributed checkpoint; it restores the model's
original parallel sizes before saving (L80-89), so a conversion with TP N on one node loads
under the recipe's own TP x PP.
"""

from __future__ import annotations

import argparse
import os
import sys


def megatron_config(tensor_parallel: int, dtype: str) -> dict[str, object]:
    # The keys community_import.py L58-77 reads; the values of grpo_math_1B_megatron.yaml
    # L84-90 except the tensor-parallel size, which spreads the model over this node's GPUs.
    return {
        "tensor_model_parallel_size": tensor_parallel,
        "pipeline_model_parallel_size": 1,
        "expert_model_parallel_size": 1,
        "expert_tensor_parallel_size": 1,
        "num_layers_in_first_pipeline_stage": None,
        "num_layers_in_last_pipeline_stage": None,
        "pipeline_dtype": dtype,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tensor-parallel", type=int, required=True)
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args(argv)
    import torch
    from nemo_rl.models.megatron.community_import import import_model_from_hf_name

    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    torch.distributed.init_process_group("nccl")
    import_model_from_hf_name(
        args.model, args.out, megatron_config(args.tensor_parallel, args.dtype)
    )
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
