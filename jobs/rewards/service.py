"""The executor as a small HTTP service: POST /run {code, tests, limits} -> RunResult JSON.

Runs on the cluster's gVisor CPU pool (components/k8s/sandbox.py) so model-written code never runs
inside the trainer; every program still runs in its own box (jobs/rewards/box.py), exactly as the
local executor does. Bounded on purpose, in this order, before any body byte is read:
- a bearer token (`Authorization: Bearer $CODE_SANDBOX_TOKEN`), else 401: the service refuses to
  start without one and removes it from its environment;
- a Content-Length that is present (else 411), a non-negative integer (else 400) and at most
  `max_body_bytes` (else 413);
- a run slot within `queue_wait_s`, else 503 with Retry-After (the reward backs off and retries);
- at most `max_connections` open connections (more get a canned 503 from the accept loop), each
  with a socket timeout, so idle or slow clients cannot hold threads.
Every limit a caller may set is bounded by `Limits` (sandbox.py); more tests than MAX_TESTS or more
code than MAX_CODE_CHARS is a 400 naming the field. `python -m jobs.rewards.service --port 8080`.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobs.rewards import SANDBOX_TOKEN_ENV
from jobs.rewards.sandbox import Case, Executor, Limits

MAX_CODE_CHARS = 64 * 1024
MAX_TESTS = 200
MIN_TOKEN_CHARS = 16
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: 42\r\n\r\n"
    + b'{"error": "too many connections, retry"}  '
)


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(max_length=MAX_CODE_CHARS)
    tests: list[Case] = Field(min_length=1, max_length=MAX_TESTS)
    limits: Limits = Limits()


class SandboxServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(
        self,
        address: tuple[str, int],
        executor: Executor,
        concurrency: int,
        max_body_bytes: int,
        token: str,
        queue_wait_s: float = 1.0,
        socket_timeout_s: float = 30.0,
        max_connections: int | None = None,
    ) -> None:
        if len(token) < MIN_TOKEN_CHARS:
            raise ValueError(
                f"{SANDBOX_TOKEN_ENV}: a token of at least {MIN_TOKEN_CHARS} characters is required"
            )
        super().__init__(address, _Handler)
        self.executor = executor
        self.slots = threading.BoundedSemaphore(concurrency)
        self.max_body_bytes = max_body_bytes
        self.queue_wait_s = queue_wait_s
        self.socket_timeout_s = socket_timeout_s
        self._token = token.encode()
        self._connections = threading.BoundedSemaphore(max_connections or 4 * concurrency + 8)

    def authorized(self, header: str | None) -> bool:
        scheme, _, value = (header or "").partition(" ")
        return scheme == "Bearer" and hmac.compare_digest(value.strip().encode(), self._token)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._connections.acquire(blocking=False):
            try:
                request.settimeout(1.0)
                request.sendall(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._connections.release()


class _Handler(BaseHTTPRequestHandler):
    server: SandboxServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        self.timeout = self.server.socket_timeout_s  # StreamRequestHandler applies it to the socket
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # request bodies are model output and test data; headers carry the token

    def _reply(self, status: int, payload: dict[str, Any] | str, close: bool = False) -> None:
        body = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        if close:
            self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if status == 503:
            self.send_header("Retry-After", "1")
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path != "/healthz":
            return self._reply(404, {"error": f"no route GET {self.path}"}, close=True)
        self._reply(200, {"ok": True, "isolation": self.server.executor.isolation})

    def _content_length(self) -> int | None:
        raw = self.headers.get("Content-Length")
        if raw is None:
            self._reply(411, {"error": "Content-Length is required"}, close=True)
            return None
        if not raw.strip().isdigit():
            self._reply(
                400,
                {"error": f"Content-Length must be a non-negative integer, got {raw[:32]!r}"},
                close=True,
            )
            return None
        length = int(raw)
        if length > self.server.max_body_bytes:
            self._reply(
                413,
                {"error": f"body of {length} bytes exceeds {self.server.max_body_bytes}"},
                close=True,
            )
            return None
        return length

    def do_POST(self) -> None:
        if self.path != "/run":
            return self._reply(404, {"error": f"no route POST {self.path}"}, close=True)
        if not self.server.authorized(self.headers.get("Authorization")):
            return self._reply(
                401, {"error": f"missing or wrong bearer token ({SANDBOX_TOKEN_ENV})"}, close=True
            )
        length = self._content_length()
        if length is None:
            return
        if not self.server.slots.acquire(timeout=self.server.queue_wait_s):
            return self._reply(503, {"error": "executor busy"}, close=True)
        try:
            try:
                request = RunRequest.model_validate_json(self.rfile.read(length))
            except ValidationError as e:
                errors = [
                    {"field": ".".join(map(str, err["loc"])), "error": err["msg"]}
                    for err in e.errors()
                ]
                return self._reply(400, {"error": "invalid request", "details": errors})
            result = self.server.executor.run(request.code, request.tests, request.limits)
        except TimeoutError:
            self.close_connection = True
            return None
        finally:
            self.server.slots.release()
        self._reply(200, result.model_dump_json())


def take_token() -> str:
    """The token from the environment, removed from it so nothing this process starts inherits it."""
    token = os.environ.pop(SANDBOX_TOKEN_ENV, "")
    if len(token) < MIN_TOKEN_CHARS:
        raise SystemExit(
            f"{SANDBOX_TOKEN_ENV} must hold a token of at least {MIN_TOKEN_CHARS} characters "
            "(the Kubernetes Secret the Ray pods read too)"
        )
    return token


def serve(
    host: str,
    port: int,
    concurrency: int,
    max_body_bytes: int,
    token: str,
    workers: int | None = None,
    socket_timeout_s: float = 30.0,
) -> SandboxServer:
    """A bound server (call serve_forever); port 0 picks a free one (server.server_address)."""
    return SandboxServer(
        (host, port),
        Executor(workers=workers),
        concurrency,
        max_body_bytes,
        token,
        socket_timeout_s=socket_timeout_s,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.rewards.service", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument(
        "--concurrency", type=int, default=4, help="solutions run at once; more get 503"
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="tests run at once per solution (default: CPUs)"
    )
    parser.add_argument("--max-body-bytes", type=int, default=16 * 2**20)
    parser.add_argument(
        "--socket-timeout", type=float, default=30.0, help="seconds a connection may sit idle"
    )
    args = parser.parse_args(argv)
    token = take_token()
    server = serve(
        args.host,
        args.port,
        args.concurrency,
        args.max_body_bytes,
        token,
        args.workers,
        args.socket_timeout,
    )
    print(
        f"sandbox executor on {args.host}:{server.server_address[1]} ({server.executor.isolation})",
        flush=True,
    )
    server.serve_forever()


if __name__ == "__main__":
    main()
