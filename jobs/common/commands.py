"""The commands a hint tells a person to run next: one spelling of the program and its verbs."""

from __future__ import annotations

PROGRAM = "python -m jobs"


# The command each kind of run (job metadata `kind`, jobs/head/protocol.py) is started with.
_STARTED_WITH = {
    "recipe": ("submit", "RECIPE"),
    "command": ("run",),
    "export": ("export",),
    "stage": ("stage",),
}


def started_with(kind: str | None) -> str:
    """How a run of this kind was started, for messages: `python -m jobs run` for a command."""
    words = _STARTED_WITH.get(kind or "")
    return f"`{command(*words)}`" if words else "an unknown tool"


def command(*words: str, where: str = "") -> str:
    """`python -m jobs WORD ...` followed by the flags that reach the same cluster (`where`,
    e.g. " --stack dev"; empty when RAY_ADDRESS already says it)."""
    return " ".join((PROGRAM, *(w for w in words if w))) + where
