"""The executor with the real g++: limits hold over the whole box, and the box leaves nothing behind."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.rewards import seccomp, uids
from jobs.rewards.sandbox import IDLE_MARGIN_S, Case, Executor, Limits, Status
from jobs.rewards.state_dir import remove_tree
from tests.jobs.rewards.attacks import MANY_FILES
from tests.jobs.rewards.serving import copy_runtime, pool_pids, system_python

pytestmark = pytest.mark.compiler

REPO = Path(__file__).resolve().parents[3]

ECHO_SUM = r"""
#include <cstdio>
int main() { long long a, b; if (scanf("%lld %lld", &a, &b) != 2) return 1; printf("%lld\n", a + b); }
"""


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    ex = Executor(workers=2)
    yield ex
    ex.close()


def one(executor: Executor, code: str, expected: str = "ok", stdin: str = "", **limits: object):
    result = executor.run(code, [Case(input=stdin, output=expected)], Limits(**limits))
    assert result.compiled, result.compile_error
    return result.results[0]


def test_correct_program_passes_and_wrong_output_does_not(executor: Executor) -> None:
    result = executor.run(
        ECHO_SUM,
        [
            Case(input="1 2\n", output="3"),
            Case(input=" 40 2 ", output="  42\n\n"),
            Case(input="2 2", output="5"),
        ],
        Limits(),
    )
    assert [r.status for r in result.results] == [Status.passed, Status.passed, Status.wrong_answer]
    assert result.isolation == "bwrap-root"


def test_compile_error_is_reported_not_run(executor: Executor) -> None:
    result = executor.run("int main( {", [Case(input="", output="")], Limits())
    assert not result.compiled and "error" in result.compile_error and result.results == []


def test_compiler_sees_no_file_outside_its_box(executor: Executor, tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("s3cr3t-token-value")
    result = executor.run(
        f'#include "{secret}"\nint main(){{}}', [Case(input="", output="")], Limits()
    )
    assert not result.compiled
    assert "s3cr3t" not in result.compile_error and "No such file" in result.compile_error


def test_identical_sources_compile_once(executor: Executor) -> None:
    code = ECHO_SUM + "// cache probe\n"
    start = time.monotonic()
    executor.run(code, [Case(input="1 1", output="2")], Limits())
    first = time.monotonic() - start
    start = time.monotonic()
    again = executor.run(code, [Case(input="1 1", output="2")], Limits())
    assert again.passed == 1 and time.monotonic() - start < first


def test_the_precompiled_header_is_used(executor: Executor) -> None:
    assert executor.pch is not None and (executor.pch / "bits" / "stdc++.h.gch").is_file()
    # RL_SANDBOX_PCH is defined only in the .gch: a compile that fell back to the header would print "header".
    code = '#include <bits/stdc++.h>\nint main(){\n#ifdef RL_SANDBOX_PCH\nputs("pch");\n#else\nputs("header");\n#endif\n}'
    assert one(executor, code, expected="pch").status is Status.passed


def test_output_is_compared_as_tokens_like_testlibs_wcmp(executor: Executor) -> None:
    """Only the ends were stripped, so an answer without the expected file's
    per-line trailing spaces scored 0. testlib's wcmp compares whitespace-separated tokens."""
    code = '#include <cstdio>\nint main() { puts("1 2"); puts("3\t4"); }'
    result = executor.run(
        code,
        [
            Case(input="", output="1 2 \n3 4 \n"),
            Case(input="", output="1  2\r\n3 4"),
            Case(input="", output="1 2 3 4"),
            Case(input="", output="1 2\n3 45"),
            Case(input="", output="12\n3 4"),
        ],
        Limits(),
    )
    assert [r.status for r in result.results] == [Status.passed] * 3 + [Status.wrong_answer] * 2


def test_an_infinite_loop_is_a_time_limit_however_the_kernel_ends_it(executor: Executor) -> None:
    """With a whole-second limit RLIMIT_CPU's SIGXCPU could end the loop before
    the box's own count did, and the test was labelled runtime_error."""
    loop = "int main() { volatile unsigned long x = 0; for (;;) x++; }"
    result = executor.run(loop, [Case(input="", output="")] * 4, Limits(time_s=1, wall_margin_s=30))
    assert [r.status for r in result.results] == [Status.time_limit] * 4


