"""Compiles and runs untrusted C++ against tests, every compile and every test in its own box.

The box (jobs/rewards/box.py) is bubblewrap namespaces + a pool uid + rlimits + a seccomp filter
+ a reaping, CPU-accounting init; this module decides what goes in each box and judges the result:

- compile: the source is bound read-only, the compiler writes only to a fresh directory owned by
  the box's uid; the binary is then copied out by us (root-owned, 0755) so no later box can
  change it. `#include <bits/stdc++.h>` hits a header precompiled once per executor root
  (`bits/stdc++.h.gch`, same flags), which cuts a typical compile by 4-6x; identical sources
  within the executor's lifetime (a GRPO batch has many) are compiled once (compile_cache.py,
  bounded in bytes; a binary is never removed while a run still uses it).
- each test: the binary bound read-only at /prog, stdin and stdout as file descriptors opened
  by us, a tmpfs of `disk_bytes` as its only writable place, `processes` processes at most (1 by
  default, as isolate does without cgroups), `memory_bytes / processes` of address space each, so
  the box as a whole stays within `memory_bytes` (memfds and System V memory are refused by the
  filter, the tmpfs is capped on its own).
- the verdict uses the CPU time of every process of the box; the wall clock is a backstop only
  (4 x time_s + wall_margin_s); a program that sleeps or blocks is stopped sooner, at time_s + 1 s
  with under a tenth of its wall time on a CPU (idleness, as judges call it). A program stopped for its time
  is `time_limit` however it was stopped (the box's count, RLIMIT_CPU's SIGXCPU, the backstop).
- output is judged by the test's checker (jobs/rewards/judge.py): testlib's `wcmp` (equal
  whitespace-separated tokens) or, for real numbers, `rcmp6`'s error of 1e-6.
- the executor's state directory ($TMPDIR/rl-sandbox-<euid>) must be its own: owned by its euid
  and writable by no one else, else the executor refuses to start (box.private_dir). Folders of
  executors that died are removed when the next one starts (each live executor holds an flock).
- a box that leaves anything behind (a process of its uid that does not die, a directory that
  cannot be removed) is quarantined and its test scored as `sandbox_error`, never retried.
- a test whose program the box could not start (boxinit's fork, limits, uid switch or execve
  failed) is `start_error` with the reason in `error`, never the program's exit code; a compiler
  that could not start raises BoxStartError. Both are the sandbox's fault: the reward scores them
  as a fault with the reason logged (code_contests.py), not as the solution's failure.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import Enum
from pathlib import Path
from typing import TypedDict

from pydantic import BaseModel, ConfigDict, Field

from jobs.rewards import box, uids
from jobs.rewards.budget import MemoryBudget
from jobs.rewards.compile_cache import (
    COMPILER,
    DISK_FULL,
    MAX_BINARY_BYTES,
    CompileCache,
    build_pch,
    compile_error,
    disk_free,
    take_binary,
)
from jobs.rewards.compile_gate import CompileGate
from jobs.rewards.judge import Checker, accepts
from jobs.rewards.state_dir import (
    claim_executor_dir,
    default_root,
    remove_dead_executors,
    remove_tree,
)

BOX_PCH_DIR = "/pch"
BOX_PROGRAM = "/prog"
COMPILE_PROCESSES = 32  # g++ -> cc1plus, as, collect2, ld
# What one compile may hold (unbounded, `#include "/dev/zero"` reached 1 GiB, a macro bomb
# 1.7 GiB). RLIMIT_AS is per process and `g++ -pipe` runs three at once (the driver, cc1plus and
# as; collect2 and ld come after them), so each gets a third: a compile holds at most this in
# all. A typical solution's cc1plus with the precompiled header needs under 300 MiB, a 60 KiB
# lookup table under 400 MiB (measured with `ulimit -v`).
COMPILE_MEMORY = 1536 * 2**20
COMPILE_TOOLS_AT_ONCE = 3
COMPILE_DISK = 256 * 2**20
# Compiles tried again, alone (compile_gate.py), after the scratch disk had no room for a binary:
# a moment's fullness (other compiles' outputs) costs an honest solution nothing; a lasting one is
# a fault.
DISK_RETRIES = 2
# Codeforces refuses sources over 64 KiB ("The source code size must not exceed 64 KB",
# its submission form); both paths (in-process and the service) score a longer one the same way.
MAX_CODE_BYTES = 64 * 1024
# The wall clock only stops programs that sleep or block (the verdict is CPU time, counted over the
# whole box): generous, so a loaded machine never turns a correct program into a time limit.
WALL_FACTOR = 4
# A test box that has spent under a tenth of its wall time on a CPU past time_s + this is asleep
# or blocked and is stopped as a time limit (boxinit's idle rule; without it four sleepers
# took a 0.8 s batch to 130 s at the 4 x time_s + margin backstop).
IDLE_MARGIN_S = 1.0


# What the executor's memory budget counts per box (jobs/rewards/budget.py): address space and
# tmpfs, both held in memory.
COMPILE_BYTES = COMPILE_MEMORY + COMPILE_DISK


class Limits(BaseModel):
    """Per-problem limits; every test of a solution runs under the same ones. The bounds are the
    service's caps too: a caller cannot ask for more than these."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    time_s: float = Field(
        2.0, gt=0, le=20, description="CPU seconds per test, all processes of the box together"
    )
    memory_bytes: int = Field(
        256 * 2**20, ge=16 * 2**20, le=2 * 2**30, description="address space per box"
    )
    wall_margin_s: float = Field(2.0, ge=0, le=30, description="wall backstop is 4 x time_s + this")
    compile_time_s: float = Field(30.0, gt=0, le=60, description="CPU seconds for the compiler")
    output_bytes: int = Field(16 * 2**20, ge=1024, le=64 * 2**20, description="stdout cap per test")
    processes: int = Field(1, ge=1, le=16, description="processes (and threads) per box")
    open_files: int = Field(32, ge=8, le=256)
    disk_bytes: int = Field(
        16 * 2**20, ge=2**20, le=256 * 2**20, description="the box's writable tmpfs"
    )


