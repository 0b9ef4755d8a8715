"""The executor as a small HTTP service: POST /run {code, tests, limits} -> RunResult JSON.

Runs on the cluster's gVisor CPU pool (components/k8s/sandbox.py) so model-written code never runs
inside the trainer; every program still runs in its own box (jobs/rewards/box.py), exactly as the
local executor does. Bounded on purpose, in this order, so that no client, slow or hostile, can
hold the service's connections, slots or memory:
- a connection that has not shown its token holds only a `pending` place (at most `max_pending`),
  for at most `header_timeout_s`: the request line and headers must arrive by then, however
  slowly the bytes trickle, or the socket is shut. The places are every client's, so a new
  connection over the cap takes the place of the OLDEST pending one (that socket is shut): a
  client holding sockets open without a token only evicts itself, while an honest client, whose
  headers arrive within milliseconds, moves on before its turn comes (with 100 held sockets
  reopened as fast as they are shut, an honest batch stays within 2 x its quiet time);
- a bearer token (`Authorization: Bearer $CODE_SANDBOX_TOKEN`), else 401: the service refuses to
  start without one and removes it from its environment. Only then is one of the
  `max_connections` connection places taken (else 503);
- a Content-Length that is present (else 411), a non-negative decimal integer of ASCII digits
  (else 400) and at most `max_body_bytes` (else 413, sent after reading and discarding the body,
  bounded by the same deadline, so the client reads the answer instead of a broken pipe);
- the body within `header_timeout_s` more, and only then a run slot within `queue_wait_s`, else
  503 with Retry-After (the reward backs off and retries): no slot waits on a slow client;
- a client that hangs up while its run goes on frees the slot: no further test starts;
- an executor that fails (a full disk, say) is a 500 naming the error, never a
  dropped connection the client would retry until its budget is spent.
Every limit a caller may set is bounded by `Limits` (sandbox.py); more tests than MAX_TESTS is a
400 naming the field; a source over sandbox.MAX_CODE_BYTES is answered as the in-process executor
answers it (not compiled, with the reason). `python -m jobs.rewards.service --port 8080`.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import re
import select
import socket
import threading
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobs.rewards import SANDBOX_TOKEN_ENV
from jobs.rewards.sandbox import Case, Executor, Limits

MAX_TESTS = 200
_DIGITS = re.compile(r"[0-9]{1,20}")  # ASCII only: str.isdigit() accepts "²", which int() refuses
MIN_TOKEN_CHARS = 16


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str  # bounded by the body limit; over MAX_CODE_BYTES it is not compiled (Executor.run)
    tests: list[Case] = Field(min_length=1, max_length=MAX_TESTS)
    limits: Limits = Limits()


class PendingPlaces:
    """The connections that have not shown their token yet, oldest first; at most `size`."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._sockets: OrderedDict[socket.socket, None] = OrderedDict()

    def admit(self, sock: socket.socket) -> socket.socket | None:
        """Takes a place for `sock`; returns the oldest pending socket if it had to give up its place."""
        with self._lock:
            evicted = (
                self._sockets.popitem(last=False)[0] if len(self._sockets) >= self._size else None
            )
            self._sockets[sock] = None
            return evicted

    def leave(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.pop(sock, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sockets)


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
        header_timeout_s: float = 10.0,
        max_pending: int = 64,
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
        self.header_timeout_s = header_timeout_s
        self._token = token.encode()
        self.connections = threading.BoundedSemaphore(max_connections or 4 * concurrency + 8)
        self.pending = PendingPlaces(max_pending)

    def authorized(self, header: str | None) -> bool:
        scheme, _, value = (header or "").partition(" ")
        return scheme == "Bearer" and hmac.compare_digest(value.strip().encode(), self._token)

    def process_request(self, request: Any, client_address: Any) -> None:
        evicted = self.pending.admit(request)
        if evicted is not None:
            try:  # its handler reads EOF and ends, giving back nothing it still holds
                evicted.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        # The handler moves the connection from `pending` to `connections` once it shows its
        # token and gives back whichever place it holds when it finishes.
        super().process_request_thread(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: SandboxServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        # StreamRequestHandler applies it to the socket; typeshed declares it a ClassVar, but
        # socketserver reads it from the instance, so each server's limit is set per handler.
        self.timeout = self.server.socket_timeout_s  # type: ignore[misc]
        self._place = "pending"  # released in finish(); "connection" once the token was shown
        self._timer: threading.Timer | None = None
        super().setup()

    def finish(self) -> None:
        self._disarm()
        try:
            super().finish()
        finally:
            if self._place == "pending":
                self.server.pending.leave(self.connection)
            elif self._place == "connection":
                self.server.connections.release()
            self._place = ""

    def _arm(self) -> None:
        """Shuts the socket at `header_timeout_s` from now: a socket timeout bounds one recv, not
        a client that sends a byte a second, which would otherwise hold its place forever."""
        self._disarm()
        self._timer = threading.Timer(self.server.header_timeout_s, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def handle_one_request(self) -> None:
        self._arm()  # the request line and headers, however slowly they trickle
        try:
            super().handle_one_request()
        finally:
            self._disarm()

    def _take_connection(self) -> bool:
        """After the token: the pending place becomes a connection place (else 503)."""
        if self._place == "connection":
            return True
        if not self.server.connections.acquire(blocking=False):
            self._reply(503, {"error": "too many connections, retry"}, close=True)
            return False
        self.server.pending.leave(self.connection)
        self._place = "connection"
        return True

    def _discard_body(self, length: int) -> None:
        """Reads and drops the body (within the armed deadline), so the answer sent after it is
        read by the client instead of a reset (closing with unread data makes the kernel send
        an RST, and the client sees a dropped connection, not the answer)."""
        left = length
        try:
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 16))
                if not chunk:
                    return
                left -= len(chunk)
        except OSError:
            return

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
        self._disarm()
        if self.path != "/healthz":
            return self._reply(404, {"error": f"no route GET {self.path}"}, close=True)
        self._reply(200, {"ok": True, "isolation": self.server.executor.isolation})

    def _content_length(self) -> int | None:
        raw = self.headers.get("Content-Length")
        if raw is None:
            self._reply(411, {"error": "Content-Length is required"}, close=True)
            return None
        if not _DIGITS.fullmatch(raw.strip()):
            self._reply(
                400,
                {"error": f"Content-Length must be a non-negative integer, got {raw[:32]!r}"},
                close=True,
            )
            return None
        length = int(raw)
        if length > self.server.max_body_bytes:
            self._arm()
            self._discard_body(length)
            self._disarm()
            self._reply(
                413,
                {"error": f"body of {length} bytes exceeds {self.server.max_body_bytes}"},
                close=True,
            )
            return None
        return length

    def do_POST(self) -> None:
        self._disarm()
        if self.path != "/run":
            return self._reply(404, {"error": f"no route POST {self.path}"}, close=True)
        if not self.server.authorized(self.headers.get("Authorization")):
            return self._reply(
                401, {"error": f"missing or wrong bearer token ({SANDBOX_TOKEN_ENV})"}, close=True
            )
        if not self._take_connection():
            return None
        length = self._content_length()
        if length is None:
            return None
        self._arm()  # the body, too, by a deadline, before any run slot is taken
        try:
            raw = self.rfile.read(length)
        except OSError:
            raw = b""
        self._disarm()
        if len(raw) != length:
            self.close_connection = True
            return None
        try:
            request = RunRequest.model_validate_json(raw)
        except ValidationError as e:
            errors = [
                {"field": ".".join(map(str, err["loc"])), "error": err["msg"]} for err in e.errors()
            ]
            return self._reply(400, {"error": "invalid request", "details": errors})
        if not self.server.slots.acquire(timeout=self.server.queue_wait_s):
            return self._reply(503, {"error": "executor busy"}, close=True)
        gone, done = threading.Event(), threading.Event()
        watcher = threading.Thread(
            target=_watch_hangup, args=(self.connection, gone, done), daemon=True
        )
        watcher.start()
        try:
            result = self.server.executor.run(
                request.code, request.tests, request.limits, cancel=gone
            )
        except Exception as e:  # a full disk, a box that cannot be built: answered, not dropped
            return self._reply(
                500, {"error": f"executor failed: {type(e).__name__}: {str(e)[:300]}"}, close=True
            )
        finally:
            done.set()
            self.server.slots.release()
        if gone.is_set():
            self.close_connection = True
            return None
        try:
            self._reply(200, result.model_dump_json())
        except OSError:
            self.close_connection = True


def _watch_hangup(conn: socket.socket, gone: threading.Event, done: threading.Event) -> None:
    """Sets `gone` when the client closes its end while its run goes on (without this, an
    abandoned run kept its slot, and the client's retry got 503s): the run then starts no more
    tests. Data from the client (a pipelined request) ends the watch without a verdict."""
    while not done.is_set():
        try:
            readable, _, _ = select.select([conn], [], [], 0.2)
            if not readable:
                continue
            if conn.recv(1, socket.MSG_PEEK) == b"":
                gone.set()
        except (OSError, ValueError):
            gone.set()
        return


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
    memory_bytes: int | None = None,
) -> SandboxServer:
    """A bound server (call serve_forever); port 0 picks a free one (server.server_address)."""
    return SandboxServer(
        (host, port),
        Executor(workers=workers, memory_bytes=memory_bytes),
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
    parser.add_argument(
        "--memory-bytes",
        type=int,
        default=None,
        help="what all boxes may hold at once (the pod's memory less the service's own); "
        "default: no total",
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
        args.memory_bytes,
    )
    print(
        f"sandbox executor on {args.host}:{server.server_address[1]} ({server.executor.isolation})",
        flush=True,
    )
    server.serve_forever()


if __name__ == "__main__":
    main()
