"""The executor's HTTP API on loopback, and the reward calling it through CODE_SANDBOX_URL."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from jobs.rewards import code_contests as cc
from jobs.rewards import service
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
    real = cc.run_remote
    monkeypatch.setattr(cc, "run_remote", lambda u, *a, **k: calls.append(u) or real(u, *a, **k))
    gt = {
        "name": "sum",
        "time_limit": 1,
        "private_tests": {"input": ["1 2", "2 2"], "output": ["3", "4"]},
    }
    assert (
        cc.compute_score("code_contests", f"<code>```cpp\n{SUM}\n```</code>", json.dumps(gt)) == 1.0
    )
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
