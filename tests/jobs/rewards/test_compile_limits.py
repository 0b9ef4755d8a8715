"""What a compile may take from the executor: memory from its budget, bytes of scratch disk.

Several memory-heavy compiles at once stay within the service's memory budget and each scores
as a compile error; a binary over the output cap is a compile error; a scratch disk too full for
a binary is the sandbox's fault (FAULT, logged), never the solution's, and it leaves nothing
behind; a compile waiting for memory gives up at its run's deadline. Siblings in the same
batch score 1.0 throughout, and no process of a box outlives it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.rewards import SANDBOX_TOKEN_ENV
from jobs.rewards import code_contests as cc
from jobs.rewards.batch import compute_score_batch
from jobs.rewards.compile_cache import DISK_FULL, MAX_BINARY_BYTES
from jobs.rewards.sandbox import (
    COMPILE_BYTES,
    LARGEST_BOX_BYTES,
    Case,
    CompileNotStarted,
    Executor,
    Limits,
    Status,
    _disk_full,
)
from tests.jobs.rewards import attacks as a
from tests.jobs.rewards.serving import Service

pytestmark = pytest.mark.compiler

# 2^24 distinct instantiations: g++ runs out of its 512 MiB share of address space after ~10 s
# of CPU ("virtual memory exhausted"), a compile error. K makes each source distinct, so the
# compile cache does not fold them into one compile.
TEMPLATE_BOMB = """template <int D, long K> struct T {{
  static constexpr long v = T<D - 1, 2 * K>::v + T<D - 1, 2 * K + 1>::v; }};
