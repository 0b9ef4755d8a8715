"""The code-contests reward: extract the model's C++, run it on the problem's private tests, score it.

veRL (v0.6.0, verl/trainer/ppo/reward.py::get_custom_reward_fn) loads this file by path as a module
named `custom_module`, not as part of the `jobs` package, and calls
`compute_score(data_source=, solution_str=, ground_truth=, extra_info=)` with
`custom_reward_function.reward_kwargs` merged in (verl/workers/reward_manager/naive.py). Hence the
absolute import below, with the repository root put on sys.path when the file is loaded bare.

Scores (the CodeFu sample's tiers, aws-samples/amazon-sagemaker-generativeai
3_distributed_training/models/deepseek-r1-distill-qwen-7b/scripts/verl/utils/reward_score/code_contests.py):
-1 no code, -0.5 compile error, else the pass ratio over the sampled private tests, or 1/0 with
`binary=True` (what the sample's code does). Unlike the sample, the problem's own time and memory
limits apply to every test, and the code runs in the sandbox (in-process, or the service named by
CODE_SANDBOX_URL).

The reward never raises and never blocks past a bound it states: a reward that raises or hangs
stops the veRL run. Every input gets a score and a reason (`judge_solution` -> `Verdict`):
data the sandbox cannot take as it is (limits outside its bounds) is clamped, a source over
sandbox.MAX_CODE_BYTES scores as a compile error (Codeforces refuses it too), and a fault of the
sandbox or the data (a refusing, absent or garbled service, a full disk, a ground truth without
tests) scores FAULT with the reason logged as a warning. The call returns within
`call_bound_s(limits, tests, queue_margin_s)`: the worst case of the compile and every test box at
its wall backstop, plus `queue_margin_s` to wait for a busy executor.
"""

from __future__ import annotations

import http.client
import inspect
import json
import logging
import math
import os
import random
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ != "jobs.rewards.code_contests":
    # Loaded by path (veRL): the package next to this file, not whichever `jobs` the interpreter finds first.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from jobs.rewards import SANDBOX_TOKEN_ENV, SANDBOX_URL_ENV, judge, sandbox, uids
from jobs.rewards.extract import extract_code as extract_code  # the reward's API, re-exported

NO_CODE = -1.0
COMPILE_ERROR = -0.5
# A fault that is not the solution's (the sandbox, the service, the data): scored as a failed run
# rather than raised, with the reason logged: a raise stops the training run.
FAULT = 0.0
DEFAULT_TIME_S = 2.0
DEFAULT_MEMORY_BYTES = 256 * 10**6  # what code_contests records carry for most Codeforces problems


def time_limit_seconds(value: Any) -> float:
    """A code_contests time limit as seconds: the proto Duration dict {seconds, nanos}, a number, or absent.
    Not clamped: `limits_for` (and the data converter) bring it inside the sandbox's bounds."""
    if value is None:
        return DEFAULT_TIME_S
    if isinstance(value, Mapping):
        seconds = float(value.get("seconds") or 0) + float(value.get("nanos") or 0) / 1e9
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise ValueError(
            f"time_limit: {value!r} is neither a number of seconds nor a {{seconds, nanos}} mapping"
        )
    return seconds if seconds > 0 and math.isfinite(seconds) else DEFAULT_TIME_S


def memory_limit_bytes(value: Any) -> int:
    """A memory limit in bytes; 0 or absent (as in some records) means the default."""
    if value is None:
        return DEFAULT_MEMORY_BYTES
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"memory_limit_bytes: {value!r} is not a number of bytes")
    if not math.isfinite(value):
        return DEFAULT_MEMORY_BYTES
    return int(value) if value > 0 else DEFAULT_MEMORY_BYTES


def _as_list(value: Any) -> list[str]:
    # parquet rows arrive as lists (HF datasets) or numpy arrays (pandas); both iterate.
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(f"tests: expected a list of strings, got {type(value).__name__}")
    return [v.decode(errors="replace") if isinstance(v, bytes) else str(v) for v in value]


def load_ground_truth(ground_truth: Any) -> dict[str, Any]:
    """The ground truth as a dict, whether it arrives as one or as the JSON string our parquet stores."""
    if isinstance(ground_truth, (str, bytes)):
        ground_truth = json.loads(ground_truth)
    if not isinstance(ground_truth, Mapping):
        raise ValueError(
            f"ground_truth: expected a mapping or its JSON, got {type(ground_truth).__name__}"
        )
    return dict(ground_truth)


