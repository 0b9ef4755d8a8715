"""How every `rl-jobs` command writes: stdout/stderr consoles, --json, and errors as one
line with the documented exit code (jobs/common/errors.py), never a traceback."""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import typer
from rich.console import Console

from jobs.common import commands
from jobs.common.errors import ExitCode, JobsError, NotFound
from jobs.common.redact import redact

F = TypeVar("F", bound=Callable[..., Any])


def err() -> Console:
    # Built per call so CliRunner's captured stderr is the one written to.
    return Console(stderr=True, highlight=False, soft_wrap=True)


def out() -> Console:
    return Console(highlight=False, soft_wrap=True)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()


class Terminated(KeyboardInterrupt):
    """SIGTERM, SIGHUP or SIGQUIT, raised where the process is (app.main installs it): every
    place that detaches on ^C detaches on these too, and says so, then exits 128 + signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.code = 128 + signum
        self.name = signal.Signals(signum).name


def detached(stop: KeyboardInterrupt) -> int:
    """The exit code after a follow was detached: 0 for ^C, 128 + N for signal N."""
    return stop.code if isinstance(stop, Terminated) else int(ExitCode.OK)


def handled(fn: F) -> F:
    """Turn our errors into one line on stderr and the documented exit code; no traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except JobsError as e:
            if isinstance(e, NotFound) and not e.hint:
                e.hint = f"list jobs with `{commands.command('list')}`"
            err().print(redact(e.line()), markup=False)
            raise typer.Exit(int(e.code)) from None
        except Terminated as e:
            err().print(f"stopped by {e.name}", markup=False)
            raise typer.Exit(e.code) from None
        except KeyboardInterrupt:
            err().print("interrupted", markup=False)
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except Exception as e:
            if os.environ.get("JOBS_DEBUG") == "1":
                # The traceback asked for, and still exit 4: a script must read the same
                # outcome with or without debugging on.
                traceback.print_exc()
                raise typer.Exit(int(ExitCode.INTERNAL)) from None
            # One line, whatever the exception held; exit 4, never 1 ("the job failed").
            text = " ".join(f"error: unexpected {type(e).__name__}: {e}".split())
            err().print(
                redact(
                    f"{text} (hint: this is a bug in {commands.program()}, not in your job; "
                    "rerun with JOBS_DEBUG=1 for the traceback)"
                ),
                markup=False,
            )
            raise typer.Exit(int(ExitCode.INTERNAL)) from None

    return wrapper  # type: ignore[return-value]


class ConsoleReporter:
    """The runs library's Reporter on a terminal: notes and waits on stderr (a spinner only
    where stderr is a terminal, so --json and pipes stay clean), job logs on stdout, or on
    stderr when stdout carries --json."""

    def note(self, text: str) -> None:
        err().print(redact(text), markup=False)

    @contextmanager
    def waiting(self, text: str) -> Iterator[Callable[[str], None]]:
        console = err()
        if not console.is_terminal:
            # No spinner without a terminal: one line, so a piped wait is never silent.
            console.print(f"{redact(text)} ...", markup=False)
        with console.status(text) as spinner:
            yield lambda fresh: spinner.update(fresh)

    def log(self, chunk: str, to_stderr: bool) -> None:
        stream = sys.stderr if to_stderr else sys.stdout
        stream.write(chunk)
        stream.flush()