def test_infinite_loop_is_a_time_limit_on_cpu_time(executor: Executor) -> None:
    r = one(
        executor,
        "int main() { volatile unsigned long x = 0; for (;;) x++; }",
        time_s=0.5,
        wall_margin_s=1.0,
    )
    assert r.status is Status.time_limit and r.cpu_s >= 0.5


def test_sleeping_program_is_stopped_by_the_wall_backstop(executor: Executor) -> None:
    r = one(
        executor, "#include <unistd.h>\nint main() { sleep(60); }", time_s=0.5, wall_margin_s=0.5
    )
    assert r.status is Status.time_limit and r.wall_s < 5


def test_a_sleeper_is_stopped_as_idle_long_before_the_backstop(executor: Executor) -> None:
    """Sleepers took 4 x time_s + margin each (four turned a 0.8 s batch into
    130 s); an idle box is now stopped at time_s + IDLE_MARGIN_S."""
    r = one(executor, "#include <unistd.h>\nint main() { sleep(60); }", time_s=1, wall_margin_s=30)
    # 34 s at the backstop; a loaded machine adds seconds of box start-up, not tens
    assert r.status is Status.time_limit and r.timed_out and r.wall_s < 1 + IDLE_MARGIN_S + 8


def test_cpu_time_over_the_limit_fails_below_the_whole_second(executor: Executor) -> None:
    code = """#include <ctime>
#include <cstdio>
int main() { volatile unsigned long x = 0; while (clock() < CLOCKS_PER_SEC * 6 / 10) x++; puts("ok"); }"""
    assert one(executor, code, time_s=0.3).status is Status.time_limit


def test_memory_over_the_limit_is_refused(executor: Executor) -> None:
    code = """#include <cstdio>
#include <cstring>
#include <cstdlib>
int main() { size_t n = 512u << 20; char *p = (char *)malloc(n); if (!p) { puts("refused"); return 3; }
             memset(p, 1, n); puts("ok"); }"""
    r = one(executor, code, memory_bytes=128 * 2**20)
    assert r.status is Status.runtime_error and r.exit_code == 3


def test_memory_under_the_limit_is_usable(executor: Executor) -> None:
    code = """#include <cstdio>
#include <vector>
int main() { std::vector<char> v(32u << 20, 1); printf("%s\\n", v[123] == 1 ? "ok" : "bad"); }"""
    assert one(executor, code, memory_bytes=128 * 2**20).status is Status.passed


def test_output_flood_stops_at_the_output_cap(executor: Executor) -> None:
    r = one(
        executor,
        '#include <cstdio>\nint main() { for (;;) fputs("0123456789abcdef", stdout); }',
        output_bytes=1 << 20,
        time_s=2,
    )
    assert r.status is Status.output_limit


def test_one_process_per_box_by_default(executor: Executor) -> None:
    code = """#include <unistd.h>
#include <cstdio>
int main() { pid_t p = fork(); if (p == 0) _exit(0); puts(p < 0 ? "refused" : "forked"); }"""
    assert one(executor, code, expected="refused").status is Status.passed


def test_fork_bomb_is_contained_and_leaves_no_process(executor: Executor) -> None:
    start = time.monotonic()
    r = one(
        executor, "#include <unistd.h>\nint main() { for (;;) fork(); }", time_s=0.5, processes=8
    )
    assert r.status is not Status.passed and time.monotonic() - start < 20
    assert pool_pids() == []


def test_seccomp_filter_is_x86_64_with_a_namespace_check() -> None:
    prog = seccomp.filter_program()
    assert len(prog) % 8 == 0 and len(prog) // 8 == 6 + len(seccomp.DENIED) + 4 + 4 * len(
        seccomp.ARGUMENT_CHECKS
    )
    assert {"unshare", "io_uring_setup", "memfd_create", "ptrace", "mount", "socket"} <= set(
        seccomp.DENIED
    )