def test_lists(truth: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The private tests' inputs and outputs (the public ones if a problem has no private test)."""
    for key in ("private_tests", "public_tests"):
        tests = truth.get(key) or {}
        if not isinstance(tests, Mapping):
            raise ValueError(f"ground_truth.{key}: expected a mapping, got {type(tests).__name__}")
        inputs, outputs = _as_list(tests.get("input")), _as_list(tests.get("output"))
        if len(inputs) != len(outputs):
            raise ValueError(f"ground_truth.{key}: {len(inputs)} inputs but {len(outputs)} outputs")
        if inputs:
            return inputs, outputs
    raise ValueError(f"ground_truth for {truth.get('name')!r} has no private or public tests")


def select_tests(
    truth: Mapping[str, Any],
    max_tests: int,
    seed: int,
    checker: judge.Checker = judge.Checker.tokens,
) -> list[sandbox.Case]:
    """The private tests (public ones if a problem has none), a seeded sample of `max_tests` above
    the cap, each judged with `checker`."""
    inputs, outputs = test_lists(truth)
    order = list(range(len(inputs)))
    if len(order) > max_tests:
        # Seeded by the problem, so every rollout of one prompt is judged on the same tests.
        order = sorted(random.Random(f"{seed}:{truth.get('name', '')}").sample(order, max_tests))
    return [sandbox.Case(input=inputs[i], output=outputs[i], checker=checker) for i in order]


def limits_for(truth: Mapping[str, Any], **overrides: Any) -> sandbox.Limits:
    """The problem's limits, clamped into the sandbox's bounds (sandbox.clamp_limits)."""
    time_s, memory = sandbox.clamp_limits(
        time_limit_seconds(truth.get("time_limit")),
        memory_limit_bytes(truth.get("memory_limit_bytes")),
    )
    return sandbox.Limits(time_s=time_s, memory_bytes=memory, **overrides)


@dataclass(frozen=True)
class Verdict:
    """A score and why: `passed 3/4`, `no_code`, `compile_error`, `fault: ...`."""

    score: float
    reason: str


log = logging.getLogger(__name__)

# Waiting for a busy executor (503s, a pod restarting in a node upgrade) is the normal case with
# rollout batches of hundreds and a few slots, so the bound leaves this much on top of the run's
# own worst case; past it the solution scores FAULT with the reason, the batch goes on.
QUEUE_MARGIN_S = 600.0
_MAX_BACKOFF_S = 10.0
# What one request to the service may carry: the service's own defaults (service.py), so a long
# test set is sent as several requests (the service compiles the source once) instead of a 413.
MAX_BODY_BYTES = 16 * 2**20
MAX_TESTS_PER_REQUEST = 200
_SLACK_S = 5.0


def compile_bound_s(limits: sandbox.Limits) -> float:
    """The compile box's wall backstop plus the time to reap its uid."""
    return 2 * limits.compile_time_s + 5 + uids.REAP_DEADLINE_S


def test_bound_s(limits: sandbox.Limits) -> float:
    """One test box's wall backstop plus the time to reap its uid."""
    return sandbox.WALL_FACTOR * limits.time_s + limits.wall_margin_s + uids.REAP_DEADLINE_S


def run_budget_s(limits: sandbox.Limits, tests: int, queue_margin_s: float) -> float:
    """Until when new work is started: the compile and every test one after another, plus the margin."""
    return compile_bound_s(limits) + tests * test_bound_s(limits) + queue_margin_s


def call_bound_s(
    limits: sandbox.Limits,
    tests: int,
    queue_margin_s: float = QUEUE_MARGIN_S,
    budget_s: float | None = None,
) -> float:
    """The stated bound of `compute_score` in-process: no new work after the budget (`budget_s`,
    default `run_budget_s`), and what was started then ends within its own backstop (a compile or
    a test box) plus a few seconds of slack. Through the service it is `remote_bound_s(budget)`."""
    budget = run_budget_s(limits, tests, queue_margin_s) if budget_s is None else budget_s
    return budget + max(compile_bound_s(limits), test_bound_s(limits)) + _SLACK_S


def remote_bound_s(budget_s: float) -> float:
    """Through the service every request's timeout is cut to what is left of the budget."""
    return budget_s + _SLACK_S


_local_lock = threading.Lock()
_local: sandbox.Executor | None = None


def _run_local(
    code: str, cases: list[sandbox.Case], limits: sandbox.Limits, deadline: float | None = None
) -> sandbox.RunResult:
    global _local
    with _local_lock:
        if _local is None:
            _local = sandbox.Executor()
    return _local.run(code, cases, limits, deadline=deadline)


class RemoteError(RuntimeError):
    """The service gave no usable answer (refused, absent, garbled, or past the budget)."""


def _body(code: str, cases: list[sandbox.Case], limits: sandbox.Limits) -> bytes:
    return json.dumps(
        {"code": code, "tests": [c.model_dump() for c in cases], "limits": limits.model_dump()}
    ).encode(errors="surrogatepass")


def request_chunks(
    code: str,
    cases: list[sandbox.Case],
    limits: sandbox.Limits,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_tests: int = MAX_TESTS_PER_REQUEST,
) -> list[list[int]]:
    """Test indices grouped so each request's body fits `max_body_bytes` (a body over the
    service's limit was a 413, then a raise). A single test too large on its own makes
    a group of its own; the service answers it 413 and it scores as a fault."""
    overhead = len(_body(code, [], limits)) + 16
    groups: list[list[int]] = []
    current: list[int] = []
    size = overhead
    for i, case in enumerate(cases):
        need = len(_body("", [case], limits)) - len(_body("", [], limits)) + 2
        if current and (size + need > max_body_bytes or len(current) >= max_tests):
            groups.append(current)
            current, size = [], overhead
        current.append(i)
        size += need
    if current:
        groups.append(current)
    return groups


def run_remote(
    url: str,
    code: str,
    cases: list[sandbox.Case],
    limits: sandbox.Limits,
    budget_s: float | None = None,
) -> sandbox.RunResult:
    """POST the run to the executor service; retries while it is busy (503) or unreachable,
    for at most `budget_s` seconds (default: run_budget_s with QUEUE_MARGIN_S), every request's
    timeout cut to what is left of it. The bearer token comes from $CODE_SANDBOX_TOKEN (a Secret
    the Ray pods read). Raises RemoteError (naming the variable, never the token's value) when
    the service refuses, answers something that is not a result, or the budget is spent."""
    budget_s = run_budget_s(limits, len(cases), QUEUE_MARGIN_S) if budget_s is None else budget_s
    deadline = time.monotonic() + budget_s
    results: list[sandbox.CaseResult] = []
    isolation = ""
    for group in request_chunks(code, cases, limits) if cases else [[]]:
        part = _post_until(
            url, _body(code, [cases[i] for i in group], limits), limits, group, deadline, budget_s
        )
        if not part.compiled:
            return part
        if len(part.results) != len(group):
            raise RemoteError(
                f"{SANDBOX_URL_ENV}={url}: {len(part.results)} results for {len(group)} tests"
            )
        results += part.results
        isolation = part.isolation
    return sandbox.RunResult(compiled=True, results=results, isolation=isolation)


def _post_until(
    url: str,
    body: bytes,
    limits: sandbox.Limits,
    group: list[int],
    deadline: float,
    budget_s: float,
) -> sandbox.RunResult:
    # One request's worst case: the compile box and every test box at its wall backstop, in turn.
    worst = compile_bound_s(limits) + len(group) * test_bound_s(limits) + 30
    last: Exception | None = None
    tries = 0
    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {os.environ.get(SANDBOX_TOKEN_ENV, '')}",
    }
    while True:
        tries += 1
        left = deadline - time.monotonic()
        if left <= 0:
            raise RemoteError(
                f"{SANDBOX_URL_ENV}={url}: no result after {tries - 1} attempts in "
                f"{budget_s:.0f} s: {last}"
            )
        request = urllib.request.Request(url.rstrip("/") + "/run", data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=max(0.01, min(worst, left))) as response:
                return sandbox.RunResult.model_validate_json(response.read())
        except urllib.error.HTTPError as e:
            if e.code == 401:
                raise RemoteError(
                    f"{SANDBOX_URL_ENV}={url}: the service refused the token in "
                    f"{SANDBOX_TOKEN_ENV} (HTTP 401)"
                ) from None
            if e.code != 503:
                raise RemoteError(
                    f"{SANDBOX_URL_ENV}={url}: HTTP {e.code}: {e.read()[:500].decode(errors='replace')}"
                ) from None
            last = e
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            last = e
        except ValueError as e:  # pydantic's ValidationError: an answer that is not a RunResult
            raise RemoteError(
                f"{SANDBOX_URL_ENV}={url}: the answer is not a run result: {str(e)[:300]}"
            ) from None
        pause = min(_MAX_BACKOFF_S, 0.25 * 2 ** min(tries, 6)) * (0.5 + random.random())
        time.sleep(max(0.0, min(pause, deadline - time.monotonic())))


