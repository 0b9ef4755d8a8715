"""The executor's HTTP API on loopback, and the reward calling it through CODE_SANDBOX_URL."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.rewards import code_contests as cc
from jobs.rewards import service
from jobs.rewards.batch import compute_score_batch
from jobs.rewards.sandbox import Case, Executor, Limits

pytestmark = pytest.mark.compiler

TOKEN = "test-token-0123456789abcdef"
SUM = """#include <cstdio>
int main() { long long a, b; scanf("%lld %lld", &a, &b); printf("%lld\\n", a + b); }"""


@pytest.fixture(scope="module")
def server() -> Iterator[service.SandboxServer]:
    server = service.serve("127.0.0.1", 0, concurrency=2, max_body_bytes=64 * 1024, token=TOKEN)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        server.executor.close()
        thread.join(timeout=5)


@pytest.fixture
def url(server: service.SandboxServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def post(url: str, payload: object, path: str = "/run") -> tuple[int, dict]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    request = urllib.request.Request(
        url + path,
        data=data,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_run_returns_per_test_results(url: str) -> None:
    status, body = post(
        url,
        {
            "code": SUM,
            "tests": [{"input": "1 2", "output": "3"}, {"input": "1 1", "output": "3"}],
            "limits": {"time_s": 1},
        },
    )
    assert status == 200
    assert body["compiled"] is True
    assert [r["status"] for r in body["results"]] == ["passed", "wrong_answer"]


def test_invalid_request_is_400_naming_the_field(url: str) -> None:
    status, body = post(
        url, {"code": SUM, "tests": [{"input": "1 2", "output": "3"}], "limits": {"time_s": -1}}
    )
    assert status == 400 and body["details"][0]["field"] == "limits.time_s"
    status, body = post(url, {"code": SUM, "tests": []})
    assert status == 400 and body["details"][0]["field"] == "tests"


def test_oversized_body_is_413_and_not_run(url: str) -> None:
    status, body = post(url, {"code": SUM, "tests": [{"input": "x" * 70_000, "output": ""}]})
    assert status == 413 and "exceeds 65536" in body["error"]


def test_busy_executor_answers_503(server: service.SandboxServer, url: str) -> None:
    # Both slots taken, as two long runs would hold them: a third request is turned away, not queued forever.
    for _ in range(2):
        assert server.slots.acquire(timeout=1)
    try:
        status, body = post(url, {"code": SUM, "tests": [{"input": "1 2", "output": "3"}]})
        assert status == 503 and body["error"] == "executor busy"
    finally:
        for _ in range(2):
            server.slots.release()
    assert post(url, {"code": SUM, "tests": [{"input": "1 2", "output": "3"}]})[0] == 200


def test_unknown_route_is_404(url: str) -> None:
    status, _ = post(url, {}, path="/exec")
    assert status == 404


def test_reward_uses_the_service_named_by_env(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cc.SANDBOX_URL_ENV, url)
    monkeypatch.setenv(cc.SANDBOX_TOKEN_ENV, TOKEN)
    calls: list[str] = []
    answers: list[object] = []  # what the service said, shown if the score is not 1.0
    real = cc.run_remote

    def recorded(u: str, *a: object, **k: object) -> object:
        calls.append(u)
        answers.append(real(u, *a, **k))
        return answers[-1]

    monkeypatch.setattr(cc, "run_remote", recorded)
    gt = {
        "name": "sum",
        # What this test judges is the route (CODE_SANDBOX_URL), not the limits: a generous
        # limit keeps a busy machine's slow start of the binary from scoring it asleep.
        "time_limit": 5,
        "private_tests": {"input": ["1 2", "2 2"], "output": ["3", "4"]},
    }
    score = cc.compute_score("code_contests", f"<code>```cpp\n{SUM}\n```</code>", json.dumps(gt))
    assert score == 1.0, answers
    assert calls == [url]


def test_reward_fails_loudly_when_the_service_stays_unreachable() -> None:
    with pytest.raises(
        RuntimeError,
        match=r"CODE_SANDBOX_URL=http://127.0.0.1:9/: no result after \d+ attempts in 2 s",
    ):
        cc.run_remote("http://127.0.0.1:9/", SUM, [], Limits(), budget_s=2)


def test_a_busy_service_is_waited_for_not_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    # A one-slot service whose slot is held by another request: ours gets 503s until it frees.
    monkeypatch.setenv(cc.SANDBOX_TOKEN_ENV, TOKEN)
    server = service.SandboxServer(
        ("127.0.0.1", 0),
        Executor(),
        concurrency=1,
        max_body_bytes=1 << 20,
        token=TOKEN,
        queue_wait_s=0.05,
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        server.slots.acquire()
        threading.Timer(2.0, server.slots.release).start()
        result = cc.run_remote(url, SUM, [Case(input="1 2", output="3")], Limits(), budget_s=60)
        assert result.compiled and result.passed == 1
    finally:
        server.shutdown()
        server.server_close()
        server.executor.close()
        thread.join(timeout=5)


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    return reply


def test_a_content_length_of_unicode_digits_is_a_400(server: service.SandboxServer) -> None:
    """A Content-Length of "²": "²".isdigit() is True and int("²") raises; the handler died."""
    port = server.server_address[1]
    reply = _raw(
        port,
        f"POST /run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Length: \u00b2\r\n\r\n".encode("latin-1"),  # the byte 0xb2, as a client sends it
    )
    assert reply.startswith(b"HTTP/1.1 400") and b"non-negative integer" in reply
    assert (
        post(f"http://127.0.0.1:{port}", {"code": SUM, "tests": [{"input": "1 2", "output": "3"}]})[
            0
        ]
        == 200
    )


def test_a_body_over_the_limit_is_answered_413_not_a_broken_pipe(url: str) -> None:
    """The 413 went out while the client was still sending; the client saw a
    broken pipe, retried and raised. The service now reads the body away before it answers."""
    body = b" " * (8 * 2**20)
    request = urllib.request.Request(
        url + "/run",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
    )
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(request, timeout=60)
    assert e.value.code == 413 and b"exceeds 65536" in e.value.read()


def test_clients_without_a_token_trickling_bytes_take_no_connection_place(
    server: service.SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sockets sending a byte a second held every connection place without a
    token. Now they wait in `pending` for at most header_timeout_s and a real request is served."""
    monkeypatch.setenv(cc.SANDBOX_TOKEN_ENV, TOKEN)
    tight = service.SandboxServer(
        ("127.0.0.1", 0),
        server.executor,
        concurrency=1,
        max_body_bytes=1 << 20,
        token=TOKEN,
        socket_timeout_s=30.0,
        max_connections=4,
        header_timeout_s=2.0,
    )
    thread = threading.Thread(target=tight.serve_forever, daemon=True)
    thread.start()
    port = tight.server_address[1]
    tricklers = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(20)]
    stop = threading.Event()

    def trickle() -> None:
        while not stop.is_set():
            for s in tricklers:
                try:
                    s.send(b"P")
                except OSError:
                    pass
            time.sleep(0.5)

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        time.sleep(0.5)
        start = time.monotonic()
        # the tricklers keep trickling all along: without the fix every place stays theirs
        result = cc.run_remote(
            f"http://127.0.0.1:{port}", SUM, [Case(input="1 2", output="3")], Limits(), budget_s=20
        )
        assert result.passed == 1 and time.monotonic() - start < 20
        closed_by = time.monotonic() + 2.0 + 10
        for s in tricklers:
            s.settimeout(max(0.1, closed_by - time.monotonic()))
            try:
                while s.recv(1024):
                    pass  # EOF (or a reset) once its header deadline passed
            except ConnectionResetError:
                pass
        assert time.monotonic() <= closed_by
    finally:
        stop.set()
        sender.join(timeout=5)
        for s in tricklers:
            s.close()
        tight.shutdown()
        tight.server_close()
        thread.join(timeout=5)


