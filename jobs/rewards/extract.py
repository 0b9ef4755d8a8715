"""Finding the model's C++ in its answer, in time linear in the answer's length.

The answer format is the CodeFu sample's (see code_contests.py): the last `<code>...</code>` block,
and in it the last fenced cpp block if there is one; without a `<code>` block, the last fenced cpp
block of the whole answer. Tags and language names match in any letter case.

Linear, because the answer is the policy's to choose and this runs in the trainer's reward process
before any budget is counted: a lazy `<code>(.*?)</code>` over the whole answer restarts its scan
to the end at every unclosed `<code>`, quadratic (60,000 characters of `<code>` took 9.1 s of CPU).
Here each pattern runs only up to the end of the last closing tag it can end at, so every opening
it meets has its closing ahead and each character is scanned a bounded number of times.
"""

from __future__ import annotations

import re

_TAG = re.compile(r"<code>(.*?)</code>", re.DOTALL | re.IGNORECASE)
# Greedy to the end, then back to the last closing tag: one pass backwards.
_LAST_CLOSE_TAG = re.compile(r".*</code>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:cpp|c\+\+|cc|cxx)[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_FENCE_MARK = "```"
# A block without a cpp fence may still open with a fence of another kind (```` ``` ````, ```` ```text ````).
_LEADING_FENCE = re.compile(r"\s*```[^\n]*\n")


def _last_tag(text: str) -> str | None:
    """The content of the last of `<code>...</code>`'s non-overlapping matches, scanning left to right."""
    close = _LAST_CLOSE_TAG.match(text)
    if close is None:
        return None
    found = _TAG.findall(text, 0, close.end())
    return found[-1] if found else None


def _last_fence(text: str) -> str | None:
    """The content of the last fenced cpp block (as `_FENCE.findall(text)[-1]`)."""
    end = text.rfind(_FENCE_MARK)
    if end < 0:
        return None
    found = _FENCE.findall(text, 0, end + len(_FENCE_MARK))
    return found[-1] if found else None


def _unfenced(inner: str) -> str:
    """A block's text without a leading fence line and a trailing fence (with the blanks around them)."""
    lead = _LEADING_FENCE.match(inner)
    if lead is not None:
        inner = inner[lead.end() :]
    body = inner.rstrip()
    return body[: -len(_FENCE_MARK)] if body.endswith(_FENCE_MARK) else inner


def extract_code(solution: str) -> str | None:
    """The last <code> block (its last fenced cpp block if it has one), else the last fenced cpp block."""
    inner = _last_tag(solution)
    if inner is not None:
        fenced = _last_fence(inner)
        code = fenced if fenced is not None else _unfenced(inner)
    else:
        code = _last_fence(solution) or ""
    return code if code.strip() else None
