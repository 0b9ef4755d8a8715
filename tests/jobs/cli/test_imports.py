"""What a command imports: the CLI must not pay for Ray (~0.7 s) where it only talks HTTP."""

from __future__ import annotations

import subprocess
import sys

from tests.jobs.conftest import REPO


def _imported_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(done.stdout.split())


def test_importing_the_cli_imports_neither_ray_nor_the_websocket_client():
    loaded = _imported_after("import jobs.cli.app")
    # `ray` is what `ray job submit` pays for; aiohttp only `--follow`/`logs -f` needs;
    # requests only Ray's upload client.
    assert not {"ray", "aiohttp", "requests"} & loaded, sorted(
        m for m in loaded if m.split(".")[0] in {"ray", "aiohttp", "requests"}
    )[:5]
    assert "jobs.client.dashboard" in loaded  # the probe did import the CLI and its client
