"""A stand-in for the Hugging Face Hub on loopback, for the staging tests.

It serves what huggingface_hub 2.4's `model_info`, `snapshot_download` and `hf_hub_download`,
and `datasets.load_dataset` (through HfFileSystem) ask for: `/api/{models,datasets}/<repo>/`
`revision/<rev>`, `tree/<rev>[/<path>]`, `paths-info/<rev>` and `[datasets/]<repo>/resolve/<rev>/
<file>` with HEAD, GET and Range; so the real clients do the real download, resume and cache
layout against files the test controls. It can cut a file's first
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
from urllib.parse import parse_qs, unquote, urlparse

_API = r"^/api/(?:models|datasets)/(?P<repo>[^/]+/[^/]+)"
_INFO = re.compile(_API + r"/revision/(?P<rev>[^/]+)$")
_TREE = re.compile(_API + r"/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?$")
_PATHS_INFO = re.compile(_API + r"/paths-info/(?P<rev>[^/]+)$")
_RESOLVE = re.compile(r"^/(?:datasets/)?(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")


@dataclass
class Repo:
    """A model repo: branches to commits, commits to files."""

    branches: dict[str, str] = field(default_factory=dict)
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)

    def push(self, files: dict[str, bytes], branch: str = "main") -> str:
        commit = hashlib.sha1(
            json.dumps(sorted((k, v.hex()) for k, v in files.items())).encode()
            + str(len(self.commits)).encode()
        ).hexdigest()
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


def _listing(
    files: dict[str, bytes], base: str, recursive: bool, dirs: bool = True
) -> list[dict[str, object]]:
    """The Hub's tree entries under `base`: files, and the folders on the way to them."""
    entries: dict[str, dict[str, object]] = {}
    prefix = f"{base}/" if base else ""
    for name, data in files.items():
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix) :].split("/")
        for depth in range(1, len(rest)):
            folder = prefix + "/".join(rest[:depth])
            if dirs and (recursive or depth == 1):
                entries[folder] = {
                    "type": "directory",
                    "path": folder,
                    "oid": _etag(folder.encode()),
                }
        if recursive or len(rest) == 1:
            entries[name] = {"type": "file", "path": name, "size": len(data), "oid": _etag(data)}
    return list(entries.values())


def _etag(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(
            self,
            code: int,
            body: bytes = b"",
            headers: dict[str, str] | None = None,
            content_length: int | None = None,
        ) -> None:
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
            self._send(
                404,
                json.dumps({"error": code}).encode(),
                {"X-Error-Code": code, "Content-Type": "application/json"},
            )

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            path = unquote(urlparse(self.path).path)
            hub.note(self.command, path, self.headers.get("Range", ""))
            for pattern, serve in (
                (_INFO, self._info),
                (_TREE, self._tree),
                (_RESOLVE, self._resolve),
            ):
                if m := pattern.match(path):
                    repo = hub.repos.get(m["repo"])
                    if repo is None:
                        return self._missing("RepoNotFound")
                    commit = repo.resolve(m["rev"])
                    if commit is None:
                        return self._missing("RevisionNotFound")
                    return serve(m, m["repo"], commit, repo.commits[commit])
            self._send(404)

        def _info(self, m: re.Match[str], name: str, commit: str, files: dict[str, bytes]) -> None:
            self._json(
                {
                    "id": name,
                    "modelId": name,
                    "sha": commit,
                    "private": False,
                    "siblings": [
                        {"rfilename": f, "size": len(b), "blobId": _etag(b)}
                        for f, b in files.items()
                    ],
                }
            )

        def _tree(self, m: re.Match[str], name: str, commit: str, files: dict[str, bytes]) -> None:
            base = (m["path"] or "").strip("/")
            recursive = "recursive=true" in (urlparse(self.path).query or "").lower()
            self._json(_listing(files, base, recursive))

        def _paths_info(
            self, m: re.Match[str], name: str, commit: str, files: dict[str, bytes]
        ) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qs(self.rfile.read(length).decode()) if length else {}
            wanted = form.get("paths", [])
            found = [e for e in _listing(files, "", True, dirs=True) if e["path"] in wanted]
            self._json(found)

        def do_POST(self) -> None:
            path = unquote(urlparse(self.path).path)
            hub.note("POST", path, "")
            if (m := _PATHS_INFO.match(path)) and (repo := hub.repos.get(m["repo"])):
                commit = repo.resolve(m["rev"])
                if commit is not None:
                    return self._paths_info(m, m["repo"], commit, repo.commits[commit])
            self._missing("RepoNotFound")

        def _resolve(
            self, m: re.Match[str], name: str, commit: str, files: dict[str, bytes]
        ) -> None:
            data = files.get(m["file"])
            if data is None:
                return self._missing("EntryNotFound")
            headers = {
                "X-Repo-Commit": commit,
                "ETag": f'"{_etag(data)}"',
                "Accept-Ranges": "bytes",
                "Content-Type": "application/octet-stream",
            }
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
