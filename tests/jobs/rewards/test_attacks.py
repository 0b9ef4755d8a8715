"""Issue 17's attacks, as real g++ programs, through `compute_score` in-process and through the HTTP
service started as the image starts it: each asserts the outcome (siblings keep 1.0, nothing
secret is printed, nothing outlives its box, the service keeps answering)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.k8s.sandbox import service_command
from jobs.rewards import SANDBOX_TOKEN_ENV
from jobs.rewards import code_contests as cc
from jobs.rewards.batch import compute_score_batch
from jobs.rewards.sandbox import Case, Executor, Limits, Status
from tests.jobs.rewards import attacks as a
from tests.jobs.rewards.serving import REPO, SOCKET_TIMEOUT_S, Service, pool_pids

pytestmark = pytest.mark.compiler


@pytest.fixture(scope="module")
def service() -> Iterator[Service]:
    s = Service()
    yield s
    s.stop()


@pytest.fixture(params=["local", "service"])
def via(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """compute_score's keyword for each path: the in-process executor, or the service's URL (with its token)."""
    monkeypatch.delenv(cc.SANDBOX_URL_ENV, raising=False)
    if request.param == "local":
        return {}
    service = request.getfixturevalue("service")
    monkeypatch.setenv(SANDBOX_TOKEN_ENV, service.token)
    return {"sandbox_url": service.url}


def batch(codes: list[str], truths: list[str], **kwargs: str) -> list[float]:
    return compute_score_batch(
        ["code_contests"] * len(codes),
        [a.answer(c) for c in codes],
        truths,
        None,
        concurrency=len(codes),
        **kwargs,
    )


def test_kill_everyone_leaves_the_siblings_at_one(via: dict[str, str]) -> None:
    scores = batch([a.KILL_EVERYONE, a.SLOW_SUM, a.SLOW_SUM], [a.SUM_TRUTH] * 3, **via)
    assert scores[1:] == [1.0, 1.0]


def test_siblings_binaries_cannot_be_written_read_or_run(via: dict[str, str]) -> None:
    scores = batch(
        [a.TAMPER, a.SLOW_SUM, a.SLOW_SUM], [a.BLOCKED_TRUTH, a.SUM_TRUTH, a.SUM_TRUTH], **via
    )
    assert scores == [1.0, 1.0, 1.0]


def test_a_setsid_daemon_dies_with_its_box(via: dict[str, str]) -> None:
    assert cc.compute_score("code_contests", a.answer(a.DAEMON), a.SUM_TRUTH, None, **via) == 1.0
    deadline = time.monotonic() + 5
    while pool_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool_pids() == []
    assert cc.compute_score("code_contests", a.answer(a.SLOW_SUM), a.SUM_TRUTH, None, **via) == 1.0


def test_signalling_init_and_parent_changes_nothing(via: dict[str, str], service: Service) -> None:
    assert cc.compute_score("code_contests", a.answer(a.KILL_INIT), a.SUM_TRUTH, None, **via) == 1.0
    assert service.proc.poll() is None and service.healthy_within(3)


def test_no_secret_environment_process_or_host_file_is_visible(
    via: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"RLSECRET-{secrets.token_hex(8)}"
    monkeypatch.setenv("HF_TOKEN", marker)
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        assert (
            cc.compute_score("code_contests", a.answer(a.SNOOP), a.BLOCKED_TRUTH, None, **via)
            == 1.0
        )
    finally:
        host.kill()
        host.wait()


def test_expected_outputs_cannot_be_read_from_any_process(via: dict[str, str]) -> None:
    # The answers are random hex: only reading them from the judge (its memory, its request) could pass.
    answers = [secrets.token_hex(16) for _ in range(2)]
    truth = a.truth(["", ""], answers)
    assert cc.compute_score("code_contests", a.answer(a.SNOOP), truth, None, **via) == 0.0


def test_a_symlink_to_root_in_a_locked_directory_breaks_nothing(
    via: dict[str, str], service: Service
) -> None:
    start = time.monotonic()
    scores = batch([a.SYMLINK_TRAP, a.SLOW_SUM], [a.SUM_TRUTH] * 2, **via)
    assert scores == [1.0, 1.0] and time.monotonic() - start < 60
    assert Path("/usr/bin").is_dir() and service.healthy_within(3)


def test_disk_flood_stops_at_the_box_quota(via: dict[str, str]) -> None:
    assert (
        cc.compute_score("code_contests", a.answer(a.DISK_FLOOD), a.BLOCKED_TRUTH, None, **via)
        == 1.0
    )


def test_unix_sockets_user_namespaces_and_io_uring_are_refused(
    via: dict[str, str], tmp_path: Path
) -> None:
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
        assert cc.compute_score("code_contests", a.answer(a.ESCAPES), truth, None, **via) == 1.0
        for s in listeners:
            with pytest.raises(TimeoutError):
                s.accept()
    finally:
        for s in listeners:
            s.close()
        os.unlink(path)


@pytest.fixture(scope="module")
def executor() -> Iterator[Executor]:
    ex = Executor(workers=2)
    yield ex
    ex.close()


def test_cpu_time_of_forked_children_counts(executor: Executor) -> None:
    # A wide wall margin, so the box's own CPU accounting (not the wall backstop) ends it even on a loaded machine.
    r = executor.run(
        a.FORKED_CPU, [Case(input="", output="ok")], Limits(time_s=1, processes=4, wall_margin_s=30)
    ).results[0]
    assert r.status is Status.time_limit and r.cpu_s > 1 and not r.timed_out


def test_cpu_time_of_children_the_kernel_reaps_counts(executor: Executor) -> None:
    """issue 25 item 6: with SIGCHLD ignored, 6 CPU-s passed a 2 s limit, reported as 0.1 s."""
    r = executor.run(
        a.AUTOREAPED_CPU,
        [Case(input="", output="ok")],
        Limits(time_s=1, processes=2, wall_margin_s=30),
    ).results[0]
    assert r.status is Status.time_limit and r.cpu_s > 1 and not r.timed_out


def test_memory_is_capped_across_children_and_memfds(executor: Executor) -> None:
    r = executor.run(
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
