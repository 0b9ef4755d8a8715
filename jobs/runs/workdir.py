"""Packaging checks for an uploaded working_dir: what is excluded and whether it fits Ray's cap."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from components.contract import LUSTRE_MOUNT_PATH
from jobs.common.errors import UsageError

# The dashboard refuses request bodies above this (DASHBOARD_CLIENT_MAX_SIZE, the same in Ray
# 2.46 and 2.60): an upload above it fails with HTTP 413 after the whole zip was sent (§0.4).
MAX_UPLOAD_BYTES = 100 * 1024 * 1024

# Never worth shipping, and some hold secrets: version control, virtualenvs, caches, the
# Pulumi stack state and stack settings (Pulumi.<stack>.yaml carries encrypted secrets and
# the stack's encryption salt; jobs never need them), dotenv files, kubeconfigs and keys:
# SSH private keys, package-index and netrc credentials, gcloud's credential store, and
# Google service-account key files (`gcloud iam service-accounts keys create` suggests
# `*-key.json`; client libraries read `credentials.json`). Patterns without an inner slash
# match at any depth (gitwildmatch); `**/` makes the gcloud directory match at any depth too.
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git/",
    ".venv/",
    "venv/",
    "__pycache__/",
    "*.pyc",
    ".pytest_cache/",
    ".hypothesis/",
    ".mypy_cache/",
    ".ruff_cache/",
    "node_modules/",
    ".pulumi/",
    "Pulumi.*.yaml",
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "kubeconfig",
    ".kube/",
    "id_rsa*",
    "id_ed25519*",
    ".netrc",
    ".pypirc",
    ".npmrc",
    "**/.config/gcloud/",
    "*-key.json",
    "credentials.json",
)

# Ray writes a stored (uncompressed) zip: ZipFile(..., "w") with the default ZIP_STORED
# (packaging.py `_zip_files`). Each file costs its bytes plus a local header (30 bytes + name)
# and a central-directory entry (46 bytes + name); the archive ends with a 22-byte record.
_LOCAL_HEADER = 30
_CENTRAL_ENTRY = 46
_END_RECORD = 22


@dataclass(frozen=True)
class Package:
    """What Ray would upload: the zip's size and the largest files in it."""

    root: Path
    zip_bytes: int
    files: int
    largest: tuple[tuple[str, int], ...]

    @property
    def fits(self) -> bool:
        return self.zip_bytes <= MAX_UPLOAD_BYTES


def _matcher(base: Path, patterns: list[str]) -> Callable[[Path], bool]:
    # The matcher Ray's own packer uses (ray/_private/runtime_env/packaging.py, Ray 2.60), so
    # our measurement and Ray's zip agree on what is excluded. Ray is pinned, so this import is
    # stable; it imports all of `ray` (~0.7 s), so only a command that uploads a dir pays it.
    from ray._private.thirdparty.pathspec.pathspec import PathSpec

    spec = PathSpec.from_lines("gitwildmatch", patterns)
    return lambda p: spec.match_file(str(p.relative_to(base)) + ("/" if p.is_dir() else ""))


def _ignore_files(directory: Path) -> list[Callable[[Path], bool]]:
    # Ray honours .gitignore (unless RAY_RUNTIME_ENV_IGNORE_GITIGNORE=1) and always .rayignore,
    # at every directory level (reference §4.1).
    names = [".rayignore"]
    if os.environ.get("RAY_RUNTIME_ENV_IGNORE_GITIGNORE") != "1":
        names.append(".gitignore")
    out = []
    for name in names:
        f = directory / name
        if f.is_file():
            out.append(_matcher(directory, f.read_text(errors="replace").splitlines()))
    return out


def measure(root: Path, excludes: list[str] | None = None, top: int = 3) -> Package:
    """Walk `root` as Ray's packer does and size the zip it would build."""
    root = root.resolve()
    if not root.is_dir():
        raise UsageError(
            f"working directory {root} does not exist", "pass an existing --working-dir"
        )
    rules = [_matcher(root, list(DEFAULT_EXCLUDES if excludes is None else excludes))]
    total, count = _END_RECORD, 0
    sizes: list[tuple[str, int]] = []

    def walk(path: Path, rules: list[Callable[[Path], bool]]) -> None:
        nonlocal total, count
        local = rules + (_ignore_files(path) if path.is_dir() else [])
        if path != root and any(rule(path) for rule in local):
            return
        if path.is_dir():
            children = list(path.iterdir())
            if not children and path != root:
                total += _entry_overhead(path.relative_to(root).as_posix() + "/")
            for child in children:
                walk(child, local)
        elif path.is_file():
            name = path.relative_to(root).as_posix()
            size = path.stat().st_size
            total += size + _entry_overhead(name)
            count += 1
            sizes.append((name, size))

    walk(root, [rules[0]])
    sizes.sort(key=lambda item: item[1], reverse=True)
    return Package(root, total, count, tuple(sizes[:top]))


def _entry_overhead(name: str) -> int:
    n = len(name.encode())
    return _LOCAL_HEADER + _CENTRAL_ENTRY + 2 * n


def _mib(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB"


def check(root: Path, excludes: list[str] | None = None) -> Package:
    """Refuse, before any upload, a directory whose zip would exceed the dashboard's cap."""
    package = measure(root, excludes)
    if not package.fits:
        biggest = ", ".join(f"{name} ({_mib(size)})" for name, size in package.largest)
        raise UsageError(
            f"working directory {package.root} would upload {_mib(package.zip_bytes)}, above "
            f"Ray's {_mib(MAX_UPLOAD_BYTES)} limit; largest files: {biggest}",
            f"list big files in .rayignore, or put data on {LUSTRE_MOUNT_PATH} and read it from there",
        )
    return package


def runtime_env(root: Path) -> dict[str, object]:
    """The runtime_env fields for uploading `root` with our excludes."""
    return {"working_dir": str(root.resolve()), "excludes": list(DEFAULT_EXCLUDES)}
