"""The eval job: a run's checkpoint (or its base model) evaluated on held-out data, on the cluster.

`rl-jobs eval RUN` submits `python3 -m jobs.head.eval_job ...` as a Ray job (the `jobs` package
as py_modules; the working dir is the recipe's payload, where veRL finds a reward file). It takes the step asked for if that checkpoint is
complete (`jobs.head.checkpoints`, the rule export and resume share), converts a NeMo RL step to
Hugging Face format when the run's `hf/step_N` does not hold it yet (run_eval.py loads HF models
only), runs the framework's own evaluation (the command after `--`), then scores pass@k from the
per-sample output and writes `<run dir>/eval/step_N.json` (jobs.head.eval_result).
The held-out file is evaluated in shards (jobs.head.eval_shards): run again (a resubmission after
a lost node) it keeps the shards already finished, starts the unfinished one over into an emptied
folder, and a result already written for the same settings is kept, not redone.
Exit codes: the framework's or the converter's, 1 when there is nothing to evaluate.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from jobs.head import checkpoints, eval_result, eval_shards
from jobs.head.eval_shards import Shard

# Problems per shard: a lost node costs at most one shard's work, and each shard starts the
# framework (its model load) again; 200 cuts GSM8K's 1,319 test problems into 7.
DEFAULT_SHARD_SIZE = 200
# The head's environment may set another default (the shard size is part of the fingerprint, so
# every try of one eval must see the same value: a cluster-wide setting, not a per-try one).
SHARD_SIZE_ENV = "JOBS_EVAL_SHARD_SIZE"
SAMPLES = {"nemo-rl": eval_result.nemo_rl_samples, "verl": eval_result.verl_samples}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=sorted(SAMPLES), required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--step", type=int, default=None, help="omitted: the base model")
    parser.add_argument("--checkpoint-dir", type=Path, required=True)
    parser.add_argument("--backend", default="", help="NeMo RL: the export's converter backend")
    parser.add_argument("--hf-dir", default="", help="NeMo RL: the step's Hugging Face folder")
    parser.add_argument(
        "--raw", type=Path, required=True, help="where the framework writes samples"
    )
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--data-path", default="", help="the held-out file, for its revision")
    parser.add_argument("--model", required=True, help="the recipe's base model")
    parser.add_argument("--pin", type=Path, required=True, help="the run's staged-model.json")
    parser.add_argument("--metric", required=True)
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument(
        "--cache-dir", default="", help="where base-model results are shared between runs"
    )
    parser.add_argument("--cwd", default=None, help="where the framework's command runs")
    parser.add_argument(
        "--shard-size",
        type=int,
        default=int(os.environ.get(SHARD_SIZE_ENV, DEFAULT_SHARD_SIZE)),
        help=f"problems per shard (default {DEFAULT_SHARD_SIZE}, or ${SHARD_SIZE_ENV} on the head)"
        ", each kept once done (0: one shard)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the framework's eval")
    args = parser.parse_args(argv)
    args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.command:
        parser.error("the framework's command is missing after --")
    return args


def _settings(args: argparse.Namespace) -> eval_result.Settings:
    data = Path(args.data_path) if args.data_path else None
    return eval_result.Settings(
        run=args.run,
        step=args.step,
        dataset=args.dataset,
        metric=args.metric,
        k=args.k,
        n=args.n,
        seed=args.seed,
        data_revision=eval_result.file_digest(data) if data else f"by name: {args.dataset}",
        model_revision=_model_revision(args),
    )


def _model_revision(args: argparse.Namespace) -> str:
    """`<model>@<commit>` the run started from (its pin, jobs.staging.ensure), and the step."""
    try:
        commit = str(json.loads(args.pin.read_text())["commit"])
    except (OSError, ValueError, KeyError, TypeError):
        commit = "unpinned"
    base = f"{args.model}@{commit}"
    return base if args.step is None else f"{args.run} step {args.step} (from {base})"


def _already(out_dir: Path, settings: eval_result.Settings) -> dict[str, object] | None:
    """The result of the same settings, when one is there: a resubmitted job that finished."""
    try:
        kept = json.loads((out_dir / eval_result.name_of(settings.step)).read_text())
    except (OSError, ValueError):
        return None
    same = ("metric", "k", "n", "seed", "data_revision", "model_revision")
    ok = isinstance(kept, dict) and all(kept.get(key) == getattr(settings, key) for key in same)
    return kept if ok else None


def _convert(args: argparse.Namespace, ckpt: checkpoints.Checkpoint) -> int:
    """The step as a Hugging Face folder (the export's conversion), unless it is there."""
    out = checkpoints.out_path(args.hf_dir, ckpt.step)
    if (out / "config.json").is_file():
        print(f"eval: using {out}", flush=True)
        return 0
    todo = checkpoints.plan(args.framework, args.backend, ckpt, out)
    # A conversion cut short leaves a folder without config.json: start it again.
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    if todo.copy_from is not None:
        shutil.copytree(todo.copy_from, out)
    else:
        code = subprocess.run(list(todo.argv), cwd=todo.cwd).returncode
        if code != 0:
            print(f"eval: the converter exited {code}", file=sys.stderr, flush=True)
            return code
    if todo.tokenizer_from is not None:
        shutil.copytree(todo.tokenizer_from, out, dirs_exist_ok=True)
    return 0


def _cache_file(args: argparse.Namespace, settings: eval_result.Settings) -> Path | None:
    """Where the base model's result is kept for every run of the same model, data and
    evaluation (`--cache-dir`); None for a step, or without a cache."""
    if settings.step is not None or not args.cache_dir:
        return None
    key = [args.framework, settings.dataset, settings.data_revision, settings.model_revision]
    key += [settings.metric, settings.k, settings.n, settings.seed]
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:32]
    return Path(args.cache_dir) / f"base-{digest}.json"


