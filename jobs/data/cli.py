"""`python -m jobs data ...`: prepare datasets locally, for clusters that cannot reach the hub.

The output folder is what the recipes read under `contract.DATASETS_ROOT/<name>/` on Lustre; copy
it there (docs/jobs.md shows the `kubectl cp` command) and the recipe's own preparation step
finds it current and skips the download.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from jobs.console import emit_json, err, handled
from jobs.errors import UsageError

data_app = typer.Typer(
    help="Convert local dataset copies into the files the recipes read (no hub access needed).",
    no_args_is_help=True,
)


@data_app.command("gsm8k")
@handled
def gsm8k_cmd(
    input_dir: Annotated[Path, typer.Option("--input", help="A local copy of the hub's openai/gsm8k main/ folder: train*/test* files, parquet or JSONL.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder: OUT/nemo/{train,test}.jsonl and OUT/verl/{train,test}.parquet.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")] = False,
) -> None:
    """Convert GSM8K into NeMo RL JSONL and veRL parquet (the rows the GSM8K recipes read)."""
    from jobs.data import gsm8k  # pyarrow is imported only when this command runs

    try:
        splits = gsm8k.read_local(input_dir)
    except gsm8k.DataError as e:
        raise UsageError(str(e), "pass the folder holding the hub's train-*.parquet and "
                         "test-*.parquet (or train*.jsonl / test*.jsonl)") from None
    written = {fmt: gsm8k.write(splits, out, fmt) for fmt in gsm8k.FORMATS}
    view = {"out": str(out), "format_version": gsm8k.FORMAT_VERSION,
            "rows": {s: len(rows) for s, rows in splits.items()},
            "files": {fmt: {s: str(p) for s, p in files.items()} for fmt, files in written.items()}}
    if as_json:
        emit_json(view)
        return
    for files in written.values():
        for path in files.values():
            err().print(f"wrote {path}", markup=False)
    err().print(f"GSM8K format {gsm8k.FORMAT_VERSION}: "
                + ", ".join(f"{s} {n} rows" for s, n in view["rows"].items()), markup=False)