def clamp_limits(time_s: float, memory_bytes: int) -> tuple[float, int]:
    """A problem's time and memory limits brought inside what `Limits` allows:
    data outside the sandbox's bounds is judged at the nearest bound, never refused."""
    time_field, memory_field = Limits.model_fields["time_s"], Limits.model_fields["memory_bytes"]
    time_max = _bound(time_field, "le")
    memory_min, memory_max = _bound(memory_field, "ge"), _bound(memory_field, "le")
    if not time_s > 0 or time_s != time_s:
        time_s = Limits.model_fields["time_s"].default
    return min(float(time_s), time_max), int(min(max(memory_bytes, memory_min), memory_max))


def _bound(field: object, name: str) -> float:
    for item in getattr(field, "metadata", ()):
        if hasattr(item, name):
            bound: float = getattr(item, name)
            return bound
    raise LookupError(f"Limits has no {name} bound")


# The most one box may hold: the executor's budget must fit it, or that box could never start.
LARGEST_BOX_BYTES = int(
    max(
        COMPILE_BYTES,
        _bound(Limits.model_fields["memory_bytes"], "le")
        + _bound(Limits.model_fields["disk_bytes"], "le"),
    )
)


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    input: str
    output: str
    checker: Checker = Checker.tokens  # how the output is compared (jobs/rewards/judge.py)


class Status(str, Enum):
    passed = "passed"
    wrong_answer = "wrong_answer"
    time_limit = "time_limit"
    runtime_error = "runtime_error"
    output_limit = "output_limit"
    sandbox_error = (
        "sandbox_error"  # the box could not be cleaned: quarantined, scored as a failure
    )
    not_run = "not_run"  # not started before the run's deadline (Executor.run), scored as a failure
    # The box could not start the program (CaseResult.error says why): the sandbox's fault.
    start_error = "start_error"


