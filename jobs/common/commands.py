"""The commands a hint tells a person to run next: one spelling of the program and its verbs."""

from __future__ import annotations

PROGRAM = "python -m jobs"


def command(*words: str, where: str = "") -> str:
    """`python -m jobs WORD ...` followed by the flags that reach the same cluster (`where`,
    e.g. " --stack dev"; empty when RAY_ADDRESS already says it)."""
    return " ".join((PROGRAM, *(w for w in words if w))) + where
