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
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

if __name__ != "jobs.rewards.code_contests":
    # Loaded by path (veRL): the package next to this file, not whichever `jobs` the interpreter finds first.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from jobs.rewards import SANDBOX_TOKEN_ENV, SANDBOX_URL_ENV, sandbox

NO_CODE = -1.0
COMPILE_ERROR = -0.5
DEFAULT_TIME_S = 2.0
DEFAULT_MEMORY_BYTES = 256 * 10**6  # what code_contests records carry for most Codeforces problems

_CODE_TAG = re.compile(r"<code>(.*?)</code>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:cpp|c\+\+|cc|cxx)[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_code(solution: str) -> str | None:
    """The last <code> block (its last fenced cpp block if it has one), else the last fenced cpp block."""
    tags = _CODE_TAG.findall(solution)
    if tags:
        inner = tags[-1]
        fences = _FENCE.findall(inner)
        code = fences[-1] if fences else re.sub(r"^\s*```[^\n]*\n|```\s*$", "", inner)
    else:
        fences = _FENCE.findall(solution)
        code = fences[-1] if fences else ""
    return code if code.strip() else None


def time_limit_seconds(value: Any) -> float:
    """A code_contests time limit as seconds: the proto Duration dict {seconds, nanos}, a number, or absent."""
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
    return seconds if seconds > 0 else DEFAULT_TIME_S


def memory_limit_bytes(value: Any) -> int:
    """A memory limit in bytes; 0 or absent (as in some records) means the default."""
    if value is None:
        return DEFAULT_MEMORY_BYTES
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"memory_limit_bytes: {value!r} is not a number of bytes")
    return int(value) if value > 0 else DEFAULT_MEMORY_BYTES


def _as_list(value: Any) -> list[str]:
    # parquet rows arrive as lists (HF datasets) or numpy arrays (pandas); both iterate.
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(f"tests: expected a list of strings, got {type(value).__name__}")
    return [str(v) for v in value]


def load_ground_truth(ground_truth: Any) -> dict[str, Any]:
    """The ground truth as a dict, whether it arrives as one or as the JSON string our parquet stores."""
    if isinstance(ground_truth, (str, bytes)):
        ground_truth = json.loads(ground_truth)
    if not isinstance(ground_truth, Mapping):
        raise ValueError(
            f"ground_truth: expected a mapping or its JSON, got {type(ground_truth).__name__}"
        )
    return dict(ground_truth)


def select_tests(truth: Mapping[str, Any], max_tests: int, seed: int) -> list[sandbox.Case]:
    """The private tests (public ones if a problem has none), a seeded sample of `max_tests` above the cap."""
    for key in ("private_tests", "public_tests"):
        tests = truth.get(key) or {}
        inputs, outputs = _as_list(tests.get("input")), _as_list(tests.get("output"))
        if len(inputs) != len(outputs):
            raise ValueError(f"ground_truth.{key}: {len(inputs)} inputs but {len(outputs)} outputs")
        if inputs:
            break
    else:
        raise ValueError(f"ground_truth for {truth.get('name')!r} has no private or public tests")
    order = list(range(len(inputs)))
    if len(order) > max_tests:
        # Seeded by the problem, so every rollout of one prompt is judged on the same tests.
        order = sorted(random.Random(f"{seed}:{truth.get('name', '')}").sample(order, max_tests))
    return [sandbox.Case(input=inputs[i], output=outputs[i]) for i in order]


def limits_for(truth: Mapping[str, Any], **overrides: Any) -> sandbox.Limits:
    return sandbox.Limits(
        time_s=time_limit_seconds(truth.get("time_limit")),
        memory_bytes=memory_limit_bytes(truth.get("memory_limit_bytes")),
        **overrides,
    )


_local_lock = threading.Lock()
_local: sandbox.Executor | None = None


def _run_local(code: str, cases: list[sandbox.Case], limits: sandbox.Limits) -> sandbox.RunResult:
    global _local
    with _local_lock:
        if _local is None:
            _local = sandbox.Executor()
    return _local.run(code, cases, limits)


# A busy service (503) is back-pressure, not a fault: with rollout batches of hundreds of
# solutions and a few executor slots, waiting for a slot is the normal case, so busy answers
# and a briefly unreachable service (a pod restarting in a node upgrade) are retried until this
# budget is spent. Only then does the reward raise, which stops the run loudly (veRL retries a
# failing batch once) instead of training on made-up zeros.
REMOTE_BUDGET_S = 900.0
_MAX_BACKOFF_S = 10.0


def run_remote(
    url: str,
    code: str,
    cases: list[sandbox.Case],
    limits: sandbox.Limits,
    budget_s: float | None = None,
) -> sandbox.RunResult:
    """POST the run to the executor service; retries while it is busy (503) or unreachable,
    for at most `budget_s` seconds. The bearer token comes from $CODE_SANDBOX_TOKEN (a Secret the
    Ray pods read); a refused token (401) raises at once, naming the variable, never the value."""
    body = json.dumps(
        {"code": code, "tests": [c.model_dump() for c in cases], "limits": limits.model_dump()}
    ).encode()
    # Worst case: the compile box and every test box at its wall backstop, one after another.
    timeout = (
        2 * limits.compile_time_s
        + 5
        + len(cases) * (sandbox.WALL_FACTOR * limits.time_s + limits.wall_margin_s)
        + 30
    )
    budget_s = REMOTE_BUDGET_S if budget_s is None else budget_s
    deadline = time.monotonic() + budget_s
    last: Exception | None = None
    tries = 0
    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {os.environ.get(SANDBOX_TOKEN_ENV, '')}",
    }
    while True:
        tries += 1
        request = urllib.request.Request(url.rstrip("/") + "/run", data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return sandbox.RunResult.model_validate_json(response.read())
        except urllib.error.HTTPError as e:
            if e.code == 401:
                raise RuntimeError(
                    f"{SANDBOX_URL_ENV}={url}: the service refused the token in "
                    f"{SANDBOX_TOKEN_ENV} (HTTP 401)"
                ) from None
            if e.code != 503:
                raise RuntimeError(
                    f"{SANDBOX_URL_ENV}={url}: HTTP {e.code}: {e.read()[:500].decode(errors='replace')}"
                ) from None
            last = e
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            last = e
        pause = min(_MAX_BACKOFF_S, 0.25 * 2 ** min(tries, 6)) * (0.5 + random.random())
        if time.monotonic() + pause > deadline:
            raise RuntimeError(
                f"{SANDBOX_URL_ENV}={url}: no result after {tries} attempts in "
                f"{budget_s:.0f} s: {last}"
            )
        time.sleep(pause)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any = None,
    *,
    binary: bool = False,
    max_tests: int = 100,
    seed: int = 0,
    sandbox_url: str | None = None,
    **_: Any,
) -> float:
    """veRL custom reward: -1 no code, -0.5 compile error, else pass ratio (1/0 when `binary`)."""
    code = extract_code(solution_str)
    if code is None:
        return NO_CODE
    truth = load_ground_truth(ground_truth)
    cases = select_tests(truth, max_tests, seed)
    limits = limits_for(truth)
    url = sandbox_url or os.environ.get(SANDBOX_URL_ENV)
    result = run_remote(url, code, cases, limits) if url else _run_local(code, cases, limits)
    if not result.compiled:
        return COMPILE_ERROR
    ratio = result.passed / len(cases)
    if binary:
        return 1.0 if ratio == 1.0 else 0.0
    return ratio
