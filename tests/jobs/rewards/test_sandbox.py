"""The executor with the real g++: limits hold, hostile programs fail their test and leave nothing behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.rewards import sandbox
from jobs.rewards.sandbox import Executor, Limits, Status, Case

PRIVILEGED = sandbox.isolation_mode() == "privileged"
needs_privileged = pytest.mark.skipif(not PRIVILEGED, reason="network/mount namespaces and pool uids need root")

ECHO_SUM = r"""
#include <cstdio>
int main() { long long a, b; if (scanf("%lld %lld", &a, &b) != 2) return 1; printf("%lld\n", a + b); }
"""


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    ex = Executor(workers=2)
    yield ex
    ex.close()


def _pool_pids() -> list[int]:
    return [pid for uid in sandbox.UID_POOL for pid in sandbox.pids_of_uid(uid)] if PRIVILEGED else []


def _one(executor: Executor, code: str, expected: str = "ok", stdin: str = "", **limits: object) -> sandbox.CaseResult:
    result = executor.run(code, [Case(input=stdin, output=expected)], Limits(**limits))
    assert result.compiled, result.compile_error
    return result.results[0]


def test_correct_program_passes_and_wrong_output_does_not(executor: Executor) -> None:
    result = executor.run(ECHO_SUM, [Case(input="1 2\n", output="3"), Case(input=" 40 2 ", output="  42\n\n"),
                                     Case(input="2 2", output="5")], Limits())
    assert [r.status for r in result.results] == [Status.passed, Status.passed, Status.wrong_answer]
    assert result.passed == 2


def test_compile_error_is_reported_not_run(executor: Executor) -> None:
    result = executor.run("int main( {", [Case(input="", output="")], Limits())
    assert not result.compiled and "error" in result.compile_error and result.results == []


def test_compiler_cannot_echo_files_outside_the_sandbox(executor: Executor, tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("s3cr3t-token-value")
    os.chmod(secret, 0o600)
    result = executor.run(f'#include "{secret}"\nint main(){{}}', [Case(input="", output="")], Limits())
    assert not result.compiled
    assert "s3cr3t" not in result.compile_error
    if PRIVILEGED:
        assert "Permission denied" in result.compile_error


def test_infinite_loop_is_a_time_limit_within_limit_plus_margin(executor: Executor) -> None:
    start = time.monotonic()
    r = _one(executor, "int main() { volatile unsigned long x = 0; for (;;) x++; }", time_s=0.5, wall_margin_s=0.3)
    assert r.status is Status.time_limit
    # Killed at 0.5 s + 0.3 s on an idle machine; a loaded one may stretch a starved runnable program.
    assert r.wall_s < sandbox.STARVED_WALL_FACTOR * 0.5 + 0.3 + 0.2
    assert time.monotonic() - start < 5  # compile included


def test_sleeping_program_is_killed_at_the_wall_timeout(executor: Executor) -> None:
    r = _one(executor, "#include <unistd.h>\nint main() { sleep(60); }", time_s=0.5, wall_margin_s=0.3)
    assert r.status is Status.time_limit and r.wall_s < 1.2


def test_cpu_time_over_the_limit_fails_even_under_the_whole_second(executor: Executor) -> None:
    # RLIMIT_CPU counts whole seconds; the measured CPU time judges fractions (0.3 s limit, ~0.6 s used).
    code = """#include <ctime>
#include <cstdio>
int main() { volatile unsigned long x = 0; while (clock() < CLOCKS_PER_SEC * 6 / 10) x++; puts("ok"); }"""
    assert _one(executor, code, time_s=0.3, wall_margin_s=2.0).status is Status.time_limit


def test_memory_over_the_limit_is_contained(executor: Executor) -> None:
    code = """#include <cstdio>
#include <cstring>
#include <cstdlib>
int main() { size_t n = 512u << 20; char *p = (char *)malloc(n); if (!p) { puts("refused"); return 3; }
             memset(p, 1, n); puts("ok"); }"""
    r = _one(executor, code, memory_bytes=128 * 2**20)
    assert r.status is Status.runtime_error and r.exit_code == 3


def test_memory_under_the_limit_is_usable(executor: Executor) -> None:
    code = """#include <cstdio>
#include <vector>
int main() { std::vector<char> v(32u << 20, 1); printf("%s\\n", v[123] == 1 ? "ok" : "bad"); }"""
    assert _one(executor, code, memory_bytes=128 * 2**20).status is Status.passed


def test_output_flood_stops_at_the_output_cap(executor: Executor) -> None:
    r = _one(executor, '#include <cstdio>\nint main() { for (;;) fputs("0123456789abcdef", stdout); }',
             output_bytes=1 << 20, time_s=2)
    assert r.status is Status.output_limit and r.wall_s < 2


def test_environment_is_empty(executor: Executor, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_canary_value")
    code = """#include <cstdio>
#include <cstdlib>
extern char **environ;
int main() { int n = 0; for (char **e = environ; *e; ++e) n++;
             const char *t = getenv("HF_TOKEN"); printf("%d %s\\n", n, t ? t : "none"); }"""
    assert _one(executor, code, expected="0 none").status is Status.passed


@needs_privileged
def test_fork_bomb_is_contained_and_leaves_no_process(executor: Executor) -> None:
    code = """#include <unistd.h>
