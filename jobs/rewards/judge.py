"""How a test's output is compared with the expected one: exact tokens, or real numbers within 1e-6.

Both rules follow testlib (MikeMirzayanov/testlib at 0.9.41-37-g1e4e8a2), the checker library
Codeforces problems are judged with:

- `tokens` is `wcmp` (checkers/wcmp.cpp, "compare sequences of tokens"): the whitespace-separated
  words must be equal and as many; blanks are space, tab, CR and LF (testlib.h `isBlanks`).
- `reals` is `wcmp` where two tokens are equal as text, and `rcmp6` (checkers/rcmp6.cpp, "compare
  two sequences of doubles, max absolute or relative error") where they differ and both read as
  real numbers: they pass within an absolute or relative error of 1e-6 (testlib.h
  `doubleCompare(expected, result, 1E-6)`, which adds 1E-15 to the bound). A token reads as a real
  number as testlib's `stringToDouble` reads one: only digits, `.`, `e`, `E`, `+`, `-`, the whole
  token consumed by `%lf` (so no `inf`, `nan` nor hex); a value past +-1E300 is infinite
  (`__testlib_isInfinite`) and equals only an infinity of the same sign. Tokens that are not
  numbers (`YES`, a name) must be equal, as in `wcmp`.
- `auto` (the default) chooses per problem: `reals` when some expected output of the problem has a
  number written with a point or an exponent (`0.3333333`, `1e-9`), else `tokens`, so an integer
  answer off by one in its ninth digit (a relative error of 1e-9) is still wrong.

A problem's rule is, first found: the `checker` field of its ground truth, the run's `checker`
reward option (one rule, or a mapping from data source to rule), `auto`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any


class Checker(str, Enum):
    """What a test's output is judged with (the executor's side: `auto` is resolved before)."""

    tokens = "tokens"
    reals = "reals"


AUTO = "auto"
RULES = (AUTO, *(c.value for c in Checker))
# checkers/rcmp6.cpp: `const double EPS = 1E-6;`
REAL_ERROR = 1e-6
# testlib.h doubleCompare: `MAX_DOUBLE_ERROR += 1E-15;`
_ROUNDING = 1e-15
# testlib.h __testlib_isInfinite: `ra > 1E300 || ra < -1E300`
_INFINITE = 1e300

_BLANKS = re.compile(rb"[ \t\r\n]+")
# What strtod consumes in full from a token of stringToDouble's characters ([0-9.eE+-]).
_REAL = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WRITTEN_REAL = re.compile(rb"[.eE]")


def tokens(text: bytes) -> list[bytes]:
    """testlib's tokens (wcmp reads words with `ouf.readWordTo()`): what is compared, so the
    whitespace between them is not."""
    return [t for t in _BLANKS.split(text) if t]


def as_real(token: bytes) -> float | None:
    """The token's value if testlib's `stringToDouble` reads it as a double, else None."""
    if _REAL.fullmatch(token) is None:
        return None
    return float(token)


def double_compare(expected: float, result: float, error: float = REAL_ERROR) -> bool:
    """testlib.h `doubleCompare`: within `error` absolutely or relatively; infinities by sign."""
    error += _ROUNDING
    if abs(expected) > _INFINITE:
        return abs(result) > _INFINITE and (result > 0) == (expected > 0)
    if abs(result) > _INFINITE:
        return False
    if abs(result - expected) <= error:
        return True
    low, high = sorted((expected * (1.0 - error), expected * (1.0 + error)))
    return low <= result <= high


def _tokens_match(checker: Checker, expected: bytes, got: bytes) -> bool:
    if expected == got:
        return True
    if checker is Checker.tokens:
        return False
    want, have = as_real(expected), as_real(got)
    return want is not None and have is not None and double_compare(want, have)


def accepts(checker: Checker, expected: bytes, got: bytes) -> bool:
    """Whether output `got` passes against `expected` under `checker` (as many tokens, each matching)."""
    want, have = tokens(expected), tokens(got)
    return len(want) == len(have) and all(
        _tokens_match(checker, w, h) for w, h in zip(want, have, strict=True)
    )


def written_as_real(outputs: Iterable[str]) -> bool:
    """Whether some token of these expected outputs is a number written with a point or an exponent."""
    for output in outputs:
        for token in tokens(output.encode(errors="surrogatepass")):
            if _WRITTEN_REAL.search(token) and as_real(token) is not None:
                return True
    return False


def rule_name(value: Any, where: str) -> str:
    """A rule as given (`auto`, `tokens`, `reals`); ValueError naming `where` for anything else."""
    if not isinstance(value, str) or value not in RULES:
        raise ValueError(f"{where}: {value!r} is not a checker; expected one of {', '.join(RULES)}")
    return value


def choose(
    truth: Mapping[str, Any], setting: Any, data_source: str | None, outputs: Iterable[str]
) -> Checker:
    """The problem's rule: its ground truth's `checker`, else the run's `setting` (a rule or a
    mapping from data source to rule), else `auto`; `auto` resolved on the problem's outputs."""
    if truth.get("checker") is not None:
        rule = rule_name(truth["checker"], "ground_truth.checker")
    elif isinstance(setting, Mapping):
        given = setting.get(data_source) if data_source is not None else None
        rule = AUTO if given is None else rule_name(given, f"checker[{data_source!r}]")
    elif setting is not None:
        rule = rule_name(setting, "checker")
    else:
        rule = AUTO
    if rule != AUTO:
        return Checker(rule)
    return Checker.reals if written_as_real(outputs) else Checker.tokens
