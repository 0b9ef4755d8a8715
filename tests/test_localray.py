"""The tests' private Ray head: its ports are out of the kernel's reach, a lost start-up race is
started again on new ports, any other failure is raised at once."""

from __future__ import annotations

import socket

import pytest

from tests import localray


def test_ports_are_distinct_and_below_the_ephemeral_range() -> None:
    floor = localray.ephemeral_port_floor()
    for _ in range(20):
        ports = localray.distinct_free_ports(9)
        assert len(set(ports)) == 9
        assert all(p in localray.OWN_PORTS and p < floor for p in ports), ports


def test_worker_ports_are_below_the_ephemeral_range_and_apart_from_the_components() -> None:
    lo, hi = localray.free_port_range(40)
    assert hi - lo == 39
    assert localray.WORKER_PORTS.start <= lo and hi < localray.WORKER_PORTS.stop
    assert hi < localray.ephemeral_port_floor()
    assert not set(localray.OWN_PORTS) & set(localray.WORKER_PORTS)


def test_a_port_held_by_another_socket_is_never_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        taken = int(held.getsockname()[1])
        # Only the taken port and one other are on offer: the other must be the one chosen.
        other = next(p for p in range(10000, 20000) if p != taken and localray.port_is_free(p))
        monkeypatch.setattr(localray, "OWN_PORTS", [taken, other])
        assert localray.distinct_free_ports(1) == [other]


def test_too_few_free_ports_is_an_error_naming_the_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(localray, "OWN_PORTS", range(10000, 10001))
    with pytest.raises(RuntimeError, match="no 2 free ports found in 10000-10000"):
        localray.distinct_free_ports(2)


@pytest.mark.parametrize(
    "tail",
    [
        # Ray 2.48.0's GCS on a port another process bound first (fresh-clone CI, 2026-12-07).
        "(gcs_server) grpc_server.cc:130:  Check failed: server_ Failed to start the grpc server. "
        "The specified port is 59655.",
        "OSError: [Errno 98] Address already in use",
        # Ray's dashboard window ran out (services.py `start_api_server`, Ray 2.46.0).
        "Failed to start the dashboard; it contains the error message from the dashboard",
    ],
)
def test_a_lost_start_up_race_is_tried_again(tail: str) -> None:
    assert localray.start_failure(tail) is localray.StartRaced


def test_any_other_start_failure_is_raised_at_once() -> None:
    tail = "ValueError: --num-cpus must be a non-negative integer"
    assert localray.start_failure(tail) is RuntimeError


@pytest.mark.ray
def test_a_head_whose_gcs_port_was_taken_starts_again_on_new_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_choice = localray.distinct_free_ports
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", real_choice(1)[0]))
    listener.listen()
    taken = int(listener.getsockname()[1])
    draws: list[list[int]] = []

    def gcs_port_taken_first(n: int) -> list[int]:
        ports = real_choice(n)
        if n == 9 and not draws:
            ports[2] = taken  # the GCS's place in localray's draw of nine
        if n == 9:
            draws.append(ports)
        return ports

    monkeypatch.setattr(localray, "distinct_free_ports", gcs_port_taken_first)
    try:
        cluster = localray.start(num_cpus=1)
    finally:
        listener.close()
    try:
        assert len(draws) == 2, draws
        assert f"--port={draws[1][2]}" in cluster.process.args
        assert localray.dashboard_answers(cluster.dashboard_url)
    finally:
        cluster.stop()


def test_a_port_race_told_only_in_a_component_s_own_log_is_tried_again(tmp_path) -> None:
    """`ray start` prints only that the raylet exited; the raylet's own log says why."""
    temp_dir = tmp_path / "rj-head"
    logs = temp_dir / "session_2026-12-07_11-00-00_000000_1" / "logs"
    logs.mkdir(parents=True)
    (logs / "raylet.err").write_text("bind: Address already in use\n")
    start_log = tmp_path / "rj-head.start.log"
    start_log.write_text("Some Ray subprocesses exited unexpectedly:\n  raylet [exit code=1]\n")
    cluster = localray.LocalRay("http://127.0.0.1:1", temp_dir, None, start_log)  # type: ignore[arg-type]
    assert localray.start_failure(cluster.log_tail()) is RuntimeError
    assert localray.start_failure(cluster.start_logs()) is localray.StartRaced
