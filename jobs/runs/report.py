"""What the runs library tells a person while it works, as calls the CLI renders (the library never prints).

A long wait shows as a spinner, a decision as one line, a job's log as its own bytes; where they
go (stderr, stdout, nowhere under --json) is the CLI's business (jobs/cli/console.py).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol


class Reporter(Protocol):
    def note(self, text: str) -> None:
        """One line for the person at the terminal (a decision, a hint, a warning)."""

    def waiting(self, text: str) -> AbstractContextManager[Callable[[str], None]]:
        """A visible wait; the context yields a function that updates its text."""

    def log(self, chunk: str, to_stderr: bool) -> None:
        """Part of a job's own log, redacted, as it arrives."""