class CaseResult(BaseModel):
    status: Status
    wall_s: float
    cpu_s: float = 0.0  # every process of the box
    exit_code: int | None = None
    timed_out: bool = False  # stopped by the wall backstop rather than by its CPU time
    error: str = ""  # why the box could not start the program (status start_error)


class RunResult(BaseModel):
    compiled: bool
    compile_error: str = ""
    results: list[CaseResult] = []
    isolation: str

    @property
    def passed(self) -> int:
        return sum(r.status is Status.passed for r in self.results)


class BoxStartError(RuntimeError):
    """A box could not start its program (the compiler, or the empty probe): the sandbox's fault."""


class CompileNotStarted(RuntimeError):
    """The compile could not start before its run's deadline (the executor's memory budget was
    held by other boxes) or its client went away: the sandbox's fault, never cached."""


def isolation_mode() -> str:
    """'bwrap-root' (pool uids, per-box process caps) when root, else 'bwrap-userns'."""
    return "bwrap-root" if box.privileged() else "bwrap-userns"


class Executor:
    """Compiles one solution (or reuses its binary) and runs its tests, `workers` boxes at a time."""

    def __init__(
        self,
        workers: int | None = None,
        root: Path | None = None,
        precompile: bool = True,
        memory_bytes: int | None = None,
    ) -> None:
        """`memory_bytes`: what all of the executor's boxes may hold together (the service passes
        its pod's memory less its own share, jobs/rewards/budget.py); None: no total."""
        if memory_bytes is not None and memory_bytes < LARGEST_BOX_BYTES:
            raise ValueError(
                f"executor memory budget {memory_bytes} bytes: below {LARGEST_BOX_BYTES} bytes, "
                "what the largest box (a test at the highest memory and disk limits) may hold"
            )
        self.budget = MemoryBudget(memory_bytes)
        self.workers = workers or os.cpu_count() or 1
        self.root = root or default_root()
        self.root.parent.mkdir(parents=True, exist_ok=True)
        uids.private_dir(self.root)
        self.privileged = box.privileged()
        self.isolation = isolation_mode()
        self.quarantine = self.root / "quarantine"
        self.removed_dead = remove_dead_executors(self.root, self.quarantine)
        self.init = box.build_init(self.root)
        self.pch = build_pch(self.root) if precompile else None
        self._dir, self._lock_fd = claim_executor_dir(self.root)
        self._cache = CompileCache(self._dir / "bin")
        self._gate = CompileGate()
        (self._dir / "bin").mkdir(mode=0o700)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="sandbox")
        self._probe()

    def _probe(self) -> None:
        """One empty box at start, so a machine that cannot build boxes fails loudly here, not as scores."""
        with tempfile.TemporaryFile() as err, uids.Leased(self.privileged) as lease:
            ex = box.run_box(
                box.BoxSpec(
                    argv=["/usr/bin/true"],
                    cpu_s=5,
                    wall_s=30,
                    memory_bytes=256 * 2**20,
                    processes=4,
                    open_files=32,
                    file_bytes=2**20,
                    disk_bytes=2**20,
                ),
                subprocess.DEVNULL,
                subprocess.DEVNULL,
                err.fileno(),
                lease.uid,
                self.init,
            )
            if ex.start_error:
                raise BoxStartError(
                    f"sandbox: a box cannot start a program ({self.isolation}): {ex.start_error}"
                )
            if ex.code != 0:
                err.seek(0)
                raise RuntimeError(
                    f"sandbox: cannot build a box ({self.isolation}, exit {ex.code}): "
                    f"{err.read(2000).decode(errors='replace')}"
                )

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        remove_tree(self._dir, self.quarantine)
        os.close(self._lock_fd)

    def run(
        self,
        code: str,
        tests: Sequence[Case],
        limits: Limits,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
    ) -> RunResult:
        """Compiles (or reuses) `code` and runs every test. Tests not started by `deadline`
        (time.monotonic()) or once `cancel` is set (the service's client went away) are `not_run`:
        a started box still ends at its own backstop."""
        if len(code.encode(errors="surrogatepass")) > MAX_CODE_BYTES:
            return RunResult(
                compiled=False,
                compile_error=f"source of {len(code.encode(errors='surrogatepass'))} bytes is "
                f"over the {MAX_CODE_BYTES}-byte limit",
                isolation=self.isolation,
            )
        key = hashlib.sha256(
            f"{' '.join(COMPILER)}\0{limits.compile_time_s}\0{code}".encode(errors="surrogatepass")
        ).hexdigest()
        give_up = _give_up(deadline, cancel)
        binary, error = self._cache.acquire(key, lambda: self._compile(code, key, limits, give_up))
        try:
            if binary is None:
                return RunResult(compiled=False, compile_error=error, isolation=self.isolation)
            futures = [
                self._pool.submit(self._tests, binary, chunk, limits, give_up)
                for chunk in chunks(list(tests), self.workers)
            ]
            return RunResult(
                compiled=True,
                results=[r for f in futures for r in f.result()],
                isolation=self.isolation,
            )
        finally:
            self._cache.release(key)

    def _compile(
        self, code: str, key: str, limits: Limits, give_up: Callable[[], bool]
    ) -> tuple[str | None, str]:
        """The binary of `code`, or its compile error. Waits for the memory budget until
        `give_up()` (then CompileNotStarted). A compile the scratch disk had no room for (the
        linker's or the copy's ENOSPC) is tried again alone, DISK_RETRIES times: other compiles'
        outputs may have filled the disk for a moment; still without room (or the run's deadline
        passed while it waited to be alone), it raises OSError ENOSPC, the sandbox's fault, never
        the solution's."""
        if not self.budget.acquire(COMPILE_BYTES, give_up):
            raise CompileNotStarted(
                "the compile did not start before its run's deadline: the executor's memory "
                f"budget ({self.budget.total} bytes) was held by other boxes"
            )
        try:
            with self._gate.shared():
                binary, error = self._compile_once(code, key, limits)
            for _ in range(DISK_RETRIES):
                if DISK_FULL not in error:
                    break
                with self._gate.exclusive(give_up) as alone:
                    if not alone:
                        break
                    binary, error = self._compile_once(code, key, limits)
            if DISK_FULL not in error:
                return binary, error
        finally:
            self.budget.release(COMPILE_BYTES)
        raise OSError(
            errno.ENOSPC,
            f"{DISK_FULL}: the scratch disk of {self._dir} has {disk_free(self._dir)} bytes free "
            f"after {DISK_RETRIES + 1} compiles of a binary of up to {MAX_BINARY_BYTES} bytes",
        )

    def _compile_once(self, code: str, key: str, limits: Limits) -> tuple[str | None, str]:
        work = Path(tempfile.mkdtemp(prefix="cc-", dir=self._dir))
        try:
            src, out = work / "main.cpp", work / "out"
            src.write_bytes(code.encode(errors="surrogatepass"))
            os.chmod(src, 0o644)
            out.mkdir()
            binds = [(str(src), "/src/main.cpp")]
            if self.pch is not None:
                binds.append((str(self.pch), BOX_PCH_DIR))
            flags = [f"-I{BOX_PCH_DIR}"] if self.pch is not None else []
            spec = box.BoxSpec(
                argv=[
                    shutil.which(COMPILER[0], path="/usr/bin:/bin") or COMPILER[0],
                    *COMPILER[1:],
                    *flags,
                    "-o",
                    "/out/prog",
                    "/src/main.cpp",
                ],
                cpu_s=limits.compile_time_s,
                wall_s=2 * limits.compile_time_s + 5,
                memory_bytes=COMPILE_MEMORY // COMPILE_TOOLS_AT_ONCE,
                processes=COMPILE_PROCESSES,
                open_files=256,
                # Every file the compiler writes (the object on its tmpfs, the binary on the
                # scratch disk) stops at the cap: the kernel's SIGXFSZ (setrlimit(2), RLIMIT_FSIZE).
                file_bytes=MAX_BINARY_BYTES,
                disk_bytes=COMPILE_DISK,
                ro_binds=binds,
                rw_binds=[(str(out), "/out")],
                env={"PATH": "/usr/bin:/bin", "TMPDIR": box.BOX_DIR},
            )
            with open(work / "compile.log", "wb") as log, uids.Leased(self.privileged) as lease:
                if lease.uid is not None:
                    os.chown(out, lease.uid, lease.uid)
                os.chmod(out, 0o700)
                ex = box.run_box(
                    spec, subprocess.DEVNULL, log.fileno(), log.fileno(), lease.uid, self.init
                )
            if not lease.clean:
                return None, "the compiler's box could not be cleaned up (quarantined)"
            if ex.start_error:
                # Raised, not a compile error: the source was never compiled (nor cached).
                raise BoxStartError(
                    f"sandbox: the compiler could not be started in its box: {ex.start_error}"
                )
            if ex.timed_out or ex.cpu_s > limits.compile_time_s:
                return None, f"compilation exceeded {limits.compile_time_s:g}s"
            with open(work / "compile.log", "rb") as f:
                log_text = f.read(2000).decode(errors="replace")
            if ex.code != 0:
                if _disk_full(log_text, self._dir):
                    return None, DISK_FULL
                return None, compile_error(log_text, ex.code)
            return take_binary(out / "prog", self._dir / "bin" / key)
        finally:
            remove_tree(work, self.quarantine)

    def _tests(
        self, binary: str, cases: Sequence[Case], limits: Limits, give_up: Callable[[], bool]
    ) -> list[CaseResult]:
        """`cases` one after another in one box, each a fresh process under `limits`; those not
        started before `give_up()` (the run's deadline or its client gone) are `not_run`."""
        not_run = [CaseResult(status=Status.not_run, wall_s=0.0) for _ in cases]
        if give_up():
            return not_run
        need = limits.memory_bytes + limits.disk_bytes
        if not self.budget.acquire(need, give_up):
            return not_run
        try:
            # A box writes its inputs to the scratch disk too: a disk-full retry runs without it.
            with self._gate.shared():
                return self._tests_in_box(binary, cases, limits, give_up)
        finally:
            self.budget.release(need)

    def _tests_in_box(
        self, binary: str, cases: Sequence[Case], limits: Limits, give_up: Callable[[], bool]
    ) -> list[CaseResult]:
        work = Path(tempfile.mkdtemp(prefix="t-", dir=self._dir))
        try:
            for i, case in enumerate(cases):
                (work / f"in.{i}").write_bytes(case.input.encode(errors="surrogatepass"))
            test_wall_s = WALL_FACTOR * limits.time_s + limits.wall_margin_s
            spec = box.BoxSpec(
                argv=[BOX_PROGRAM],
                cpu_s=limits.time_s,
                # boxinit stops each test at test_wall_s; this backstop only acts if it cannot.
                wall_s=len(cases) * (test_wall_s + 1.0) + 5.0,
                memory_bytes=limits.memory_bytes // limits.processes,
                processes=limits.processes,
                open_files=limits.open_files,
                file_bytes=limits.output_bytes + 1,
                disk_bytes=limits.disk_bytes,
                idle_s=limits.time_s + IDLE_MARGIN_S,
                ro_binds=[(binary, BOX_PROGRAM)],
                env={},
            )
            with uids.Leased(self.privileged) as lease:
                ended = box.run_tests(
                    spec, len(cases), work, test_wall_s, lease.uid, self.init, give_up
                )
            if not lease.clean:
                return [
                    CaseResult(status=Status.sandbox_error, wall_s=round(ex.wall_s, 4))
                    for ex in ended
                ] + [CaseResult(status=Status.sandbox_error, wall_s=0.0)] * (
                    len(cases) - len(ended)
                )
            results = [
                _judge(ex, work / f"out.{i}", cases[i], limits) for i, ex in enumerate(ended)
            ]
            return results + [
                CaseResult(status=Status.not_run, wall_s=0.0) for _ in cases[len(ended) :]
            ]
        finally:
            remove_tree(work, self.quarantine)


