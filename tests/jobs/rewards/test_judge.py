"""The output judge against testlib's `wcmp` and `rcmp6`, case by case (testlib 0.9.41-37-g1e4e8a2:
checkers/wcmp.cpp, checkers/rcmp6.cpp, testlib.h doubleCompare and stringToDouble)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.rewards import judge
from jobs.rewards.judge import Checker, accepts

pytestmark = pytest.mark.compiler

OK, WA, PE = "ok", "wrong", "presentation"  # PE: rcmp6 refuses a token that is not a double
# (expected, output, wcmp's verdict, rcmp6's verdict, the `reals` rule's verdict, why)
CORPUS = [
    ("1", "1.0", WA, OK, OK, "a correct 1.0 against 1"),
    ("0.3333333", "0.333333", WA, OK, OK, "3.3e-7 absolute"),
    ("5", "5", OK, OK, OK, "equal text"),
    ("0.5", "0.500002", WA, WA, WA, "2e-6 absolute, 4e-6 relative"),
    ("1e-6", "2e-6", WA, OK, OK, "1e-6 absolute is within (the bound is 1e-6 + 1e-15)"),
    ("1e-9", "0", WA, OK, OK, "absolute"),
    ("1000000", "1000000.9", WA, OK, OK, "0.9 absolute is 9e-7 relative"),
    ("1000000", "1000001.1", WA, WA, WA, "1.1e-6 relative"),
    ("100", "100.00005", WA, OK, OK, "5e-7 relative"),
    ("999999999", "1000000000", WA, OK, OK, "1e-9 relative: why integer problems keep `tokens`"),
    ("-0", "0", WA, OK, OK, "signed zero"),
    (".5", "0.5", WA, OK, OK, "strtod reads .5"),
    ("1.", "1", WA, OK, OK, "strtod reads 1."),
    ("+1", "1", WA, OK, OK, "a leading plus"),
    ("1E3", "1000", WA, OK, OK, "upper-case exponent"),
    ("1e301", "1e302", WA, OK, OK, "past 1E300 both are infinite, same sign"),
    ("1e301", "-1e302", WA, WA, WA, "infinities of other signs"),
    ("1e301", "1e299", WA, WA, WA, "an infinity against a finite number"),
    ("1", "1e400", WA, WA, WA, "a finite number against an infinity"),
    ("1", "1e", WA, PE, WA, "%lf leaves a suffix: not a double"),
    ("16", "0x10", WA, PE, WA, "hex is not among stringToDouble's characters"),
    ("inf", "inf", OK, PE, OK, "letters: equal text only"),
    ("nan", "nan", OK, PE, OK, "letters: equal text only"),
    ("2.5", "2,5", WA, PE, WA, "a comma"),
    ("YES", "yes", WA, PE, WA, "words stay exact"),
    ("YES 0.5", "YES 0.5000001", WA, PE, OK, "a word and a number: each by its own rule"),
    ("1 2", "1 2 3", WA, PE, WA, "extra tokens (rcmp6: 'Extra information in the output file')"),
    ("1 2 3", "1 2", WA, PE, WA, "missing tokens"),
    ("3 4", "3\n4\n", OK, OK, OK, "whitespace between tokens does not matter"),
    ("1 2", "1\t\r\n 2  ", OK, OK, OK, "blanks are space, tab, CR, LF"),
    ("", "", OK, OK, OK, "no tokens"),
]


@pytest.mark.parametrize(("expected", "output", "wcmp", "rcmp6", "reals", "why"), CORPUS)
def test_the_judge_matches_testlib_case_by_case(
    expected: str, output: str, wcmp: str, rcmp6: str, reals: str, why: str
) -> None:
    e, o = expected.encode(), output.encode()
    assert (OK if accepts(Checker.tokens, e, o) else WA) == wcmp, why
    assert (OK if accepts(Checker.reals, e, o) else WA) == reals, why
    # Where rcmp6 reads every token as a double, `reals` is rcmp6; elsewhere wcmp's text rule
    # decides the tokens that are not numbers.
    if rcmp6 != PE:
        assert reals == rcmp6, why


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), st.integers(6, 12))
def test_a_real_printed_with_more_or_fewer_digits_passes(value: float, digits: int) -> None:
    expected = f"{value:.12f}".encode()
    assert accepts(Checker.reals, expected, f"{value:.{digits}f}".encode())
    assert accepts(Checker.reals, expected, f"{value:.{digits}e}".encode())


@given(st.floats(min_value=1e-3, max_value=1e12), st.floats(min_value=2e-6, max_value=1.0))
def test_a_real_off_by_more_than_its_error_fails(value: float, error: float) -> None:
    off = value * (1 + error) + error
    assert not accepts(Checker.reals, repr(value).encode(), repr(off).encode())


def test_a_problem_is_judged_on_reals_only_when_its_answers_are_written_as_reals() -> None:
    real = {"private_tests": {"input": ["", ""], "output": ["2", "0.5000000"]}}
    integer = {"private_tests": {"input": [""], "output": ["1000000000 7\n"]}}
    assert judge.choose(real, None, "code_contests", ["2", "0.5000000"]) is Checker.reals
    assert judge.choose(integer, None, "code_contests", ["1000000000 7\n"]) is Checker.tokens
    assert judge.choose({"checker": "tokens"}, "reals", "x", ["0.5"]) is Checker.tokens
    by_source = {"code_contests": "reals", "other": "tokens"}
    assert judge.choose({}, by_source, "code_contests", ["1"]) is Checker.reals
    assert judge.choose({}, by_source, "other", ["0.5"]) is Checker.tokens
    assert judge.choose({}, by_source, "unlisted", ["0.5"]) is Checker.reals  # auto
    with pytest.raises(
        ValueError, match=r"ground_truth.checker: 'rcmp9' is not a checker; expected"
    ):
        judge.choose({"checker": "rcmp9"}, None, "x", [])


def test_values_read_as_testlib_reads_them() -> None:
    assert judge.as_real(b"-1.5e-3") == -1.5e-3 and judge.as_real(b"1_000") is None
    assert judge.as_real(b"infinity") is None and judge.as_real(b"\xd9\xa1") is None
    assert math.isinf(judge.as_real(b"1e400") or 0.0)