def judge_solution(
    solution_str: Any,
    ground_truth: Any,
    *,
    binary: bool = False,
    max_tests: int = 100,
    seed: int = 0,
    sandbox_url: str | None = None,
    queue_margin_s: float = QUEUE_MARGIN_S,
    budget_s: float | None = None,
    checker: Any = None,
    data_source: str | None = None,
) -> Verdict:
    """The score of one solution and its reason; never raises (see the module docstring).
    `budget_s` replaces `run_budget_s(limits, tests, queue_margin_s)` as the run's budget.
    `checker`: how outputs are compared (jobs/rewards/judge.py: `auto`, `tokens`, `reals`, or a
    mapping from `data_source` to one); the ground truth's own `checker` field comes first."""
    try:
        return _judge(
            solution_str,
            ground_truth,
            binary,
            max_tests,
            seed,
            sandbox_url,
            queue_margin_s,
            budget_s,
            checker,
            data_source,
        )
    except Exception as e:
        return _fault(f"internal error: {type(e).__name__}: {e}")


# What a caller may ask of the judge: `judge_solution`'s keywords, with their defaults there.
_JUDGE_OPTIONS = frozenset(
    name
    for name, param in inspect.signature(judge_solution).parameters.items()
    if param.kind is inspect.Parameter.KEYWORD_ONLY
)


