"""The commands a hint tells a person to run next: one spelling of the program and its verbs.

Users run the installed command, `rl-jobs`; `python -m jobs` is the same program (an alias for a
checkout without the install). A hint is pasted back into a shell, so it is spelled the way the
person typed the program: the CLI calls `spelled_as` once at start; everything else (the
supervisor's log lines on the head included) says `rl-jobs`.
"""

from __future__ import annotations

import os

INSTALLED = "rl-jobs"
MODULE_ALIAS = "python -m jobs"

_program = INSTALLED


# The command each kind of run (job metadata `kind`, jobs/head/protocol.py) is started with.
_STARTED_WITH = {
    "recipe": ("submit", "RECIPE"),
    "command": ("run",),
    "export": ("export",),
    "stage": ("stage",),
}


def spelled_as(argv0: str) -> str:
    """Take the program's spelling from how this process was started: `python -m jobs` runs
    `jobs/__main__.py`, the installed script is `rl-jobs`. Returns the spelling now in force."""
    global _program
    _program = MODULE_ALIAS if os.path.basename(argv0) == "__main__.py" else INSTALLED
    return _program


def program() -> str:
    """The program as hints spell it (`rl-jobs` unless the CLI was started as `python -m jobs`)."""
    return _program


def started_with(kind: str | None) -> str:
    """How a run of this kind was started, for messages: `rl-jobs run` for a command."""
    words = _STARTED_WITH.get(kind or "")
    return f"`{command(*words)}`" if words else "an unknown tool"


def command(*words: str, where: str = "") -> str:
    """`rl-jobs WORD ...` followed by the flags that reach the same cluster (`where`,
    e.g. " --stack dev"; empty when RAY_ADDRESS already says it)."""
    return " ".join((_program, *(w for w in words if w))) + where
