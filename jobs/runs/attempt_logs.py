"""A run's attempt logs read once each, with the attempts whose log Ray could not give kept aside.

A spot reclaim takes an attempt's log with its driver's node (jobs/client/dashboard.py
`LogLost`): a fact of the run's life, not an error of the command reading it. Every view of a
run reads its logs through this, so each says the same about the lost ones and goes on with the
rest.
"""

from __future__ import annotations

from collections.abc import Callable

from jobs.client.dashboard import LogUnreadable


class AttemptLogs:
    """`logs(submission_id)` as `Dashboard.logs` reads it, "" for a log Ray cannot give; why
    each one could not be read is in `unreadable` (submission id -> the reason, in words)."""

    def __init__(self, read: Callable[[str], str]) -> None:
        self._read = read
        self._texts: dict[str, str] = {}
        self.unreadable: dict[str, str] = {}

    def __call__(self, submission_id: str) -> str:
        if submission_id not in self._texts:
            try:
                self._texts[submission_id] = self._read(submission_id)
            except LogUnreadable as e:
                self.unreadable[submission_id] = e.message
                self._texts[submission_id] = ""
        return self._texts[submission_id]
