"""Working-dir packaging: excludes, and a size that matches the zip Ray builds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ray._private.runtime_env.packaging import _zip_files

from jobs.common.errors import UsageError
from jobs.runs import workdir


def make_tree(root: Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "a.py").write_text("print('a')\n" * 50)
    (root / "main.py").write_text("import pkg\n")
    (root / "empty").mkdir()
    for excluded in (
        ".git/objects/big",
        ".venv/lib/big",
        "pkg/__pycache__/a.pyc",
        ".pulumi/stacks/dev.json",
        "Pulumi.dev.yaml",
        ".env",
        "data/ignored.bin",
        "pkg/local.tmp",
    ):
        path = root / excluded
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(4096))
    (root / ".gitignore").write_text("data/\n")
    (root / "pkg" / ".rayignore").write_text("*.tmp\n")


def test_measure_matches_the_zip_ray_builds(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    make_tree(src)
    zip_path = tmp_path / "pkg.zip"
    _zip_files(str(src), list(workdir.DEFAULT_EXCLUDES), str(zip_path), include_gitignore=True)
    package = workdir.measure(src)
    assert package.zip_bytes == zip_path.stat().st_size
    names = {n for n, _ in workdir.measure(src, top=100).largest}
    assert names == {"pkg/a.py", "main.py", ".gitignore", "pkg/.rayignore"}


def test_secrets_and_state_are_excluded(tmp_path):
    make_tree(tmp_path)
    names = {n for n, _ in workdir.measure(tmp_path, top=100).largest}
    assert not any(
        n.startswith((".git/", ".venv/", ".pulumi/")) or n in ("Pulumi.dev.yaml", ".env")
        for n in names
    )


def test_oversize_is_refused_naming_the_largest_files(tmp_path):
    for i, mib in enumerate((40, 35, 30)):
        (tmp_path / f"blob{i}.bin").write_bytes(os.urandom(mib * 1024 * 1024))
    with pytest.raises(UsageError) as e:
        workdir.check(tmp_path)
    assert "blob0.bin (40.0 MiB)" in e.value.message and "blob1.bin" in e.value.message
    assert "100.0 MiB" in e.value.message


def test_excluded_bulk_does_not_count(tmp_path):
    (tmp_path / ".venv").mkdir()
    big = tmp_path / ".venv" / "huge.bin"
    with big.open("wb") as f:
        f.truncate(200 * 1024 * 1024)
    (tmp_path / "run.py").write_text("print(1)\n")
    assert workdir.check(tmp_path).files == 1


CREDENTIAL_FILES = (
    "id_rsa",
    "id_rsa.pub",
    ".ssh/id_ed25519",
    ".netrc",
    ".pypirc",
    ".npmrc",
    "home/.config/gcloud/application_default_credentials.json",
    ".config/gcloud/credentials.db",
    "sa-key.json",
    "conf/my-sa-key.json",
    "credentials.json",
    "sub/credentials.json",
)


def test_credential_files_are_excluded_and_ray_agrees(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text("print(1)\n")
    (src / "config.json").write_text("{}\n")
    for name in CREDENTIAL_FILES:
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("secret material\n")
    names = {n for n, _ in workdir.measure(src, top=100).largest}
    assert names == {"train.py", "config.json"}
    # Ray's own packer, given the same excludes, drops the same files.
    zip_path = tmp_path / "pkg.zip"
    _zip_files(str(src), list(workdir.DEFAULT_EXCLUDES), str(zip_path), include_gitignore=True)
    import zipfile

    with zipfile.ZipFile(zip_path) as z:
        files = {n for n in z.namelist() if not n.endswith("/")}
    assert files == {"train.py", "config.json"}
