"""The code-contests reward with the real g++: tiers, pass ratio, the problem's own limits, ground-truth forms."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from jobs.rewards import code_contests as cc

pytestmark = pytest.mark.compiler

REPO = Path(__file__).resolve().parents[3]

SUM = """#include <cstdio>
int main() { long long a, b; scanf("%lld %lld", &a, &b); printf("%lld\\n", a + b); }"""
# Right for a + b < 10 only: fails half the tests below.
SUM_SMALL = """#include <cstdio>
int main() { long long a, b; scanf("%lld %lld", &a, &b); printf("%lld\\n", (a + b) % 10); }"""
LOOP = "int main() { volatile unsigned long x = 0; for (;;) x++; }"
BUSY_600MS = """#include <ctime>
#include <cstdio>
int main() { long long a, b; scanf("%lld %lld", &a, &b); volatile unsigned long x = 0;
             while (clock() < CLOCKS_PER_SEC * 6 / 10) x++; printf("%lld\\n", a + b); }"""


def truth(
    time_limit: object = {"seconds": 2.0, "nanos": 0.0}, **extra: object
) -> dict[str, object]:
    return {
        "name": "1000_A. Sum",
        "cf_rating": 800,
        "time_limit": time_limit,
        "memory_limit_bytes": 256000000,
        "private_tests": {
            "input": ["1 2\n", "3 4\n", "9 9\n", "50 50\n"],
            "output": ["3\n", "7", "18\n", "100\n"],
        },
        "public_tests": {"input": ["0 0\n"], "output": ["0\n"]},
        **extra,
    }


def answer(code: str) -> str:
    return f"<think>add them</think>\n<code>\n```cpp\n{code}\n```\n</code>"


def score(code_or_text: str, gt: object = None, raw: bool = False, **kwargs: object) -> float:
    text = code_or_text if raw else answer(code_or_text)
    return cc.compute_score("code_contests", text, truth() if gt is None else gt, {}, **kwargs)


def test_correct_solution_scores_one() -> None:
    assert score(SUM) == 1.0


def test_partly_wrong_scores_its_pass_ratio_or_zero_when_binary() -> None:
    assert score(SUM_SMALL) == 0.5
    assert score(SUM_SMALL, binary=True) == 0.0
    assert score(SUM, binary=True) == 1.0


def test_infinite_loop_scores_zero_within_its_time_limit() -> None:
    gt = truth(time_limit={"seconds": 0, "nanos": 500_000_000})
    start = time.monotonic()
    assert score(LOOP, gt) == 0.0
    # 4 tests on 2 workers, each stopped at 0.5 s + 0.5 s margin (up to 3 x 0.5 s + 0.5 s when the
    # machine is loaded), plus a compile.
    assert time.monotonic() - start < 2 * (3 * 0.5 + 0.5) + 4


def test_the_problems_own_time_limit_applies() -> None:
    assert score(BUSY_600MS, truth(time_limit=2)) == 1.0
    assert score(BUSY_600MS, truth(time_limit={"seconds": 0, "nanos": 300_000_000})) == 0.0


def test_no_code_scores_minus_one() -> None:
    assert score("I think the answer is to add the numbers.", raw=True) == cc.NO_CODE == -1.0
    assert score("<code>   </code>", raw=True) == -1.0


def test_compile_error_scores_minus_half() -> None:
    assert score("int main() { return undefined_name; }") == cc.COMPILE_ERROR == -0.5


def test_ground_truth_as_json_string_and_as_numpy_arrays() -> None:
    as_json = json.dumps(truth())
    assert score(SUM, as_json) == 1.0
    gt = truth()
    gt["private_tests"] = {k: np.array(v, dtype=object) for k, v in gt["private_tests"].items()}  # type: ignore[union-attr]
    assert score(SUM_SMALL, gt) == 0.5


def test_extraction_takes_the_last_code_block_then_the_last_cpp_fence() -> None:
    assert (
        cc.extract_code("<code>a</code> text <code>```cpp\nfirst\n```\n```cpp\nsecond\n```</code>")
        == "second\n"
    )
    assert cc.extract_code("<code>\nplain\n</code>").strip() == "plain"
    assert cc.extract_code("```cpp\none\n```\n```python\nno\n```\n```c++\ntwo\n```") == "two\n"
    assert cc.extract_code("```python\nprint(1)\n```") is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ({"seconds": 2.0, "nanos": 0.0}, 2.0),
        ({"seconds": 1, "nanos": 500000000}, 1.5),
        (3, 3.0),
        (0.25, 0.25),
        (None, cc.DEFAULT_TIME_S),
        ({"seconds": 0, "nanos": 0}, cc.DEFAULT_TIME_S),
    ],
)
def test_time_limit_forms(value: object, seconds: float) -> None:
    assert cc.time_limit_seconds(value) == seconds


def test_bad_limits_and_tests_are_named() -> None:
    with pytest.raises(ValueError, match="time_limit"):
        cc.time_limit_seconds("2s")
    with pytest.raises(ValueError, match="memory_limit_bytes"):
        cc.memory_limit_bytes("lots")
    with pytest.raises(ValueError, match="2 inputs but 1 outputs"):
        cc.select_tests({"private_tests": {"input": ["1", "2"], "output": ["1"]}}, 10, 0)


def test_tests_above_the_cap_are_a_seeded_sample() -> None:
    gt = {
        "name": "p",
        "private_tests": {
            "input": [str(i) for i in range(50)],
            "output": [str(i) for i in range(50)],
        },
    }
    picked = [c.input for c in cc.select_tests(gt, 10, seed=1)]
    assert len(picked) == 10 and len(set(picked)) == 10
    assert picked == [c.input for c in cc.select_tests(gt, 10, seed=1)]
    assert picked != [c.input for c in cc.select_tests(gt, 10, seed=2)]
    assert len(cc.select_tests(gt, 100, seed=1)) == 50


def test_loads_the_way_verl_loads_a_custom_reward(tmp_path: Path) -> None:
    # verl v0.6.0 get_custom_reward_fn: spec_from_file_location("custom_module", path), then
    # fn(data_source=..., solution_str=..., ground_truth=..., extra_info=..., **reward_kwargs).
    driver = f"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("custom_module", {str(REPO / "jobs/rewards/code_contests.py")!r})
module = importlib.util.module_from_spec(spec); sys.modules["custom_module"] = module; spec.loader.exec_module(module)
kwargs = {{"binary": True}}
print(module.compute_score(data_source="code_contests", solution_str={answer(SUM)!r},
                           ground_truth={json.dumps(truth())!r}, extra_info={{"index": 0}}, **kwargs))
"""
    done = subprocess.run(
        [sys.executable, "-I", "-c", driver],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1.0"


# Prints a / b with the digits given on the line: a correct real answer, written its own way.
DIVIDE = """#include <cstdio>
int main() { double a, b; int digits; scanf("%lf %lf %d", &a, &b, &digits); printf("%.*f\\n", digits, a / b); }"""


def real_truth(**extra: object) -> dict[str, object]:
    """A problem with real answers: 1 / 3 and 2 / 2 (expected written as the setter wrote them)."""
    return {
        "name": "divide",
        "time_limit": 2,
        "private_tests": {"input": ["1 3 6\n", "2 2 1\n"], "output": ["0.3333333\n", "1\n"]},
        **extra,
    }


def test_real_answers_within_1e_6_pass_as_testlibs_rcmp6_passes_them() -> None:
    """`0.333333` against `0.3333333` and `1.0` against `1` scored wrong."""
    assert score(DIVIDE, real_truth()) == 1.0


def test_a_problem_or_the_run_chooses_exact_tokens() -> None:
    assert score(DIVIDE, real_truth(checker="tokens")) == 0.0
    assert score(DIVIDE, real_truth(), checker={"code_contests": "tokens"}) == 0.0
    assert score(DIVIDE, real_truth(), checker="tokens") == 0.0


def test_an_integer_answer_off_in_its_ninth_digit_stays_wrong() -> None:
    gt = {
        "name": "big",
        "private_tests": {"input": ["999999999 1 0\n"], "output": ["1000000000\n"]},
    }
    assert score(DIVIDE, gt) == 0.0
    assert score(DIVIDE, gt, checker="reals") == 1.0


def test_an_unknown_checker_is_a_fault_naming_it() -> None:
    verdict = cc.judge_solution(answer(DIVIDE), real_truth(checker="rcmp9"))
    assert verdict.score == cc.FAULT and "ground_truth.checker: 'rcmp9'" in verdict.reason
