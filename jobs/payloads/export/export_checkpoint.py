"""Convert a run's latest (or a chosen) checkpoint to Hugging Face format; runs on the cluster.

`rl-jobs export RUN` submits this as a Ray job. The CLI cannot see Lustre, so the choice
of checkpoint is made here (`jobs.head.checkpoints`, shipped with the job as Ray `py_modules`), then
the framework's own converter runs: NeMo RL's examples/converters scripts, or veRL's
`verl.model_merger`. Exit codes: the converter's, or 1 when there is nothing to convert.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from jobs.head import checkpoints, eval_result


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=sorted(checkpoints.BACKENDS), required=True)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--checkpoint-dir", type=Path, required=True)
    parser.add_argument("--out", required=True, help="output folder; {step} is filled in")
    parser.add_argument("--step", type=int, default=None)
    parser.add_argument(
        "--best-from", type=Path, default=None, help="the run's eval folder: its best-scored step"
    )
    return parser.parse_args(argv)


def best_step(framework: str, checkpoint_dir: Path, eval_dir: Path) -> int:
    """The complete checkpoint with the highest held-out score (jobs.head.eval_result.best_of);
    a step without a score is never taken, nor one whose checkpoint is gone."""
    complete = checkpoints.complete_steps(framework, checkpoint_dir)
    results = eval_result.read_dir(eval_dir)
    chosen = eval_result.best_of([r for r in results if r.get("step") in complete])
    if chosen is None:
        scored = sorted(int(r["step"]) for r in results if isinstance(r.get("step"), int))
        raise checkpoints.NoCheckpoint(
            f"no complete checkpoint in {checkpoint_dir} has a held-out score in {eval_dir} "
            f"(scored steps: {', '.join(map(str, scored)) or 'none'}; complete steps: "
            f"{', '.join(map(str, sorted(complete))) or 'none'}); evaluate one with rl-jobs eval"
        )
    print(
        f"export: step {chosen['step']} scores best on {chosen['dataset']} "
        f"({100 * float(chosen['score']):.1f}%)",
        flush=True,
    )
    return int(chosen["step"])


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        step = args.step
        if args.best_from is not None:
            step = best_step(args.framework, args.checkpoint_dir, args.best_from)
        ckpt = checkpoints.pick(args.framework, args.checkpoint_dir, step)
        out = checkpoints.out_path(args.out, ckpt.step)
        if out.exists():
            # Both NeMo RL converters raise FileExistsError on an existing output; say it first.
            raise checkpoints.NoCheckpoint(
                f"{out} already exists; delete it or pass another "
                f"--out to export step {ckpt.step} again"
            )
        todo = checkpoints.plan(args.framework, args.backend, ckpt, out)
    except checkpoints.NoCheckpoint as e:
        print(f"export: {e}", file=sys.stderr, flush=True)
        return 1
    print(f"export: step {ckpt.step} from {ckpt.path} -> {out}", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    if todo.copy_from is not None:
        print(f"export: {todo.note}", flush=True)
        shutil.copytree(todo.copy_from, out)
    else:
        print(
            f"export: running {shlex.join(todo.argv)}" + (f" in {todo.cwd}" if todo.cwd else ""),
            flush=True,
        )
        try:
            code = subprocess.run(list(todo.argv), cwd=todo.cwd).returncode
        except OSError as e:  # no such program or folder: not the image this recipe runs in
            print(f"export: cannot run the converter: {e}", file=sys.stderr, flush=True)
            return 127
        if code != 0:
            print(f"export: the converter exited {code}", file=sys.stderr, flush=True)
            return code
    if todo.tokenizer_from is not None:
        # The run's own tokenizer files beside the weights (NeMo RL's checkpointing docs).
        shutil.copytree(todo.tokenizer_from, out, dirs_exist_ok=True)
    print(f"export: done: {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
