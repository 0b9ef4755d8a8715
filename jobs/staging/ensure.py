"""An attempt's first step: its model and datasets are staged, and a partial conversion is gone.

`python -m jobs.staging.ensure --model M [--dataset D ...] [--megatron]` runs in the job's
driver before the framework starts. A model staged by `jobs stage` (its record intact) is used
as it is, without contacting the Hub; one that is not is staged here, once, by this one process,
so the framework's workers (offline) never download it. With --megatron, a conversion directory
without our completion marker is removed (jobs.staging.megatron) so it is never reused.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from jobs.staging import datasets_cache, entry, layout, megatron, record
from jobs.staging.download import HubUnreachable, StageError, download


def _model(args: argparse.Namespace) -> str | None:
    home = entry.home_of(args)
    if os.path.isdir(args.model):
        entry.say(f"model {args.model} is a directory: loaded from there, nothing to stage")
        return None
    staged = record.load(home, args.model)
    if staged is not None and staged.is_intact(home):
        entry.say(
            f"model {args.model} staged at commit {staged.commit} ({staged.staged_at}): "
            "this attempt loads it offline"
        )
        return staged.commit
    why = "is not staged" if staged is None else "has files missing from its staged snapshot"
    entry.say(
        f"model {args.model} {why}: staging it now, once, from this process (stage it "
        "ahead of time with `rl-jobs stage`)"
    )
    return download(args.model, "main", home, entry.say).commit


def _conversion(args: argparse.Namespace, commit: str | None) -> None:
    home = entry.home_of(args)
    target = layout.megatron_dir(home, args.model)
    staged = record.load(home, args.model)
    since = _epoch(staged.staged_at) if staged is not None else None
    found = megatron.guard(
        target, entry.say, commit, (args.model, since) if since is not None else None
    )
    if found == "complete":
        entry.say(f"Megatron conversion of {args.model} complete at {target}: reused")
    else:
        entry.say(
            f"no complete Megatron conversion of {args.model}: NeMo RL converts it in "
            "this attempt (the next attempt reuses it once complete); convert it ahead "
            f"of time with `rl-jobs stage {args.model}`"
        )


def _pinned(pin: str | None, model: str, commit: str | None) -> str | None:
    """The run's first attempt pins the commit it loaded (`--pin FILE`, in the run's directory);
    a later attempt that would load another commit (the model was restaged meanwhile) is refused:
    its checkpoints continue the pinned commit's weights and tokenizer. The refusal, or None."""
    if pin is None or commit is None:
        return None
    path = Path(pin)
    try:
        pinned = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        record.write_atomic(path, {"model": model, "commit": commit, "pinned_at": record.now()})
        entry.say(f"run pinned to {model} at commit {commit} ({path})")
        return None
    except (OSError, ValueError) as e:
        return f"cannot read the run's pinned model commit {path}: {e}"
    if pinned.get("commit") == commit:
        return None
    was = str(pinned.get("commit"))
    return (
        f"model {model} was restaged to commit {commit} after this run started on {was}: its "
        f"checkpoints continue {was}'s weights and tokenizer; stage that commit again "
        f"(`rl-jobs stage {model} --revision {was}`) to continue the run, or start a new run "
        f"(the pin is {path})"
    )


def _epoch(stamp: str) -> float | None:
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.staging.ensure", description=__doc__.splitlines()[0]
    )
    entry.common_arguments(parser)
    parser.add_argument(
        "--megatron", action="store_true", help="the run converts the model for Megatron (NeMo RL)"
    )
    parser.add_argument(
        "--pin",
        metavar="FILE",
        help="the run's record of the model commit its first attempt loaded (in its directory)",
    )
    args = parser.parse_args(argv)
    if (problem := entry.check_model(args.model)) is not None:
        return entry.fail(problem)
    entry.go_online()
    try:
        commit = _model(args)
        if (refusal := _pinned(args.pin, args.model, commit)) is not None:
            return entry.fail(refusal)
        for spec in args.dataset:
            datasets_cache.stage(entry.home_of(args), spec, entry.say)
        if args.megatron:
            _conversion(args, commit)
    except HubUnreachable as e:
        return entry.fail(str(e), entry.HUB_UNREACHABLE_EXIT)
    except StageError as e:
        return entry.fail(
            f"{e} (the run's workers are offline, HF_HUB_OFFLINE=1, so they cannot fetch it either)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
