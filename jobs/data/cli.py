"""`python -m jobs data ...`: the dataset preparation commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from jobs.data import code_contests

data_app = typer.Typer(help="Prepare datasets as the parquet the GRPO recipes read.", no_args_is_help=True)


def _usage(message: str) -> NoReturn:
    """One line on stderr and exit 2, as every usage error of `python -m jobs` (jobs/errors.py)."""
    Console(stderr=True, soft_wrap=True).print(f"error: {message}", markup=False)
    raise typer.Exit(2)


@data_app.command("code-contests")
def code_contests_cmd(
    input_dir: Annotated[Path, typer.Option("--input", help="Directory of deepmind/code_contests *.parquet or *.jsonl files.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Writes OUT/{easy,hard,expert}/train.parquet.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable summary on stdout.")] = False,
) -> None:
    """deepmind/code_contests -> veRL parquet split into easy / hard / expert by Codeforces rating."""
    if not input_dir.is_dir():
        _usage(f"--input {input_dir}: not a directory (expected the dataset's *.parquet or *.jsonl files)")
    if not any(p.suffix in (".parquet", ".jsonl") for p in input_dir.iterdir()):
        _usage(f"--input {input_dir}: holds no *.parquet or *.jsonl files")
    try:
        summary = code_contests.convert(input_dir, out_dir)
    except ValueError as e:
        _usage(f"--input {input_dir}: {e}")
    if as_json:
        sys.stdout.write(json.dumps({"written": summary.written, "dropped": dict(summary.dropped),
                                     "paths": summary.paths}, indent=2, sort_keys=True) + "\n")
        return
    table = Table("split", "problems", "file")
    for tier, count in summary.written.items():
        table.add_row(tier, str(count), summary.paths.get(tier, "-"))
    console = Console()
    console.print(table)
    for reason, count in sorted(summary.dropped.items()):
        console.print(f"dropped {count}: {reason}", markup=False)
