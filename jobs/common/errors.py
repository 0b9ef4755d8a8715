"""Exit codes and the one-line errors the CLI turns into them."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # succeeded, or submitted without --follow
    JOB_FAILED = 1  # the job failed or was stopped
    USAGE = 2  # bad usage, unknown recipe or override
    UNREACHABLE = 3  # the cluster (or the way to it) could not be reached
    # A bug or an error nobody anticipated: distinct from 1 so a script never reads it as
    # "the job failed" and resubmits, and from 2 so the user is not told to fix their input.
    INTERNAL = 4


class JobsError(Exception):
    """An error the user can fix: a message and the hint that fixes it, printed on one line."""

    code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def line(self) -> str:
        text = f"error: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return " ".join(text.split())  # one line, whatever the message held


class UsageError(JobsError):
    code = ExitCode.USAGE


class Unreachable(JobsError):
    code = ExitCode.UNREACHABLE


class NotFound(UsageError):
    """The cluster has no job by that id (HTTP 404); the CLI adds how to list them."""