def _run_filter(prog: bytes, nr: int, args: tuple[int, ...] = (), arch: int = 0xC000003E) -> int:
    """Evaluates the classic-BPF program on one struct seccomp_data (only the opcodes it uses)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    ops = [struct.unpack("<HBBI", prog[i : i + 8]) for i in range(0, len(prog), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == 0x20:
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == 0x06:
            return k
        else:
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += jt if taken else jf
        pc += 1


def test_the_filter_refuses_every_syscall_newer_than_its_review() -> None:
    """A deny list lets every syscall newer than it through (open_tree_attr passed)."""
    prog = seccomp.filter_program()
    allow, eperm, enosys = seccomp.RET_ALLOW, seccomp.RET_ERRNO | 1, seccomp.RET_ERRNO | 38
    assert _run_filter(prog, 0) == allow and _run_filter(prog, 231) == allow  # read, exit_group
    assert _run_filter(prog, 272) == eperm  # unshare
    assert _run_filter(prog, 56, (0x10000000,)) == eperm and _run_filter(prog, 56, (0x11,)) == allow
    assert _run_filter(prog, 13, (17,)) == eperm and _run_filter(prog, 13, (2,)) == allow
    assert _run_filter(prog, 72, (3, 1031)) == eperm and _run_filter(prog, 72, (3, 1)) == allow
    assert _run_filter(prog, 206) == eperm and _run_filter(prog, 265) == eperm  # io_setup, linkat
    assert _run_filter(prog, seccomp.HIGHEST_REVIEWED) == allow
    for nr in (467, 468, 469, 470, 511, 1000, 0x3FFFFFFF):  # open_tree_attr, file_getattr, ...
        assert _run_filter(prog, nr) == enosys, nr
    assert _run_filter(prog, 0x40000000 | 1) == eperm  # x32
    assert _run_filter(prog, 0, arch=0x40000003) == seccomp.RET_KILL_PROCESS  # i386


def test_open_tree_attr_is_unknown_inside_a_box(executor: Executor) -> None:
    """`open_tree_attr` (467, Linux 6.15) reached the kernel through the deny list."""
    code = """#include <cerrno>
#include <cstdio>
#include <unistd.h>
#include <sys/syscall.h>
int main() { long r = syscall(467, -100, "/", 1, nullptr, 0); printf("%ld %d\\n", r, r < 0 ? errno : 0); }"""
    assert one(executor, code, expected="-1 38").status is Status.passed


def test_host_wide_quotas_and_unsized_kernel_memory_are_refused(executor: Executor) -> None:
    """io_setup took the host's aio quota, hard links added kernel memory the
    tmpfs does not count, pipes grown with F_SETPIPE_SZ held memory past the limit."""
    code = """#include <cstdio>
#include <fcntl.h>
#include <unistd.h>
#include <linux/aio_abi.h>
#include <sys/syscall.h>
int main() { int open_doors = 0; aio_context_t ctx = 0;
  if (syscall(SYS_io_setup, 1, &ctx) == 0) open_doors++;
  FILE *f = fopen("a", "w"); fclose(f); if (link("a", "b") == 0) open_doors++;
  if (linkat(AT_FDCWD, "a", AT_FDCWD, "c", 0) == 0) open_doors++;
  int p[2]; if (pipe(p) == 0 && fcntl(p[0], F_SETPIPE_SZ, 1 << 20) > 65536) open_doors++;
  puts(open_doors ? "open" : "blocked"); }"""
    assert one(executor, code, expected="blocked").status is Status.passed


def test_removal_follows_no_symlink_out_of_a_locked_directory(tmp_path: Path) -> None:
    # A link to / inside a 0500 directory goes; / stays.
    d = tmp_path / "work" / "d"
    d.mkdir(parents=True)
    (d / "root").symlink_to("/")
    d.chmod(0o500)
    assert remove_tree(tmp_path / "work", tmp_path / "q") is True
    assert Path("/usr/bin").is_dir() and not (tmp_path / "work").exists()


def test_a_directory_that_cannot_be_removed_is_quarantined(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    stuck = work / "stuck"
    stuck.touch()
    if subprocess.run(["chattr", "+i", str(stuck)], capture_output=True).returncode != 0:
        pytest.skip("no immutable attribute on this filesystem")
    try:
        assert remove_tree(work, tmp_path / "quarantine") is False
        assert not work.exists() and len(list((tmp_path / "quarantine").iterdir())) == 1
    finally:
        for path in (tmp_path / "quarantine").rglob("stuck"):
            subprocess.run(["chattr", "-i", str(path)], check=True)


def test_limits_reject_out_of_range_values() -> None:
    with pytest.raises(ValueError, match="time_s"):
        Limits(time_s=0)
    with pytest.raises(ValueError, match="memory_bytes"):
        Limits(memory_bytes=8 * 2**30)
    with pytest.raises(ValueError, match="processes"):
        Limits(processes=256)


UNPRIVILEGED_DRIVER = """
import json, sys
from pathlib import Path
from jobs.rewards.sandbox import Case, Executor, Limits, isolation_mode
ex = Executor(workers=2, root=Path(sys.argv[1]))
ok = ex.run('#include <cstdio>\\nint main(){puts("ok");}', [Case(input="", output="ok")], Limits())
fork = ex.run('#include <unistd.h>\\n#include <cstdio>\\nint main(){ pid_t p = fork(); if (p == 0) _exit(0); '
              'puts(p < 0 ? "refused" : "forked"); }', [Case(input="", output="refused")], Limits())