def _fault(reason: str) -> Verdict:
    log.warning("code_contests reward: scored %s: %s", FAULT, reason[:1000])
    return Verdict(FAULT, f"fault: {reason}")


def _judge(
    solution_str: Any,
    ground_truth: Any,
    binary: bool,
    max_tests: int,
    seed: int,
    sandbox_url: str | None,
    queue_margin_s: float,
    budget_s: float | None,
    checker: Any,
    data_source: str | None,
) -> Verdict:
    code = extract_code(solution_str) if isinstance(solution_str, str) else None
    if code is None:
        return Verdict(NO_CODE, "no_code")
    try:
        truth = load_ground_truth(ground_truth)
        rule = judge.choose(truth, checker, data_source, test_lists(truth)[1])
        cases = select_tests(truth, max(1, int(max_tests)), seed, rule)
        limits = limits_for(truth)
    except (ValueError, TypeError) as e:
        return _fault(f"ground truth: {e}")
    size = len(code.encode(errors="surrogatepass"))
    if size > sandbox.MAX_CODE_BYTES:
        return Verdict(
            COMPILE_ERROR, f"compile_error: source of {size} bytes over {sandbox.MAX_CODE_BYTES}"
        )
    budget = (
        run_budget_s(limits, len(cases), max(0.0, float(queue_margin_s)))
        if budget_s is None
        else max(0.0, float(budget_s))
    )
    url = sandbox_url or os.environ.get(SANDBOX_URL_ENV)
    try:
        if url:
            result = run_remote(url, code, cases, limits, budget_s=budget)
        else:
            result = _run_local(code, cases, limits, deadline=time.monotonic() + budget)
    except (RemoteError, RuntimeError, OSError) as e:
        return _fault(str(e))
    if not result.compiled:
        return Verdict(COMPILE_ERROR, f"compile_error: {result.compile_error[:200]}")
    if len(result.results) != len(cases):
        return _fault(f"{len(result.results)} results for {len(cases)} tests")
    unstarted = [r for r in result.results if r.status is sandbox.Status.start_error]
    if unstarted:  # the sandbox's fault, not the solution's: never scored as its failure
        return _fault(
            f"sandbox: {len(unstarted)} of {len(cases)} tests could not start: {unstarted[0].error}"
        )
    ratio = result.passed / len(cases)
    statuses = sorted(
        {r.status.value for r in result.results if r.status is not sandbox.Status.passed}
    )
    reason = f"passed {result.passed}/{len(cases)}" + (
        f" ({', '.join(statuses)})" if statuses else ""
    )
    if binary:
        return Verdict(1.0 if ratio == 1.0 else 0.0, reason)
    return Verdict(ratio, reason)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any = None,
    **options: Any,
) -> float:
    """veRL custom reward: -1 no code, -0.5 compile error, else pass ratio (1/0 when `binary`);
    FAULT (0) with a logged reason when the sandbox or the data fails. Never raises.
    `options` are veRL's reward_kwargs: those `judge_solution` takes reach it, any other is
    ignored."""
    judging = {name: value for name, value in options.items() if name in _JUDGE_OPTIONS}
    judging["data_source"] = data_source
    return judge_solution(solution_str, ground_truth, **judging).score
