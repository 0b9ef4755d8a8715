"""The executor as a small HTTP service: POST /run {code, tests, limits} -> RunResult JSON.

Runs on the cluster's gVisor CPU pool (components/k8s/sandbox.py) so model-written code never runs
inside the trainer. Bounded on purpose: request bodies over `max_body_bytes` get 413, more than
`concurrency` runs at once get 503 (the reward client backs off and retries), invalid requests 400
with the offending field. `python -m jobs.rewards.service --port 8080`.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobs.rewards.sandbox import Case, Executor, Limits

MAX_CODE_CHARS = 64 * 1024
MAX_TESTS = 1000


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(max_length=MAX_CODE_CHARS)
    tests: list[Case] = Field(min_length=1, max_length=MAX_TESTS)
    limits: Limits = Limits()


class SandboxServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], executor: Executor, concurrency: int,
                 max_body_bytes: int, queue_wait_s: float = 1.0) -> None:
        super().__init__(address, _Handler)
        self.executor = executor
        self.slots = threading.BoundedSemaphore(concurrency)
        self.max_body_bytes = max_body_bytes
        self.queue_wait_s = queue_wait_s


class _Handler(BaseHTTPRequestHandler):
    server: SandboxServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # request bodies are model output and test data; nothing worth logging per request

    def _reply(self, status: int, payload: dict[str, Any] | str) -> None:
        body = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if status == 503:
            self.send_header("Retry-After", "1")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path != "/healthz":
            return self._reply(404, {"error": f"no route GET {self.path}"})
        self._reply(200, {"ok": True, "isolation": "privileged" if self.server.executor.privileged else "unprivileged"})

    def do_POST(self) -> None:  # noqa: N802
        if self.path != "/run":
            self.close_connection = True
            return self._reply(404, {"error": f"no route POST {self.path}"})
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self.close_connection = True
            return self._reply(411, {"error": "Content-Length is required"})
        if length > self.server.max_body_bytes:
            self.close_connection = True  # the body is not read: do not reuse the connection
            return self._reply(413, {"error": f"body of {length} bytes exceeds {self.server.max_body_bytes}"})
        raw = self.rfile.read(length)
        try:
            request = RunRequest.model_validate_json(raw)
        except ValidationError as e:
            errors = [{"field": ".".join(map(str, err["loc"])), "error": err["msg"]} for err in e.errors()]
            return self._reply(400, {"error": "invalid request", "details": errors})
        if not self.server.slots.acquire(timeout=self.server.queue_wait_s):
            return self._reply(503, {"error": "executor busy"})
        try:
            result = self.server.executor.run(request.code, request.tests, request.limits)
        finally:
            self.server.slots.release()
        self._reply(200, result.model_dump_json())


def serve(host: str, port: int, concurrency: int, max_body_bytes: int, workers: int | None = None) -> SandboxServer:
    """A bound server (call serve_forever); port 0 picks a free one (server.server_address)."""
    return SandboxServer((host, port), Executor(workers=workers), concurrency, max_body_bytes)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jobs.rewards.service", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--concurrency", type=int, default=4, help="solutions run at once; more get 503")
    parser.add_argument("--workers", type=int, default=None, help="tests run at once per solution (default: CPUs)")
    parser.add_argument("--max-body-bytes", type=int, default=64 * 2**20)
    args = parser.parse_args(argv)
    server = serve(args.host, args.port, args.concurrency, args.max_body_bytes, args.workers)
    print(f"sandbox executor on {args.host}:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