bomb = ex.run('#include <unistd.h>\\nint main(){ for (;;) fork(); }', [Case(input="", output="")],
              Limits(time_s=0.5, processes=4))
fill = ex.run(ROOT_FILL, [Case(input="", output="blocked")], Limits())
files = ex.run(MANY_FILES, [Case(input="", output="bounded")], Limits(time_s=5, wall_margin_s=10))
caps = ex.run(CAPABILITIES, [Case(input="", output="none")], Limits())
ex.close()
print(json.dumps([isolation_mode(), ok.results[0].status.value, fork.results[0].status.value,
                  bomb.results[0].status.value, fill.results[0].status.value,
                  files.results[0].status.value, caps.results[0].status.value]))
"""
# In user-namespace mode the box's `/` and `/dev` were tmpfs the program owned,
# with no size: writable host memory past every limit. Only /box (sized) may take a write.
ROOT_FILL = r"""#include <cstdio>
#include <initializer_list>
int main() { static char buf[1 << 20]; int wrote = 0;
  for (const char *p : {"/x", "/dev/x", "/dev/shm/x", "/etc/x"}) { FILE *f = fopen(p, "w");
    if (f && fwrite(buf, 1, sizeof buf, f) == sizeof buf && fclose(f) == 0) wrote++; }
  FILE *ok = fopen("/box/x", "w"); puts(wrote || !ok ? "wrote" : "blocked"); }"""
# The program holds no capability: in user-namespace mode bwrap grants boxinit two (for /box's
# inode bound) and boxinit drops every one, bounding set included, before the program starts.
CAPABILITIES = r"""#include <cstdio>
#include <cstring>
int main() { FILE *f = fopen("/proc/self/status", "r"); char line[256]; int held = 0, seen = 0;
  while (fgets(line, sizeof line, f)) if (!strncmp(line, "Cap", 3)) { seen++;
    if (!strstr(line, "0000000000000000")) { held = 1; fputs(line, stdout); } }
  puts(seen == 5 && !held ? "none" : "held"); }"""
UNPRIVILEGED_DRIVER = (
    f"ROOT_FILL = {ROOT_FILL!r}\nMANY_FILES = {MANY_FILES!r}\nCAPABILITIES = {CAPABILITIES!r}\n"
    + UNPRIVILEGED_DRIVER
)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another uid needs root")
def test_userns_mode_as_a_user_without_root() -> None:
    # A laptop without sudo: bwrap makes its own user namespace; boxes, filter, accounting and the
    # per-box process cap (counted per user namespace) still hold. The driver runs as a uid leased
    # from this run's own slice (not `nobody`, which anything on the machine may use), so "nothing
    # of it is left" judges only what this test started.
    lease = uids.UidLease()
    try:
        _run_unprivileged(lease.uid)
    finally:
        assert lease.release(), f"processes of uid {lease.uid} outlived the test"


def _run_unprivileged(uid: int) -> None:
    python = system_python()
    if python is None:
        pytest.skip(
            f"no python{sys.version_info.major}.{sys.version_info.minor} that uid {uid} can run"
        )
    top = Path(tempfile.mkdtemp(prefix="rl-sandbox-userns-"))
    try:
        copy_runtime(top / "code")
        run = top / "run"
        run.mkdir()
        os.chown(run, uid, uid)
        os.chmod(top, 0o755)
        done = subprocess.run(
            [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--",
                python,
                "-I",
                "-c",
                f"import sys; sys.path.insert(0, {str(top / 'code')!r}); "
                f"exec({UNPRIVILEGED_DRIVER!r})",
                str(run / "work"),
            ],
            cwd=run,
            env={"PATH": "/usr/bin:/bin", "HOME": str(run), "TMPDIR": str(run)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == [
            "bwrap-userns",
            "passed",
            "passed",
            "time_limit",
            "passed",
            "passed",  # at most box_inodes() files in /box (it was unbounded in this mode)
            "passed",  # no capability left to the program
        ]
        assert uids.live_pids_of_uid(uid) == []
    finally:
        shutil.rmtree(top, ignore_errors=True)
