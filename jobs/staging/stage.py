"""The stage job's driver: a model's pinned snapshot onto Lustre, then NeMo RL's conversion, once.

`jobs stage MODEL` submits `python -m jobs.staging.stage --model M --revision R [--convert ...]`
as a Ray job. The download runs on the node that runs this driver; the conversion (when asked)
needs GPUs, so the CLI then reserves them for the driver (entrypoint_num_gpus) and this module
starts NeMo RL's own import under torchrun on them (jobs/staging/megatron_import.py). Running it
again is safe: a complete snapshot or conversion is reused, a partial one resumed or redone.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from jobs.staging import datasets_cache, entry, layout, megatron, record
from jobs.staging.download import HubUnreachable, StageError, download
from jobs.staging.record import StagedModel

# Where NeMo RL's image keeps its code and the Megatron worker's venv (docker/Dockerfile L53-58
# @v0.4.0: NEMO_RL_VENV_DIR=/opt/ray_venvs, WORKDIR /opt/nemo-rl; the venv is named after the
# actor class, nemo_rl/utils/venvs.py L59-69).
NEMO_RL_HOME = "/opt/nemo-rl"
MEGATRON_VENV = "nemo_rl.models.policy.megatron_policy_worker.MegatronPolicyWorker"


def megatron_python() -> str:
    return f"{os.environ.get('NEMO_RL_VENV_DIR', '/opt/ray_venvs')}/{MEGATRON_VENV}/bin/python"


def default_converter(gpus: int) -> list[str]:
    script = Path(__file__).with_name("megatron_import.py")
    return [
        megatron_python(),
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={gpus}",
        str(script),
    ]


def _snapshot(model: str, revision: str, home: Path) -> StagedModel:
    staged = record.load(home, model)
    if (
        staged is not None
        and staged.is_intact(home)
        and revision in (staged.revision, staged.commit)
    ):
        entry.say(
            f"{model}@{revision} already staged (commit {staged.commit}, "
            f"{staged.staged_at}): reused"
        )
        return staged
    if staged is not None and revision not in (staged.revision, staged.commit):
        entry.say(
            f"{model} was staged at {staged.revision} (commit {staged.commit}); "
            f"staging {revision} now, and runs load that from here on"
        )
    return download(model, revision, home, entry.say)


def _converter(base: list[str], model: str, gpus: int, dtype: str) -> megatron.Converter:
    def run(work: Path) -> int:
        argv = [
            *base,
            "--model",
            model,
            "--out",
            str(work),
            "--tensor-parallel",
            str(gpus),
            "--dtype",
            dtype,
        ]
        entry.say("running: " + shlex.join(argv))
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # reads the snapshot staged above
        pythonpath = [NEMO_RL_HOME, env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in pythonpath if p)
        cwd = NEMO_RL_HOME if os.path.isdir(NEMO_RL_HOME) else None
        return subprocess.run(argv, env=env, cwd=cwd, check=False).returncode

    return run


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jobs.staging.stage", description=__doc__.splitlines()[0]
    )
    entry.common_arguments(p)
    p.add_argument("--revision", default="main", help="a branch, tag or commit (default main)")
    p.add_argument("--convert", action="store_true", help="also convert it for NeMo RL Megatron")
    p.add_argument("--gpus", type=int, default=8, help="GPUs the conversion spreads over (TP)")
    p.add_argument("--dtype", default="bfloat16", help="the recipe's policy.precision")
    p.add_argument(
        "--converter",
        default=None,
        help="the conversion command (default: NeMo RL's import under torchrun)",
    )
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if (problem := entry.check_model(args.model)) is not None:
        return entry.fail(problem)
    if args.gpus < 1:
        return entry.fail(f"--gpus {args.gpus}: the conversion needs at least 1 GPU")
    entry.go_online()
    home = entry.home_of(args)
    try:
        staged = _snapshot(args.model, args.revision, home)
        for spec in args.dataset:
            datasets_cache.stage(home, spec, entry.say)
        if args.convert:
            base = shlex.split(args.converter) if args.converter else default_converter(args.gpus)
            megatron.convert(
                layout.megatron_dir(home, args.model),
                args.model,
                staged.commit,
                _converter(base, args.model, args.gpus, args.dtype),
                entry.say,
            )
    except HubUnreachable as e:
        return entry.fail(str(e), entry.HUB_UNREACHABLE_EXIT)
    except StageError as e:
        return entry.fail(str(e))
    entry.say(f"stage complete: {args.model}@{staged.commit}; runs load it with HF_HUB_OFFLINE=1")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
