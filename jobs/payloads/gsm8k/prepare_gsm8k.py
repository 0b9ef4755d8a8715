"""Prepare GSM8K once on Lustre for the GSM8K recipes; runs on the cluster, skips when current.

The conversion is `jobs.data.gsm8k`, the same code as `rl-jobs data gsm8k`: the recipe
ships the `jobs` package with the job (Ray `py_modules`). `--input DIR` converts a local copy
of the hub's `main/` folder (e.g. one copied to Lustre); without it the rows come from the
hub with `datasets.load_dataset("openai/gsm8k", "main")` (in both images; HF_TOKEN and
the Hugging Face cache location come from the pod). A folder prepared by an older FORMAT_VERSION is rebuilt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jobs.data import gsm8k


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--format", choices=gsm8k.FORMATS, required=True)
    parser.add_argument("--input", type=Path, default=None)
    args = parser.parse_args(argv)
    if gsm8k.is_prepared(args.out, args.format):
        print(
            f"GSM8K ({args.format}, format {gsm8k.FORMAT_VERSION}) already prepared in "
            f"{args.out}; skipping"
        )
        return 0
    if args.input is not None:
        splits = gsm8k.read_local(args.input)
    else:
        from datasets import load_dataset

        dataset = load_dataset(gsm8k.SOURCE, "main")
        splits = {s: list(dataset[s]) for s in gsm8k.SPLITS}
    for path in gsm8k.write(splits, args.out, args.format).values():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
