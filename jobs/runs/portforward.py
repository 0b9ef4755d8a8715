"""A `kubectl port-forward` to the Ray head's dashboard, alive only for one command."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import IO, TYPE_CHECKING

from jobs.client.net import dashboard_answers, free_port
from jobs.common.errors import Unreachable
from jobs.common.redact import redact

if TYPE_CHECKING:
    from components.stack_outputs import StackOutputs

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

# Long enough for a cold kubectl auth plugin (gke-gcloud-auth-plugin) and the API server.
DEFAULT_TIMEOUT_S = 30.0


def timeout_from_env() -> float:
    return float(os.environ.get("JOBS_PORT_FORWARD_TIMEOUT", DEFAULT_TIMEOUT_S))


def _contexts(kubectl: str) -> list[str]:
    try:
        done = subprocess.run(
            [kubectl, "config", "get-contexts", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=15,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return done.stdout.split() if done.returncode == 0 else []


def command(kubectl: str, outputs: StackOutputs, local_port: int) -> list[str]:
    args = [kubectl]
    # Prefer the stack's own GKE context when the kubeconfig has it, so a user whose current
    # context points at another cluster does not forward to the wrong Ray; else the current one.
    if outputs.kube_context() in _contexts(kubectl):
        args += ["--context", outputs.kube_context()]
    return args + [
        "--namespace",
        outputs.ray_namespace,
        "port-forward",
        f"svc/{outputs.ray_head_service}",
        f"{local_port}:{outputs.ray_dashboard_port}",
        "--address",
        "127.0.0.1",
    ]


def _die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that makes kubectl get SIGTERM when this process dies, however it dies
    (SIGKILL, a crash): Linux prctl(PR_SET_PDEATHSIG), see prctl(2). None elsewhere: there
    the signal handlers in `jobs.cli.app.main` are the only guard."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        # The parent may have died between fork and prctl; then no signal would ever come.
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def _wait(
    proc: subprocess.Popen[bytes], url: str, timeout_s: float, errors: IO[bytes], hint: str
) -> None:
    deadline = time.monotonic() + timeout_s
    while not dashboard_answers(url, timeout=1.0):
        if proc.poll() is not None:
            errors.seek(0)
            lines = errors.read().decode(errors="replace").strip().splitlines()
            why = lines[-1] if lines else f"exit status {proc.returncode}"
            raise Unreachable(f"kubectl port-forward failed: {redact(why)}", hint)
        if time.monotonic() > deadline:
            raise Unreachable(
                "the Ray dashboard did not answer through kubectl port-forward "
                f"within {timeout_s:.0f} s",
                hint,
            )
        time.sleep(0.2)


@contextmanager
def open_forward(
    outputs: StackOutputs,
    timeout_s: float | None = None,
    spinner: Callable[[str], AbstractContextManager[object]] = nullcontext,
) -> Iterator[str]:
    """Yield the local dashboard URL; the kubectl process ends when the block does (even on ^C)."""
    hint = (
        f"check `kubectl get svc -n {outputs.ray_namespace} {outputs.ray_head_service}`; "
        f"for credentials run: {outputs.get_credentials_command()}"
    )
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise Unreachable(
            "kubectl is not on PATH",
            f"install kubectl, then run: {outputs.get_credentials_command()}",
        )
    timeout_s = timeout_from_env() if timeout_s is None else timeout_s
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # stderr to a file, not a pipe: over a long --follow an unread pipe would fill and stall it.
    with tempfile.TemporaryFile() as errors:
        # Own session: our ^C handling decides when kubectl ends, and killpg reaches its children.
        # The death signal covers what no handler can: this process being SIGKILLed.
        proc = subprocess.Popen(
            command(kubectl, outputs, port),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
            preexec_fn=_die_with_parent(),
        )
        try:
            message = f"port-forward to svc/{outputs.ray_head_service} in {outputs.ray_namespace}"
            with spinner(message):
                _wait(proc, url, timeout_s, errors, hint)
            yield url
        finally:
            _terminate(proc)
