"""The attacks on the sandbox (attacks.py), as real g++ programs, through `compute_score` in-process
and through the HTTP service started as the image starts it: each asserts the outcome (siblings
keep 1.0, nothing secret is printed, nothing outlives its box, the service keeps answering)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from components.k8s.sandbox import service_command
from jobs.rewards import SANDBOX_TOKEN_ENV, uids
from jobs.rewards import code_contests as cc
from jobs.rewards.batch import compute_score_batch
from jobs.rewards.sandbox import Case, Executor, Limits, RunResult, Status
from tests.jobs.rewards import attacks as a
from tests.jobs.rewards.serving import REPO, SOCKET_TIMEOUT_S, Service, pool_pids

pytestmark = pytest.mark.compiler


@pytest.fixture(scope="module")
def service() -> Iterator[Service]:
    s = Service()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def userns_service() -> Iterator[Service]:
    """The service run by a user without root (a uid of this run's slice): every box in bwrap's
    user-namespace mode, where the program, boxinit and the service share one uid."""
    if os.geteuid() != 0:
        pytest.skip("switching to another uid needs root")
    lease = uids.UidLease()
    s = Service(uid=lease.uid)
    try:
        yield s
    finally:
        s.stop()
        assert lease.release(), f"processes of uid {lease.uid} outlived the service"


@dataclass(frozen=True)
class Via:
    """compute_score's keywords for one path, and the service behind it (None: in-process)."""

    kwargs: dict[str, str]
    service: Service | None

    def box_pids(self) -> list[int]:
        return pool_pids() if self.service is None else self.service.box_pids()


# Every attack runs three ways: the in-process executor and the service as root (pool uids), and
# the service as a user without root (user-namespace mode).
@pytest.fixture(params=["local", "service", "userns"])
def via(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Via:
    monkeypatch.delenv(cc.SANDBOX_URL_ENV, raising=False)
    if request.param == "local":
        return Via({}, None)
    service = request.getfixturevalue("service" if request.param == "service" else "userns_service")
    monkeypatch.setenv(SANDBOX_TOKEN_ENV, service.token)
    return Via({"sandbox_url": service.url}, service)


def batch(codes: list[str], truths: list[str], **kwargs: str) -> list[float]:
    return compute_score_batch(
        ["code_contests"] * len(codes),
        [a.answer(c) for c in codes],
        truths,
        None,
        concurrency=len(codes),
        **kwargs,
    )


def test_kill_everyone_leaves_the_siblings_at_one(via: Via) -> None:
    scores = batch([a.KILL_EVERYONE, a.SLOW_SUM, a.SLOW_SUM], [a.SUM_TRUTH] * 3, **via.kwargs)
    assert scores[1:] == [1.0, 1.0]


def test_siblings_binaries_cannot_be_written_read_or_run(via: Via) -> None:
    scores = batch(
        [a.TAMPER, a.SLOW_SUM, a.SLOW_SUM],
        [a.BLOCKED_TRUTH, a.SUM_TRUTH, a.SUM_TRUTH],
        **via.kwargs,
    )
    assert scores == [1.0, 1.0, 1.0]


def test_a_setsid_daemon_dies_with_its_box(via: Via) -> None:
    assert (
        cc.compute_score("code_contests", a.answer(a.DAEMON), a.SUM_TRUTH, None, **via.kwargs)
        == 1.0
    )
    deadline = time.monotonic() + 5
    while via.box_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    left = via.box_pids()
    assert left == [], [Path(f"/proc/{pid}/status").read_text()[:300] for pid in left]
    assert (
        cc.compute_score("code_contests", a.answer(a.SLOW_SUM), a.SUM_TRUTH, None, **via.kwargs)
        == 1.0
    )


def test_signalling_init_and_parent_changes_nothing(via: Via, service: Service) -> None:
    assert (
        cc.compute_score("code_contests", a.answer(a.KILL_INIT), a.SUM_TRUTH, None, **via.kwargs)
        == 1.0
    )
    served = via.service or service
    assert served.proc.poll() is None and served.healthy_within(3)


def test_no_secret_environment_process_or_host_file_is_visible(
    via: Via, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"RLSECRET-{secrets.token_hex(8)}"
    monkeypatch.setenv("HF_TOKEN", marker)
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        assert (
            cc.compute_score(
                "code_contests", a.answer(a.SNOOP), a.BLOCKED_TRUTH, None, **via.kwargs
            )
            == 1.0
        )
    finally:
        host.kill()
        host.wait()


def test_expected_outputs_cannot_be_read_from_any_process(via: Via) -> None:
    # The answers are random hex: only reading them from the judge (its memory, its request) could pass.
    answers = [secrets.token_hex(16) for _ in range(2)]
    truth = a.truth(["", ""], answers)
    assert cc.compute_score("code_contests", a.answer(a.SNOOP), truth, None, **via.kwargs) == 0.0


def test_a_symlink_to_root_in_a_locked_directory_breaks_nothing(via: Via, service: Service) -> None:
    start = time.monotonic()
    scores = batch([a.SYMLINK_TRAP, a.SLOW_SUM], [a.SUM_TRUTH] * 2, **via.kwargs)
    assert scores == [1.0, 1.0] and time.monotonic() - start < 60
    assert Path("/usr/bin").is_dir() and (via.service or service).healthy_within(3)


def test_disk_flood_stops_at_the_box_quota(via: Via) -> None:
    assert (
        cc.compute_score(
            "code_contests", a.answer(a.DISK_FLOOD), a.BLOCKED_TRUTH, None, **via.kwargs
        )
        == 1.0
    )


def test_unix_sockets_user_namespaces_and_io_uring_are_refused(via: Via, tmp_path: Path) -> None:
    path = f"/tmp/rl-attack-{secrets.token_hex(4)}.sock"
    listeners = []
    for address in (path, "\0" + path):
        s = socket.socket(socket.AF_UNIX)
        s.bind(address)
        s.listen()
        s.settimeout(0.2)
        listeners.append(s)
    os.chmod(path, 0o666)
    try:
        truth = a.truth([path], ["blocked"])
        assert (
            cc.compute_score("code_contests", a.answer(a.ESCAPES), truth, None, **via.kwargs) == 1.0
        )
        for s in listeners:
            with pytest.raises(TimeoutError):
                s.accept()
    finally:
        for s in listeners:
            s.close()
        os.unlink(path)


def test_no_process_of_the_box_can_be_written_through_proc_mem(via: Via) -> None:
    """In user-namespace mode the box's pid 1 (bwrap's init) ran as the program's
    uid, dumpable and outside the filter: code written at its next instruction ran unbounded."""
    verdict = cc.judge_solution(a.answer(a.TAKE_OVER), a.BLOCKED_TRUTH, **via.kwargs)
    assert verdict.score == 1.0, verdict.reason


def test_stopping_every_process_of_the_box_holds_nothing(via: Via) -> None:
    """SIGSTOP on boxinit (same uid in user-namespace mode) held the box to its
    backstop: 5 tests at 1 s took 40 s, every one `not_run`."""
    five = a.truth([f"{i} {i}" for i in range(5)], [str(2 * i) for i in range(5)], time_limit=1.0)
    start = time.monotonic()
    verdict = cc.judge_solution(a.answer(a.STOP_EVERYONE), five, **via.kwargs)
    assert verdict.score == 1.0, verdict.reason
    assert time.monotonic() - start < 20


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    ex = Executor(workers=2)
    yield ex
    ex.close()


Run = Callable[[str, list[Case], Limits], RunResult]


@pytest.fixture(params=["root", "userns"])
def run(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Run:
    """A run with chosen limits: the in-process executor as root, or the service without root."""
    if request.param == "root":
        executor: Executor = request.getfixturevalue("executor")
        return executor.run
    service: Service = request.getfixturevalue("userns_service")
    monkeypatch.setenv(SANDBOX_TOKEN_ENV, service.token)
    return lambda code, cases, limits: cc.run_remote(service.url, code, cases, limits, budget_s=120)


def test_cpu_time_of_forked_children_counts(run: Run) -> None:
    # A wide wall margin, so the box's own CPU accounting (not the wall backstop) ends it even on a loaded machine.
    r = run(
        a.FORKED_CPU, [Case(input="", output="ok")], Limits(time_s=1, processes=4, wall_margin_s=30)
    ).results[0]
    assert r.status is Status.time_limit and r.cpu_s > 1 and not r.timed_out


def test_cpu_time_of_children_the_kernel_reaps_counts(run: Run) -> None:
    """With SIGCHLD ignored, 6 CPU-s passed a 2 s limit, reported as 0.1 s."""
    r = run(
        a.AUTOREAPED_CPU,
        [Case(input="", output="ok")],
        Limits(time_s=1, processes=2, wall_margin_s=30),
    ).results[0]
    assert r.status is Status.time_limit and r.cpu_s > 1 and not r.timed_out


def test_memory_is_capped_across_children_and_memfds(run: Run) -> None:
    r = run(
        a.MEMORY_HOG,
        [Case(input="", output="blocked")],
        Limits(processes=8, memory_bytes=256 * 2**20),
    ).results[0]
    assert r.status is Status.passed


# ------------------------------------------------------------------------------ the HTTP surface


def raw_request(service: Service, head: str, body: bytes = b"") -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", service.port), timeout=10) as s:
        s.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


def auth(service: Service) -> str:
    return f"Authorization: Bearer {service.token}\r\n"


def test_negative_or_missing_content_length_is_refused(service: Service) -> None:
    start = time.monotonic()
    status, body = raw_request(
        service, f"POST /run HTTP/1.1\r\nHost: x\r\n{auth(service)}Content-Length: -1\r\n"
    )
    assert status == 400 and b"non-negative" in body
    status, _ = raw_request(
        service, f"POST /run HTTP/1.1\r\nHost: x\r\n{auth(service)}Connection: close\r\n"
    )
    assert status == 411
    assert time.monotonic() - start < 5 and service.healthy_within(3)


def test_idle_connections_are_dropped_and_the_service_answers(service: Service) -> None:
    idle = [socket.create_connection(("127.0.0.1", service.port), timeout=10) for _ in range(30)]
    try:
        start = time.monotonic()
        for s in idle:
            s.settimeout(SOCKET_TIMEOUT_S + 8)
            try:
                s.recv(
                    1024
                )  # the canned 503 for those over the cap, then EOF; EOF at the timeout for the rest
                while s.recv(1024):
                    pass
            except (ConnectionResetError, TimeoutError):
                pass
        assert time.monotonic() - start < SOCKET_TIMEOUT_S + 8
    finally:
        for s in idle:
            s.close()
    assert service.healthy_within(3)


def test_caller_chosen_limits_above_the_caps_are_refused(service: Service) -> None:
    body = json.dumps(
        {
            "code": a.SUM,
            "tests": [{"input": "1 2", "output": "3"}],
            "limits": {"time_s": 60, "memory_bytes": 8 * 2**30, "processes": 256},
        }
    ).encode()
    status, reply = raw_request(
        service,
        f"POST /run HTTP/1.1\r\nHost: x\r\n{auth(service)}Connection: close\r\n"
        f"Content-Length: {len(body)}\r\n",
        body,
    )
    fields = {d["field"] for d in json.loads(reply)["details"]}
    assert status == 400 and fields == {"limits.time_s", "limits.memory_bytes", "limits.processes"}


def test_requests_without_the_token_are_refused(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = b'{"code": "", "tests": []}'
    status, _ = raw_request(
        service,
        f"POST /run HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len(body)}\r\n",
        body,
    )
    assert status == 401
    wrong = "w" * 32
    monkeypatch.setenv(SANDBOX_TOKEN_ENV, wrong)
    with pytest.raises(RuntimeError, match=f"refused the token in {SANDBOX_TOKEN_ENV}") as e:
        cc.run_remote(service.url, a.SUM, [Case(input="1 2", output="3")], Limits(), budget_s=5)
    assert wrong not in str(e.value)


def test_the_service_does_not_start_without_a_token() -> None:
    done = subprocess.run(
        [sys.executable, *service_command(0, 1, host="127.0.0.1")[1:]],
        cwd=REPO,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and SANDBOX_TOKEN_ENV in done.stderr
