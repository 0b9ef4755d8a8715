"""Resolving where the cluster is: --address, else RAY_ADDRESS, else a stack's port-forward."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

# re-exported (`as`): the CLI reaches the client only through the runs library
from jobs.client.dashboard import Dashboard as Dashboard
from jobs.client.net import dashboard_answers
from jobs.common.errors import Unreachable, UsageError
from jobs.runs import stack

if TYPE_CHECKING:
    from components.stack_outputs import StackOutputs

DASHBOARD_PORT = 8265
NO_ADDRESS_HINT = "pass --address http://HOST:8265, set RAY_ADDRESS, or pass --stack NAME"


@dataclass(frozen=True)
class Where:
    """How the user named the cluster (before anything is contacted)."""

    address: str | None  # a dashboard URL from --address or RAY_ADDRESS
    stack: str | None
    source: str  # "--address", "RAY_ADDRESS" or "--stack"
    # The stack's outputs once read: `pulumi stack output` takes about a second, so a command
    # reads them once, for its plan, its supervision and its port-forward alike.
    _read: StackOutputs | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        return f"--stack {self.stack}" if self.stack else f"--address {self.address}"

    def outputs(self) -> StackOutputs | None:
        """The stack's outputs, read on first use (None when the cluster was named by address)."""
        if self.stack is None:
            return None
        if self._read is None:
            object.__setattr__(self, "_read", stack.read(self.stack))
        return self._read


def normalise(address: str) -> str:
    """A dashboard URL from what users type: `host:8265` gains `http://`; `ray://` is refused."""
    address = address.strip().rstrip("/")
    if address.startswith("ray://"):
        raise UsageError(
            f"{address} is a Ray Client address; jobs talk to the dashboard",
            "use the dashboard address, e.g. http://HOST:8265",
        )
    if "://" not in address:
        try:
            port = urlsplit(f"http://{address}").port
        except ValueError:
            raise UsageError(
                f"address {address}: the port is not a number",
                "use the dashboard address, e.g. http://HOST:8265",
            ) from None
        # A bare host is Ray's dashboard on its default port (`ray start --dashboard-port`,
        # 8265), not HTTP's 80; an address with a scheme keeps the scheme's (an ingress).
        address = f"http://{address}" + ("" if port else f":{DASHBOARD_PORT}")
    return address


def choose(
    address: str | None, stack_name: str | None, env: Mapping[str, str] | None = None
) -> Where:
    """Pick the source in the documented order, refusing ambiguous combinations."""
    env = os.environ if env is None else env
    if address and stack_name:
        raise UsageError("--address and --stack both given", "pass only one of them")
    if address:
        return Where(normalise(address), None, "--address")
    from_env = env.get("RAY_ADDRESS", "").strip()
    if from_env and stack_name:
        # RAY_ADDRESS outranks --stack, but a stale variable silently sending a run to another
        # cluster than the one named on the command line is worse than asking.
        raise UsageError(
            f"RAY_ADDRESS is set ({from_env}) and --stack {stack_name} given",
            "unset RAY_ADDRESS to use the stack, or drop --stack",
        )
    if from_env:
        return Where(normalise(from_env), None, "RAY_ADDRESS")
    if stack_name:
        return Where(None, stack_name, "--stack")
    raise UsageError("no cluster given", NO_ADDRESS_HINT)


@dataclass(frozen=True)
class Connected:
    """A reachable dashboard URL (a loopback port-forward when the cluster came from a stack)."""

    url: str


@contextmanager
def connect(
    where: Where, spinner: Callable[[str], AbstractContextManager[object]] = nullcontext
) -> Iterator[Connected]:
    """Make the dashboard reachable for the life of the block (port-forward when a stack)."""
    if where.stack is None:
        assert where.address is not None
        if not dashboard_answers(where.address, timeout=5.0):
            raise Unreachable(
                f"no Ray dashboard answers at {where.address} ({where.source})",
                "check the address and that the cluster is up; "
                "on GKE use --stack NAME to port-forward",
            )
        yield Connected(where.address)
        return
    from jobs.runs import portforward  # lazy, for start-up time: --stack only

    outputs = where.outputs()
    assert outputs is not None  # where.stack is set
    with portforward.open_forward(outputs, spinner=spinner) as url:
        yield Connected(url)


@contextmanager
def reach(
    where: Where, spinner: Callable[[str], AbstractContextManager[object]] = nullcontext
) -> Iterator[Dashboard]:
    """The cluster's Jobs API, reachable for the life of the block (a stack's outputs read once,
    through `where.outputs()`)."""
    with connect(where, spinner=spinner) as conn:
        yield Dashboard(conn.url)