def test_a_client_that_hangs_up_frees_its_run(
    server: service.SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request abandoned by its client kept its slot until every sleeping test
    had run to its wall backstop; the client's retry got 503s. Now no further test starts."""
    monkeypatch.setenv(cc.SANDBOX_TOKEN_ENV, TOKEN)
    one_slot = service.SandboxServer(
        ("127.0.0.1", 0), server.executor, concurrency=1, max_body_bytes=1 << 20, token=TOKEN
    )
    thread = threading.Thread(target=one_slot.serve_forever, daemon=True)
    thread.start()
    port = one_slot.server_address[1]
    loop = "int main() { volatile unsigned long x = 0; for (;;) x++; }"
    body = json.dumps(
        {
            "code": loop,
            # 60 x 1 CPU-s on 2 workers: 30 s at the very least if the run kept its slot
            "tests": [{"input": "", "output": ""}] * 60,
            "limits": {"time_s": 1},
        }
    ).encode()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(
                f"POST /run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            time.sleep(1.5)  # the run has its slot; the client gives up
        start = time.monotonic()
        result = cc.run_remote(
            f"http://127.0.0.1:{port}", SUM, [Case(input="1 2", output="3")], Limits(), budget_s=20
        )
        # the two tests already in their boxes end at 1 CPU-s each, even on a loaded machine
        assert result.passed == 1 and time.monotonic() - start < 20
    finally:
        one_slot.shutdown()
        one_slot.server_close()
        thread.join(timeout=5)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_is_a_scored_fault_in_process_and_a_500_from_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a full disk compute_score raised ENOSPC in-process and the service
    dropped the connection (900 s of client retries, then a raise)."""
    small = tmp_path / "small"
    small.mkdir(mode=0o700)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(small)], check=True
    )
    big = " " * (12 * 2**20) + "1 2"  # a test input larger than what is left of the disk
    truth = {"name": "p", "private_tests": {"input": [big], "output": ["3"]}}
    try:
        executor = Executor(workers=1, root=small / "root", precompile=False)
        try:
            with pytest.raises(OSError):
                executor.run(SUM, [Case(input=big, output="3")], Limits())
            monkeypatch.setattr(cc, "_local", executor)
            verdict = cc.judge_solution(f"```cpp\n{SUM}\n```", truth)
            assert verdict.score == cc.FAULT and "No space left" in verdict.reason
            full = service.SandboxServer(
                ("127.0.0.1", 0), executor, concurrency=1, max_body_bytes=32 << 20, token=TOKEN
            )
            thread = threading.Thread(target=full.serve_forever, daemon=True)
            thread.start()
            try:
                url = f"http://127.0.0.1:{full.server_address[1]}"
                status, body = post(url, {"code": SUM, "tests": [{"input": big, "output": "3"}]})
                assert status == 500 and "No space left" in body["error"]
                monkeypatch.setenv(cc.SANDBOX_TOKEN_ENV, TOKEN)
                start = time.monotonic()
                verdict = cc.judge_solution(f"```cpp\n{SUM}\n```", truth, sandbox_url=url)
                assert verdict.score == cc.FAULT and time.monotonic() - start < 30
            finally:
                full.shutdown()
                full.server_close()
                thread.join(timeout=5)
        finally:
            executor.close()
    finally:
        subprocess.run(["umount", "-l", str(small)], check=True)


class _Holder:
    """An unauthenticated client holding `count` sockets open: each trickles a header byte every
    0.5 s, and a socket the service closes is opened again at once."""

    def __init__(self, port: int, count: int) -> None:
        self.port, self.stop = port, threading.Event()
        self.sockets = [self._open() for _ in range(count)]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self) -> socket.socket:
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.setblocking(False)
        return s

    def _run(self) -> None:
        while not self.stop.is_set():
            for i, s in enumerate(self.sockets):
                try:
                    s.send(b"P")
                    if s.recv(1024) == b"":
                        raise ConnectionResetError
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    self.sockets[i] = self._open()
            self.stop.wait(0.5)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        for s in self.sockets:
            s.close()


def _honest_batch(url: str, tag: str) -> float:
    codes = [f"// {tag} {i}\n{SUM}" for i in range(4)]
    truth = json.dumps({"name": "sum", "private_tests": {"input": ["1 2"], "output": ["3"]}})
    start = time.monotonic()
    scores = compute_score_batch(
        ["code_contests"] * 4,
        [f"<code>\n```cpp\n{c}\n```\n</code>" for c in codes],
        [truth] * 4,
        None,
        concurrency=4,
        sandbox_url=url,
    )
    assert scores == [1.0] * 4
    return time.monotonic() - start


def test_a_hundred_unauthenticated_sockets_do_not_slow_an_honest_batch(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """70 sockets trickling header bytes held the 64 pending places, shared by
    every client: an honest batch took 13 s instead of 0.1 s."""
    monkeypatch.setenv(cc.SANDBOX_TOKEN_ENV, TOKEN)
    quiet = _honest_batch(url, "quiet")
    holder = _Holder(int(url.rsplit(":", 1)[1]), 100)
    try:
        time.sleep(1.0)
        held = _honest_batch(url, "held")
    finally:
        holder.close()
    assert held <= 2 * quiet, f"{held:.2f} s held against {quiet:.2f} s quiet"
