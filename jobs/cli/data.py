"""`rl-jobs data ...`: prepare datasets locally, for clusters that cannot reach the hub.

The output folder is what the recipes read under `contract.DATASETS_ROOT/<name>/` on Lustre; copy
it there (docs/jobs.md shows the `kubectl cp` command) and the recipe's own preparation step
finds it current and skips the download.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from jobs.cli.console import emit_json, err, handled
from jobs.common.errors import UsageError

data_app = typer.Typer(
    help="Convert local dataset copies for the recipes.\n\nNo hub access is needed.",
    no_args_is_help=True,
)


def _check_out(out: Path) -> None:
    """Refuse an --out that is, or lies under, an existing file, before reading the input."""
    for path in (out, *out.parents):
        if path.exists() and not path.is_dir():
            raise UsageError(
                f"--out {out}: {path} exists and is not a directory",
                "pass a directory (it is created if missing)",
            )


@data_app.command("gsm8k")
@handled
def gsm8k_cmd(
    input_dir: Annotated[
        Path,
        typer.Option(
            "--input",
            help="A local copy of the hub's openai/gsm8k main/ folder: train*/test* files, parquet or JSONL.",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Output folder: OUT/nemo/{train,test}.jsonl and OUT/verl/{train,test}.parquet.",
        ),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="Machine-readable output on stdout.")
    ] = False,
) -> None:
    """Convert GSM8K into NeMo RL JSONL and veRL parquet.

    These are the rows the GSM8K recipes read."""
    from jobs.data import gsm8k  # pyarrow is imported only when this command runs

    _check_out(out)
    try:
        splits = gsm8k.read_local(input_dir)
    except gsm8k.DataError as e:
        raise UsageError(
            str(e),
            "pass the folder holding the hub's train-*.parquet and "
            "test-*.parquet (or train*.jsonl / test*.jsonl)",
        ) from None
    written = {fmt: gsm8k.write(splits, out, fmt) for fmt in gsm8k.FORMATS}
    view: dict[str, Any] = {
        "out": str(out),
        "format_version": gsm8k.FORMAT_VERSION,
        "rows": {s: len(rows) for s, rows in splits.items()},
        "files": {fmt: {s: str(p) for s, p in files.items()} for fmt, files in written.items()},
    }
    if as_json:
        emit_json(view)
        return
    for files in written.values():
        for path in files.values():
            err().print(f"wrote {path}", markup=False)
    err().print(
        f"GSM8K format {gsm8k.FORMAT_VERSION}: "
        + ", ".join(f"{s} {n} rows" for s, n in view["rows"].items()),
        markup=False,
    )


@data_app.command("code-contests")
@handled
def code_contests_cmd(
    input_dir: Annotated[
        Path,
        typer.Option(
            "--input", help="Directory of deepmind/code_contests *.parquet or *.jsonl files."
        ),
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Writes OUT/{easy,hard,expert}/train.parquet.")
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="Machine-readable summary on stdout.")
    ] = False,
) -> None:
    """Convert deepmind/code_contests into veRL parquet.

    Problems are split into easy, hard and expert by Codeforces rating."""
    from jobs.data import code_contests  # pyarrow is imported only when this command runs

    hint = "pass the folder holding the dataset's *.parquet or *.jsonl files"
    if not input_dir.is_dir():
        raise UsageError(f"--input {input_dir}: not a directory", hint)
    if not any(p.suffix in (".parquet", ".jsonl") for p in input_dir.iterdir()):
        raise UsageError(f"--input {input_dir}: holds no *.parquet or *.jsonl files", hint)
    _check_out(out_dir)
    try:
        summary = code_contests.convert(input_dir, out_dir)
    except ValueError as e:
        raise UsageError(f"--input {input_dir}: {e}", hint) from None
    if as_json:
        emit_json(
            {"written": summary.written, "dropped": dict(summary.dropped), "paths": summary.paths}
        )
        return
    for tier, count in summary.written.items():
        err().print(f"{tier}: {count} problems -> {summary.paths.get(tier, '-')}", markup=False)
    for reason, count in sorted(summary.dropped.items()):
        err().print(f"dropped {count}: {reason}", markup=False)
