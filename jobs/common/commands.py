"""The commands a hint tells a person to run next: one spelling of the program and its verbs.

Users run the installed command, `rl-jobs`; `python -m jobs` is the same program (an alias for a
checkout without the install). A hint is pasted back into a shell, so it is spelled the way the
shell finds the program again: the CLI calls `spelled_as` once at start; everything else (the
supervisor's log lines on the head included) says `rl-jobs`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

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


def spelled_as(argv0: str, path: str | None = None, python: str = sys.executable) -> str:
    """Take the program's spelling from how this process was started (`python -m jobs` runs
    `jobs/__main__.py`, the installed script is `rl-jobs`), as a shell would find it again on
    `path` (default: PATH): `rl-jobs` and `python` when PATH leads to this very program, else
    their full paths, so a pasted hint never answers "command not found" or runs another
    Python without this package. Returns the spelling now in force."""
    global _program
    if os.path.basename(argv0) == "__main__.py":
        interpreter = "python" if _found_as(python, "python", path) else shlex.quote(python)
        _program = f"{interpreter} -m jobs"
    elif os.sep not in argv0 or _found_as(argv0, INSTALLED, path):
        _program = INSTALLED
    else:
        _program = shlex.quote(os.path.abspath(argv0))
    return _program


def _found_as(program: str, name: str, path: str | None) -> bool:
    """Whether a shell typing `name` runs `program` (the same file by its path, not by what a
    link points to: a virtualenv's python links to the system's, which lacks this package)."""
    found = shutil.which(name, path=path)
    return found is not None and os.path.abspath(found) == os.path.abspath(program)


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