def _from_cache(args: argparse.Namespace, cached: Path | None) -> dict[str, Any] | None:
    try:
        content = json.loads(cached.read_text()) if cached else None
    except (OSError, ValueError):
        return None
    if not isinstance(content, dict):
        return None
    print(
        f"eval: the base model's result for these settings is cached ({cached}); reused", flush=True
    )
    return {**content, "run": args.run}


def _shards(args: argparse.Namespace, settings: eval_result.Settings) -> list[Shard]:
    """The evaluation's shards; one, of the whole file, when the command names no file to swap."""
    digest = eval_shards.fingerprint(settings, args.shard_size, args.command)
    folder = eval_shards.parts_dir(args.out_dir, settings.step, digest)
    data = Path(args.data_path) if args.data_path else None
    shards = eval_shards.plan(folder, args.raw, data, args.shard_size)
    if eval_shards.command_for(args.command, shards[0], data, args.raw) is None:
        shards = eval_shards.plan(folder, args.raw, None, 0)
    return shards


def _run_shard(args: argparse.Namespace, shard: Shard, of: int) -> int | list[eval_result.Sample]:
    """The framework's evaluation of one shard into its emptied folder: its samples, or an exit code."""
    data = Path(args.data_path) if args.data_path else None
    command = eval_shards.command_for(args.command, shard, data, args.raw)
    assert command is not None  # _shards fell back to one shard otherwise
    shutil.rmtree(shard.raw, ignore_errors=True)  # a cut run's partial output is never read
    shard.raw.mkdir(parents=True, exist_ok=True)
    print(f"eval: shard {shard.index} of {of}", flush=True)
    try:
        code = subprocess.run(command, cwd=args.cwd).returncode
    except OSError as e:  # no such program: not the image this recipe runs in
        print(f"eval: cannot run the evaluation: {e}", file=sys.stderr, flush=True)
        return 127
    if code != 0:
        print(f"eval: the evaluation exited {code}", file=sys.stderr, flush=True)
        return code
    try:
        samples = SAMPLES[args.framework](shard.raw)
    except (eval_result.NoSamples, ValueError, KeyError) as e:
        print(f"eval: {e}", file=sys.stderr, flush=True)
        return 1
    eval_shards.keep(shard, samples)
    return samples


def _evaluate(args: argparse.Namespace, settings: eval_result.Settings) -> int | dict[str, Any]:
    """Run the framework's evaluation shard by shard, skipping shards a cut run of this job
    finished, and score every sample: the result, or an exit code."""
    what = "the base model" if args.step is None else f"step {args.step}"
    print(
        f"eval: {what} of {args.run} on {args.dataset}, {args.metric} k={args.k} n={args.n}",
        flush=True,
    )
    shards = _shards(args, settings)
    samples: list[eval_result.Sample] = []
    for shard in shards:
        done = eval_shards.kept(shard)
        if done is not None:
            print(f"eval: shard {shard.index} of {len(shards)} already evaluated; kept", flush=True)
        else:
            ran = _run_shard(args, shard, len(shards))
            if isinstance(ran, int):
                return ran
            done = ran
        samples += done
    try:
        return eval_result.result(settings, samples)
    except (eval_result.NoSamples, ValueError, KeyError) as e:
        print(f"eval: {e}", file=sys.stderr, flush=True)
        return 1


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    settings = _settings(args)
    what = "the base model" if args.step is None else f"step {args.step}"
    if (kept := _already(args.out_dir, settings)) is not None:
        print(f"eval: {what} already evaluated with these settings; kept", flush=True)
        print(eval_result.log_line(kept), flush=True)
        return 0
    try:
        if args.step is not None:
            ckpt = checkpoints.pick(args.framework, args.checkpoint_dir, args.step)
            if args.framework == "nemo-rl" and (code := _convert(args, ckpt)) != 0:
                return code
    except checkpoints.NoCheckpoint as e:
        print(f"eval: {e}", file=sys.stderr, flush=True)
        return 1
    cached = _cache_file(args, settings)
    content = _from_cache(args, cached)
    if content is None:
        done = _evaluate(args, settings)
        if isinstance(done, int):
            return done
        content = done
        if cached is not None:
            eval_result.write_atomic(cached, {k: v for k, v in content.items() if k != "run"})
    target = eval_result.write(args.out_dir, content)
    eval_shards.drop(args.out_dir, args.step)
    print(
        f"eval: {args.dataset} {content['metric'].replace('@k', f'@{args.k}')} "
        f"{100 * content['score']:.1f}% over {content['count']} problems -> {target}",
        flush=True,
    )
    print(eval_result.log_line(content), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
