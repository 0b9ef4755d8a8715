"""A stand-in for the Hugging Face Hub on loopback, for the staging tests.

It serves what huggingface_hub 2.4's `model_info`, `snapshot_download` and `hf_hub_download`
ask for (`/api/models/<repo>/revision/<rev>`, `/api/models/<repo>/tree/<rev>`, and
`/<repo>/resolve/<rev>/<file>` with HEAD, GET and Range), so the real client does the real
download, resume and cache layout against files the test controls. It can cut a file's first
transfer half-way (a dropped connection) and records every request.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlparse

_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/revision/(?P<rev>[^/]+)$")
_TREE = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/tree/(?P<rev>[^/]+)(?:/.*)?$")
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")


@dataclass
class Repo:
    """A model repo: branches to commits, commits to files."""

    branches: dict[str, str] = field(default_factory=dict)
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)

    def push(self, files: dict[str, bytes], branch: str = "main") -> str:
        commit = hashlib.sha1(json.dumps(sorted((k, v.hex()) for k, v in files.items()))
                              .encode() + str(len(self.commits)).encode()).hexdigest()
        self.commits[commit] = dict(files)
        self.branches[branch] = commit
        return commit

    def resolve(self, rev: str) -> str | None:
        return self.branches.get(rev) or (rev if rev in self.commits else None)


class FakeHub:
    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.requests: list[tuple[str, str, str]] = []  # (method, path, Range header)
        self.cut_first_get: set[str] = set()  # file names whose first GET stops half-way
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def note(self, method: str, path: str, range_header: str) -> None:
        with self._lock:
            self.requests.append((method, path, range_header))

    def file_gets(self) -> list[tuple[str, str]]:
        return [(p, r) for m, p, r in self.requests if m == "GET" and "/resolve/" in p]


def _etag(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None,
                  content_length: int | None = None) -> None:
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            length = len(body) if content_length is None else content_length
            self.send_header("Content-Length", str(length))
            self.end_headers()
            if self.command != "HEAD" and body:
                self.wfile.write(body)

        def _json(self, data: object) -> None:
            self._send(200, json.dumps(data).encode(), {"Content-Type": "application/json"})

        def _missing(self, code: str) -> None:
            self._send(404, json.dumps({"error": code}).encode(),
                       {"X-Error-Code": code, "Content-Type": "application/json"})

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            path = unquote(urlparse(self.path).path)
            hub.note(self.command, path, self.headers.get("Range", ""))
            for pattern, serve in ((_INFO, self._info), (_TREE, self._tree),
                                   (_RESOLVE, self._resolve)):
                if m := pattern.match(path):
                    repo = hub.repos.get(m["repo"])
                    if repo is None:
                        return self._missing("RepoNotFound")
                    commit = repo.resolve(m["rev"])
                    if commit is None:
                        return self._missing("RevisionNotFound")
                    return serve(m, m["repo"], commit, repo.commits[commit])
            self._send(404)

        def _info(self, m: re.Match[str], name: str, commit: str,
                  files: dict[str, bytes]) -> None:
            self._json({"id": name, "modelId": name, "sha": commit, "private": False,
                        "siblings": [{"rfilename": f, "size": len(b), "blobId": _etag(b)}
                                     for f, b in files.items()]})

        def _tree(self, m: re.Match[str], name: str, commit: str,
                  files: dict[str, bytes]) -> None:
            self._json([{"type": "file", "path": f, "size": len(b), "oid": _etag(b)}
                        for f, b in files.items()])

        def _resolve(self, m: re.Match[str], name: str, commit: str,
                     files: dict[str, bytes]) -> None:
            data = files.get(m["file"])
            if data is None:
                return self._missing("EntryNotFound")
            headers = {"X-Repo-Commit": commit, "ETag": f'"{_etag(data)}"',
                       "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
            start = 0
            if rng := re.match(r"bytes=(\d+)-", self.headers.get("Range", "")):
                start = int(rng[1])
                headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            body = data[start:]
            code = 206 if start else 200
            if self.command == "GET" and m["file"] in hub.cut_first_get:
                hub.cut_first_get.discard(m["file"])
                self._send(code, b"", headers, content_length=len(body))
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self._send(code, body, headers)

    return Handler