template <long K> struct T<0, K> {{ static constexpr long v = K; }};
int main() {{ return T<24, {k}>::v % 7; }}
"""

# An initialised array is stored in the binary: `mib` MiB of .data.
BIG_BINARY = """char big[{mib} << 20] = {{1}};
int main() {{ return big[12345]; }}
"""


def _rss_of(pids: list[int], comm: str) -> tuple[int, int]:
    """How many of `pids` run `comm`, and their resident bytes together."""
    count = rss = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Name", "").strip() != comm:
            continue
        count += 1
        rss += int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    return count, rss


def _batch(service: Service, codes: list[str], truths: list[str]) -> list[float]:
    return compute_score_batch(
        ["code_contests"] * len(codes),
        [a.answer(c) for c in codes],
        truths,
        None,
        concurrency=len(codes),
        sandbox_url=service.url,
    )


def _nothing_outlives(service: Service) -> None:
    deadline = time.monotonic() + 10
    while service.box_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.box_pids() == []
    assert service.healthy_within(5)


@pytest.fixture(scope="module")
def two_compiles() -> Iterator[Service]:
    """A service whose memory budget holds two of the largest compiles at once, not three."""
    assert 2 * COMPILE_BYTES >= LARGEST_BOX_BYTES
    s = Service(concurrency=4, memory_bytes=2 * COMPILE_BYTES)
    yield s
    s.stop()


def test_memory_bombs_compile_within_the_budget_and_siblings_score(
    two_compiles: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SANDBOX_TOKEN_ENV, two_compiles.token)
    codes = [TEMPLATE_BOMB.format(k=k) for k in (1, 2, 3)] + [a.SUM, a.SLOW_SUM]
    scores: list[float] = []
    scoring = threading.Thread(
        target=lambda: scores.extend(_batch(two_compiles, codes, [a.SUM_TRUTH] * 5))
    )
    peak_count = peak_rss = 0
    scoring.start()
    while scoring.is_alive():
        count, rss = _rss_of(two_compiles.box_pids(), "cc1plus")
        peak_count, peak_rss = max(peak_count, count), max(peak_rss, rss)
        time.sleep(0.05)
    scoring.join()
    assert scores == [cc.COMPILE_ERROR] * 3 + [1.0, 1.0]
    # Two bombs ran side by side (the budget admits two), never three.
    assert peak_count == 2, f"{peak_count} compiles at once under a budget for two"
    assert peak_rss <= 2 * COMPILE_BYTES
    _nothing_outlives(two_compiles)


def test_a_binary_over_the_output_cap_is_a_compile_error(executor: Executor) -> None:
    """A 200 MiB binary (a minute's work for a policy) was taken out and cached whole: four of
    them at once would hold 1.6 GiB of the scratch disk (the output and its copy each)."""
    result = executor.run(BIG_BINARY.format(mib=200), [Case(input="", output="")], Limits())
    assert not result.compiled
    assert f"{MAX_BINARY_BYTES >> 20} MiB" in result.compile_error, result.compile_error
    left = [p for p in executor.root.rglob("*") if p.is_file() and p.stat().st_size > 2**20]
    assert [p for p in left if "pch-" not in str(p)] == []


@pytest.fixture(scope="module")
def small_disk() -> Iterator[Service]:
    if os.geteuid() != 0:
        pytest.skip("a tmpfs scratch of the test's own needs root")
    s = Service(concurrency=4, scratch_bytes=256 * 2**20)
    yield s
    s.stop()


def _free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def test_a_full_scratch_disk_is_a_fault_that_harms_no_sibling(
    small_disk: Service, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A binary the disk has no room for: the linker's ENOSPC was scored as the solution's compile
    error (-0.5); it is the sandbox's fault. The honest solutions compiled beside it still score,
    and the disk is as free afterwards as before."""
    monkeypatch.setenv(SANDBOX_TOKEN_ENV, small_disk.token)
    scratch = small_disk.scratch_path()
    filler = scratch / "filler"
    with open(filler, "wb") as f:  # leaves 40 MiB: room for small binaries, not for 48 MiB ones
        f.truncate(0)
        os.posix_fallocate(f.fileno(), 0, _free(scratch) - 40 * 2**20)
    try:
        before = _free(scratch)
        big = [BIG_BINARY.format(mib=48 + k) for k in (0, 1)]
        scores = _batch(small_disk, [*big, a.SUM, a.SLOW_SUM], [a.SUM_TRUTH] * 4)
        assert scores == [cc.FAULT, cc.FAULT, 1.0, 1.0]
        assert "No space left on device" in caplog.text
        assert _free(scratch) >= before - 2**20, "the failed binaries left files behind"
        _nothing_outlives(small_disk)
    finally:
        filler.unlink()


def test_a_compile_that_met_a_full_disk_beside_a_sibling_is_tried_again_alone(
    executor: Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two compiles whose outputs together fill the disk: each failed with ENOSPC, was tried again
    at once beside the other (also trying again), met the same full disk three times and was
    scored a fault (CI, 2026-12-06, under load). Tried again alone, each has the room it needs.
    The disk stands in here (a compile beside another fails as if full), the compiler is real."""
    compile_once = executor._compile_once
    lock = threading.Lock()
    in_flight = [0]
    first_tries = threading.Barrier(2, timeout=10)
    attempts: list[tuple[str, bool]] = []

    def on_a_shared_disk(code: str, key: str, limits: Limits) -> tuple[str | None, str]:
        with lock:
            in_flight[0] += 1
            first = not any(c == code for c, _ in attempts)
        try:
            if first:
                first_tries.wait()  # both outputs on the disk at once
            time.sleep(0.3)
            with lock:  # the first tries met each other at the barrier
                crowded = first or in_flight[0] > 1
                attempts.append((code, crowded))
            if crowded:
                return None, f"/usr/bin/ld: final link failed: {DISK_FULL}"
            return compile_once(code, key, limits)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(executor, "_compile_once", on_a_shared_disk)
    results: dict[str, object] = {}

    def run(code: str) -> None:
        try:
            results[code] = executor.run(code, [Case(input="1 2", output="3")], Limits())
        except BaseException as e:
            results[code] = e

    threads = [threading.Thread(target=run, args=(code,)) for code in (a.SUM, a.SLOW_SUM)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for code in (a.SUM, a.SLOW_SUM):
        result = results[code]
        assert not isinstance(result, BaseException), repr(result)
        assert result.compiled and [r.status for r in result.results] == [Status.passed], result  # type: ignore[union-attr]
    assert sum(1 for _, crowded in attempts if crowded) == 2  # only the first tries met the other


def test_a_compile_that_failed_without_a_word_on_a_full_disk_is_the_disks_fault(
    small_disk: Service,
) -> None:
    """The compile log lives on the scratch disk: a sibling's big binary filling it swallowed an
    honest solution's linker error whole, and the empty log was scored as its compile error."""
    scratch = small_disk.scratch_path()
    assert not _disk_full("", scratch)  # room for any binary: a silent failure is the solution's
    filler = scratch / "filler"
    with open(filler, "wb") as f:
        os.posix_fallocate(f.fileno(), 0, _free(scratch) - 40 * 2**20)
    try:
        assert _disk_full("", scratch)
        assert _disk_full("collect2: error: ld returned 1 exit status", scratch)
        assert not _disk_full("main.cpp:1:1: error: expected ';' before '}' token", scratch)
    finally:
        filler.unlink()


def test_a_compile_waiting_for_memory_gives_up_at_the_runs_deadline(tmp_path: Path) -> None:
    """The compile's wait for the memory budget had no bound: with the budget held, a run with a
    deadline waited for ever (the service's slot and the reward's call with it)."""
    ex = Executor(
        workers=1, root=tmp_path / "rl-sandbox", precompile=False, memory_bytes=LARGEST_BOX_BYTES
    )
    try:
        assert ex.budget.acquire(LARGEST_BOX_BYTES)
        raised: list[BaseException] = []

        def run() -> None:
            try:
                ex.run(
                    a.SUM, [Case(input="1 2", output="3")], Limits(), deadline=time.monotonic() + 1
                )
            except BaseException as e:
                raised.append(e)

        waiting = threading.Thread(target=run)
        started = time.monotonic()
        waiting.start()
        waiting.join(timeout=20)
        gave_up = not waiting.is_alive()
        ex.budget.release(LARGEST_BOX_BYTES)  # frees a run that did not give up
        waiting.join()
        assert gave_up and time.monotonic() - started < 20
        assert len(raised) == 1 and isinstance(raised[0], CompileNotStarted), raised
        assert "memory budget" in str(raised[0])
        # Not cached as the solution's compile error: with memory free it compiles and passes.
        result = ex.run(a.SUM, [Case(input="1 2", output="3")], Limits())
        assert [r.status for r in result.results] == [Status.passed]
    finally:
        ex.close()
