"""What the stage job and an attempt's first step share: arguments, output, and going online.

Every recipe job runs with HF_HUB_OFFLINE=1 so that no worker downloads; the staging steps are
the one place that must reach the Hub, so they drop the setting from their own process before
huggingface_hub or datasets is imported (both read it once, at import).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from jobs.staging import layout


def say(line: str) -> None:
    print(line, flush=True)


def go_online() -> None:
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.pop(name, None)
    # A Ray job log shows carriage-return progress bars as one growing line.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="the Hugging Face model id")
    parser.add_argument(
        "--hf-home",
        default=None,
        help="the Hugging Face home (default: the job's, on Lustre in the cluster)",
    )
    parser.add_argument(
        "--dataset",
        action="append",
        default=[],
        metavar="NAME[:CONFIG]",
        help="a Hub dataset the framework loads by name (repeatable)",
    )


def home_of(args: argparse.Namespace) -> Path:
    return Path(args.hf_home) if args.hf_home else layout.hf_home()


def check_model(model: str) -> str | None:
    """None when `model` is a Hub id or a local directory; else what is wrong with it."""
    if layout.is_model_id(model) or os.path.isdir(model):
        return None
    return (
        f"--model {model!r} is neither a Hugging Face model id (org/name) nor a directory "
        "that exists"
    )


# An attempt's first step (or `stage`) that could not reach the Hub at all exits with this code
# (sysexits.h EX_UNAVAILABLE): the supervisor gives the run up at once with that reason instead of
# restarting it into the same wall and calling the second failure a crash (restart_policy.py).
HUB_UNREACHABLE_EXIT = 69


def fail(message: str, code: int = 1) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return code