def _disk_full(log: str, scratch: Path) -> bool:
    """A failed compile the scratch disk may have caused: the C library's ENOSPC text, or, while
    the disk has less room than a binary may take, a link that failed (GNU ld through g++ -pipe
    reports only "ld returned 1 exit status" here) or a failure that left no log at all. The
    compile log is on the same disk: a sibling's binary filling it can swallow the compiler's
    reason too (seen in CI, 2026-12-06: an honest solution scored as a compile error), and a
    compiler that fails always says why when it can write."""
    if DISK_FULL in log:
        return True
    failed_silently = not log.strip()
    return ("ld returned" in log or failed_silently) and disk_free(scratch) < MAX_BINARY_BYTES


def _give_up(deadline: float | None, cancel: threading.Event | None) -> Callable[[], bool]:
    """True once the run's `deadline` (time.monotonic()) has passed or its client went away."""
    return lambda: (
        (deadline is not None and time.monotonic() >= deadline)
        or (cancel is not None and cancel.is_set())
    )


# A box costs about as much as this many short tests (bench/reward_throughput.py: ~15 ms to set
# up and clean, ~2 ms a test): a solution's tests are split across workers only in runs this
# long, so a batch of many solutions (GRPO's) pays one box per solution.
MIN_TESTS_PER_BOX = 8
# boxinit reports each test in a line (at most box.REPORT_LINE_BYTES) to a pipe the executor reads
# once the box has ended: more lines than the pipe holds (64 KiB, pipe(7)) would block boxinit
# until the backstop.
MAX_TESTS_PER_BOX = 256