int main() { for (;;) fork(); }"""
    start = time.monotonic()
    r = _one(executor, code, time_s=0.5, wall_margin_s=0.3, processes=8)
    assert r.status is not Status.passed
    assert time.monotonic() - start < 6
    assert _pool_pids() == []


@needs_privileged
def test_processes_that_leave_the_group_are_reaped(executor: Executor) -> None:
    # setsid() escapes the process-group kill; kill(-1) as the run's own uid still reaches it.
    code = """#include <unistd.h>
#include <cstdio>
int main() { if (fork() == 0) { setsid(); for (;;) pause(); } puts("ok"); }"""
    assert _one(executor, code).status is Status.passed
    assert _pool_pids() == []


@needs_privileged
def test_socket_to_loopback_fails_and_reaches_nothing(executor: Executor) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    code = f"""#include <cstdio>
#include <arpa/inet.h>
#include <sys/socket.h>
int main() {{ int s = socket(AF_INET, SOCK_STREAM, 0); sockaddr_in a{{}}; a.sin_family = AF_INET;
             a.sin_port = htons({port}); inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
             puts(connect(s, (sockaddr *)&a, sizeof a) == 0 ? "connected" : "blocked"); }}"""
    try:
        r = _one(executor, code, expected="connected")
        assert r.status is Status.wrong_answer
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


@needs_privileged
def test_writes_outside_its_directory_fail_and_change_nothing(executor: Executor, tmp_path: Path) -> None:
    targets = [Path("/tmp") / f"sandbox-escape-{uuid.uuid4().hex}", Path("/var/tmp") / f"escape-{uuid.uuid4().hex}",
               Path("/dev/shm") / f"escape-{uuid.uuid4().hex}", tmp_path / "escape", Path("../escape")]
    opens = " + ".join(f'(fopen("{t}", "w") != nullptr)' for t in targets)
    code = f"""#include <cstdio>
int main() {{ int opened = {opens}; FILE *own = fopen("mine.txt", "w");
             printf("%d %s\\n", opened, own ? "own-dir-writable" : "own-dir-readonly"); }}"""
    r = _one(executor, code, expected="0 own-dir-writable")
    assert r.status is Status.passed
    assert not any(t.exists() for t in targets[:4])


def test_private_directory_is_removed(executor: Executor) -> None:
    before = set(executor.root.iterdir())
    _one(executor, ECHO_SUM, expected="3", stdin="1 2")
    assert set(executor.root.iterdir()) == before


def test_tests_run_in_parallel(executor: Executor) -> None:
    code = '#include <unistd.h>\n#include <cstdio>\nint main() { usleep(400000); puts("ok"); }'

    def timed(n: int) -> float:
        start = time.monotonic()
        result = executor.run(code, [Case(input="", output="ok")] * n, Limits())
        assert [r.status for r in result.results] == [Status.passed] * n
        return time.monotonic() - start

    # Same compile in both; 4 sleeps of 0.4 s on 2 workers add ~0.4 s over 1, one at a time would add 1.2 s.
    assert timed(4) - timed(1) < 0.9


def test_limits_reject_out_of_range_values() -> None:
    with pytest.raises(ValueError, match="time_s"):
        Limits(time_s=0)
    with pytest.raises(ValueError, match="memory_bytes"):
        Limits(memory_bytes=10)


UNPRIVILEGED_DRIVER = """
import json, sys
from pathlib import Path
from jobs.rewards.sandbox import Case, Executor, Limits, isolation_mode
ex = Executor(workers=2, root=Path(sys.argv[1]))
ok = ex.run('#include <cstdio>\\nint main(){puts("ok");}', [Case(input="", output="ok")], Limits())
bomb = ex.run('#include <unistd.h>\\nint main(){ for (;;) fork(); }', [Case(input="", output="")],
              Limits(time_s=0.5, wall_margin_s=0.3))
ex.close()
print(json.dumps([isolation_mode(), ok.results[0].status.value, bomb.results[0].status.value]))
"""


@needs_privileged
def test_unprivileged_mode_as_the_cluster_runs_it(tmp_path: Path) -> None:
    # The cluster's service runs as uid 65532 inside gVisor: no namespaces, no pool uids. Here we
    # drop to `nobody` to check that mode still compiles, judges, and stops a fork bomb.
    root = Path(tempfile.mkdtemp(prefix="rl-sandbox-unpriv-"))
    os.chown(root, 65534, 65534)
    repo = Path(__file__).resolve().parents[3]
    try:
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                               sys.executable, "-c", UNPRIVILEGED_DRIVER, str(root / "work")],
                              cwd=repo, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo)},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == ["unprivileged", "passed", "time_limit"]
        left = [p for p in os.listdir("/proc") if p.isdigit() and _exe_under(p, root)]
        assert left == []
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _exe_under(pid: str, root: Path) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/exe").startswith(str(root))
    except OSError:
        return False
