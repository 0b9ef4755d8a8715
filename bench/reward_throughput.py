"""Benchmark: judged code-contests solutions per second per core, bare g++ vs the old sandbox vs the boxes; and the cost of one test in a box.

Judges one batch of N distinct solutions (typical contest C++: `#include <bits/stdc++.h>`, three in
four right; each compiled with the real g++ -O2 and run on T tests of an a+b problem) four ways,
in the same run, rotating which goes first each round:
  bare     g++ -std=c++17 -O2 then each test as a plain subprocess: no isolation at all;
  bare+pch the same with the precompiled bits/stdc++.h the boxes use (the fair floor: the same
           compile work, no isolation);
  before   the executor at 7298279, before e17fc89 gave it bwrap boxes (`git show 7298279:jobs/rewards/sandbox.py`,
           loaded from a temporary copy): unshare + a mount script + setpriv + prlimit, no header cache;
  after    jobs/rewards/sandbox.py: a bwrap box per compile and per test, the precompiled
           bits/stdc++.h (built before timing starts, as the service does at start).
Solutions are judged `--concurrency` at a time (default: CPUs); each judge's throughput is
solutions / elapsed / CPUs. Prints each and the ratios after/bare+pch, after/bare and before/bare.
Then the per-test cost on an already compiled binary: `--per-test` tests of one solution in one
box (their walls as boxinit measures them, and the marginal ms per test) against as many bare
fork/execs of the same binary (subprocess.run); median and p99 ms.
The whole measurement runs `--runs` times (default 5) in one process, each run's ratios printed
with the load average beside them, then the medians over the runs.
Run: .venv/bin/python bench/reward_throughput.py [--solutions 16] [--tests 8] [--rounds 2] [--runs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jobs.rewards import sandbox  # noqa: E402

BEFORE_COMMIT = "7298279"
RIGHT = """#include <bits/stdc++.h>
using namespace std;
int main() {{ long long a, b; cin >> a >> b; vector<long long> v{{a, b}}; cout << accumulate(v.begin(), v.end(), 0LL) << "\\n"; /* {i} */ }}"""
WRONG = RIGHT.replace("0LL)", "1LL)")

Judge = Callable[[str, list[tuple[str, str]]], float]


def solutions(n: int) -> list[str]:
    return [(WRONG if i % 4 == 3 else RIGHT).format(i=i) for i in range(n)]


def tests(t: int) -> list[tuple[str, str]]:
    return [(f"{i + 1} {(i + 1) * 7}\n", f"{(i + 1) * 8}") for i in range(t)]


def bare_judge(code: str, cases: list[tuple[str, str]], pch_dir: Path | None = None) -> float:
    """g++ and plain subprocesses; with `pch_dir`, the precompiled bits/stdc++.h found first."""
    flags = [f"-I{pch_dir}"] if pch_dir is not None else []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "main.cpp").write_text(code)
        if subprocess.run(
            [*sandbox.COMPILER, *flags, "-o", "prog", "main.cpp"], cwd=tmp
        ).returncode:
            return -0.5
        passed = sum(
            subprocess.run(
                ["./prog"], cwd=tmp, input=i, capture_output=True, text=True, timeout=10
            ).stdout.strip()
            == o
            for i, o in cases
        )
    return passed / len(cases)


def load_before(tmp: Path):
    """The executor module before its bwrap boxes (BEFORE_COMMIT), from git, as `before_sandbox`."""
    source = subprocess.run(
        ["git", "show", f"{BEFORE_COMMIT}:jobs/rewards/sandbox.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = tmp / "before_sandbox.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("before_sandbox", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["before_sandbox"] = module
    spec.loader.exec_module(module)
    return module


def executor_judge(module, executor) -> Judge:
    def judge(code: str, cases: list[tuple[str, str]]) -> float:
        result = executor.run(
            code, [module.Case(input=i, output=o) for i, o in cases], module.Limits(time_s=1)
        )
        return result.passed / len(cases) if result.compiled else -0.5

    return judge


def per_test_ms(root: Path, samples: int) -> tuple[list[float], list[float], float, float]:
    """The cost of one test: the solution run once on `samples` tests in one box (one worker),
    each test's wall as boxinit measured it (fork, limits, exec, exit, reaped), against a bare
    fork/exec of the same binary (subprocess.run) `samples` times; and the marginal ms per test of
    each, (whole run - one-test run) / (samples - 1) in the box, total / samples bare."""
    code, (given, expected) = RIGHT.format(i="per-test"), tests(1)[0]
    one = sandbox.Executor(workers=1, root=root)  # the same root: its header is already built
    try:
        limits = sandbox.Limits(time_s=1)
        assert one.run(code, [sandbox.Case(input=given, output=expected)], limits).passed == 1
        start = time.perf_counter()
        one.run(code, [sandbox.Case(input=given, output=expected)], limits)
        single = time.perf_counter() - start
        start = time.perf_counter()
        result = one.run(code, [sandbox.Case(input=given, output=expected)] * samples, limits)
        marginal_box = 1000 * (time.perf_counter() - start - single) / (samples - 1)
        assert result.passed == samples, result
        boxed = [1000 * r.wall_s for r in result.results]
    finally:
        one.close()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "main.cpp").write_text(code)
        subprocess.run([*sandbox.COMPILER, "-o", "prog", "main.cpp"], cwd=tmp, check=True)
        bare = []
        for _ in range(samples):
            start = time.perf_counter()
            out = subprocess.run(["./prog"], cwd=tmp, input=given, capture_output=True, text=True)
            assert out.stdout.strip() == expected
            bare.append(1000 * (time.perf_counter() - start))
    return boxed, bare, marginal_box, statistics.mean(bare)


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else values[0]


def timed(
    judge: Judge, codes: list[str], cases: list[tuple[str, str]], concurrency: int
) -> tuple[float, list[float]]:
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        scores = list(pool.map(lambda c: judge(c, cases), codes))
    return time.monotonic() - start, scores


def one_run(
    args: argparse.Namespace, judges: dict[str, Judge], after_root: Path, run: int
) -> dict[str, float]:
    """One run: `--rounds` rounds of every judge (rotating which goes first), then the per-test
    cost; its ratios and the load average (1 min) at its end."""
    cpus = os.cpu_count() or 1
    cases = tests(args.tests)
    expected = [0.0 if i % 4 == 3 else 1.0 for i in range(args.solutions)]
    times: dict[str, list[float]] = {k: [] for k in judges}
    for r in range(args.rounds):
        names = list(judges)[r % len(judges) :] + list(judges)[: r % len(judges)]
        for name in names:
            # Fresh sources each round (a comment differs), so no judge reuses a binary across rounds.
            codes = [c + f"\n// run {run} round {r}\n" for c in solutions(args.solutions)]
            elapsed, scores = timed(judges[name], codes, cases, args.concurrency)
            assert scores == expected, f"{name}: {scores} != {expected}"
            times[name].append(elapsed)
            print(f"run {run + 1} round {r + 1} {name:8s} {elapsed:7.2f} s", flush=True)
    boxed, bare, marginal_box, marginal_bare = per_test_ms(after_root, args.per_test)
    rate = {k: args.solutions / statistics.median(v) / cpus for k, v in times.items()}
    out = {f"rate {k}": v for k, v in rate.items()}
    out.update(
        {
            "after/bare+pch": rate["after"] / rate["bare+pch"],
            "after/bare": rate["after"] / rate["bare"],
            "after/before": rate["after"] / rate["before"],
            "test box ms": statistics.median(boxed),
            "test bare ms": statistics.median(bare),
            "test p99 box ms": _p99(boxed),
            "per test box/bare": statistics.median(boxed) / statistics.median(bare),
            "marginal box/bare": marginal_box / marginal_bare,
            "load": os.getloadavg()[0],
        }
    )
    print(
        f"run {run + 1}: after/bare+pch {out['after/bare+pch']:.2f}, per test box/bare "
        f"{out['per test box/bare']:.2f} ({out['test box ms']:.2f} / {out['test bare ms']:.2f} ms), "
        f"marginal {out['marginal box/bare']:.2f}, load average {out['load']:.1f}",
        flush=True,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=int, default=16)
    parser.add_argument("--tests", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5, help="runs; the medians are reported")
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--per-test", type=int, default=200, help="samples of the per-test cost")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before = load_before(Path(tmp))
        # Its work dirs must sit under directories the pool uids can traverse (not the 0700 temp dir).
        before_ex = before.Executor(
            workers=args.concurrency, root=Path(tempfile.gettempdir()) / "rl-sandbox-before"
        )
        after_ex = sandbox.Executor(workers=args.concurrency)  # builds the header once, untimed
        assert after_ex.pch is not None, "the executor built no precompiled header"
        pch_dir = after_ex.pch  # holds bits/stdc++.h.gch, built with sandbox.COMPILER's flags
        judges: dict[str, Judge] = {
            "bare": bare_judge,
            "bare+pch": lambda code, cases: bare_judge(code, cases, pch_dir),
            "before": executor_judge(before, before_ex),
            "after": executor_judge(sandbox, after_ex),
        }
        try:
            runs = [one_run(args, judges, after_ex.root, run) for run in range(args.runs)]
        finally:
            before_ex.close()
            after_ex.close()
    print(
        f"\n{args.runs} runs of {args.solutions} distinct solutions x {args.tests} tests, "
        f"{os.cpu_count()} CPUs, concurrency {args.concurrency}, isolation {after_ex.isolation}"
    )
    print("run  after/bare+pch  after/bare  after/before  test box ms  bare ms  box/bare  load")
    for i, r in enumerate(runs):
        print(
            f"{i + 1:3d}  {r['after/bare+pch']:14.2f}  {r['after/bare']:10.2f}  {r['after/before']:12.2f}  "
            f"{r['test box ms']:11.2f}  {r['test bare ms']:7.2f}  {r['per test box/bare']:8.2f}  {r['load']:4.1f}"
        )
    median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(
        f"median {median['after/bare+pch']:11.2f}  {median['after/bare']:10.2f}  {median['after/before']:12.2f}  "
        f"{median['test box ms']:11.2f}  {median['test bare ms']:7.2f}  {median['per test box/bare']:8.2f}  "
        f"{median['load']:4.1f}"
    )
    print(f"median rate after {median['rate after']:.3f} judged solutions/s per core")


if __name__ == "__main__":
    main()