def chunks(cases: list[Case], workers: int, per_box: int = MIN_TESTS_PER_BOX) -> list[list[Case]]:
    """`cases` in contiguous runs of near-equal length, in order, one box each: at most
    `workers` runs, none shorter than `per_box` unless there is only one, none longer than
    MAX_TESTS_PER_BOX (the tests of one solution need limits between them, not walls)."""
    n = min(max(1, workers), -(-len(cases) // max(1, per_box)))
    n = max(n, -(-len(cases) // MAX_TESTS_PER_BOX))
    if n == 0:
        return []
    size, extra = divmod(len(cases), n)
    out, at = [], 0
    for k in range(n):
        step = size + (1 if k < extra else 0)
        out.append(cases[at : at + step])
        at += step
    return out


class _Measured(TypedDict):
    """What every verdict reports of the box it ran in."""

    wall_s: float
    cpu_s: float
    exit_code: int | None
    timed_out: bool


def _judge(
    ex: box.BoxExit | box.TestExit, out_path: Path, test: Case, limits: Limits
) -> CaseResult:
    common: _Measured = {
        "wall_s": round(ex.wall_s, 4),
        "cpu_s": round(ex.cpu_s, 4),
        "exit_code": ex.code,
        "timed_out": ex.timed_out,
    }
    if ex.start_error:  # the program never ran: boxinit's 126/127 is not its exit code
        return CaseResult(
            status=Status.start_error,
            error=f"the box could not start the program: {ex.start_error}",
            **common,
        )
    # However the box was stopped for time: the backstop, its own CPU count (cpu_s past the limit)
    # or the kernel's RLIMIT_CPU signal, whichever came first: an infinite loop is a time limit,
    # never a runtime error.
    if ex.timed_out or ex.cpu_s > limits.time_s or ex.code == -signal.SIGXCPU:
        return CaseResult(status=Status.time_limit, **common)
    if out_path.stat().st_size > limits.output_bytes or ex.code == -signal.SIGXFSZ:
        return CaseResult(status=Status.output_limit, **common)
    if ex.code != 0:
        return CaseResult(status=Status.runtime_error, **common)
    with open(out_path, "rb") as f:
        got = f.read(limits.output_bytes)
    ok = accepts(test.checker, test.output.encode(errors="surrogatepass"), got)
    return CaseResult(status=Status.passed if ok else Status.wrong_answer, **common)
