"""Benchmark: code-contests reward throughput, parallel executor vs one test at a time.

Scores a batch of N model answers (default 64: three in four right, one in four wrong, each
compiled with the real g++ and run on T private tests of an a+b problem) with
  (a) the parallel path: answers scored concurrently, tests run `--workers` at a time, and
  (b) the baseline: one answer at a time, one test at a time (Executor(workers=1)),
in the same run, alternating which goes first, and prints tests per second for each and the ratio
(parallel / serial). Both go through the same sandbox (namespaces and pool uids when root).
Run: .venv/bin/python bench/reward_throughput.py [--solutions 64] [--tests 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jobs.rewards import code_contests as cc  # noqa: E402
from jobs.rewards import sandbox  # noqa: E402

RIGHT = """#include <cstdio>
int main() {{ long long a, b; scanf("%lld %lld", &a, &b); printf("%lld\\n", a + b); /* variant {i} */ }}"""
WRONG = """#include <cstdio>
int main() {{ long long a, b; scanf("%lld %lld", &a, &b); printf("%lld\\n", a - b); /* variant {i} */ }}"""


def batch(n: int, tests: int) -> tuple[list[str], str]:
    # Distinct sources, so nothing could be cached between answers.
    answers = [f"<think>.</think><code>```cpp\n{(WRONG if i % 4 == 3 else RIGHT).format(i=i)}\n```</code>" for i in range(n)]
    truth = {"name": "bench-sum", "time_limit": {"seconds": 1, "nanos": 0}, "memory_limit_bytes": 256000000,
             "private_tests": {"input": [f"{i + 1} {(i + 1) * 7}\n" for i in range(tests)],
                               "output": [f"{(i + 1) * 8}\n" for i in range(tests)]}}
    return answers, json.dumps(truth)


def score_all(executor: sandbox.Executor, answers: list[str], truth: str, concurrency: int) -> tuple[float, list[float]]:
    gt = cc.load_ground_truth(truth)
    cases, limits = cc.select_tests(gt, 1000, 0), cc.limits_for(gt)

    def one(answer: str) -> float:
        code = cc.extract_code(answer)
        assert code is not None
        result = executor.run(code, cases, limits)
        return result.passed / len(cases) if result.compiled else cc.COMPILE_ERROR

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        scores = list(pool.map(one, answers))
    return time.monotonic() - start, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=int, default=64)
    parser.add_argument("--tests", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="each round runs both, alternating which goes first")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    answers, truth = batch(args.solutions, args.tests)
    expected = [0.0 if i % 4 == 3 else 1.0 for i in range(args.solutions)]
    parallel_ex, serial_ex = sandbox.Executor(workers=args.workers), sandbox.Executor(workers=1)
    times: dict[str, list[float]] = {"parallel": [], "serial": []}
    try:
        for r in range(args.rounds):
            order = ["parallel", "serial"] if r % 2 == 0 else ["serial", "parallel"]
            for kind in order:
                ex, conc = (parallel_ex, args.workers) if kind == "parallel" else (serial_ex, 1)
                elapsed, scores = score_all(ex, answers, truth, conc)
                assert scores == expected, f"{kind}: scores {scores} != {expected}"
                times[kind].append(elapsed)
                print(f"round {r + 1} {kind:8s} {elapsed:7.2f} s", flush=True)
    finally:
        parallel_ex.close()
        serial_ex.close()
    total_tests = args.solutions * args.tests
    p, s = statistics.median(times["parallel"]), statistics.median(times["serial"])
    print(f"\nisolation: {sandbox.isolation_mode()}, {os.cpu_count()} CPUs, workers {args.workers}, "
          f"{args.solutions} answers x {args.tests} tests (compile included), load avg {os.getloadavg()[0]:.1f}")
    print(f"parallel: {total_tests / p:7.1f} tests/s  (median {p:.2f} s)")
    print(f"serial:   {total_tests / s:7.1f} tests/s  (median {s:.2f} s)")
    print(f"ratio (parallel / serial throughput): {s / p:.2f}")


if __name__ == "__main__":
    main()
