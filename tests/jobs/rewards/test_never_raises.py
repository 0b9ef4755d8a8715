"""The reward never raises and never blocks past the bound it states.

Every input gets a score and a reason: any code length, any problem limits, any test set, a
refusing, absent, hanging or garbling service. The fault service below is a real HTTP server on
loopback (each path one fault); the in-process cases run the real g++ in real boxes.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.data.code_contests import to_row
from jobs.rewards import code_contests as cc
from jobs.rewards import sandbox
from jobs.rewards.batch import compute_score_batch
from tests.jobs.rewards import attacks as a
from tests.jobs.rewards.serving import Service

pytestmark = pytest.mark.compiler

# A correct solution made longer than Codeforces' 64 KiB by a lookup table.
TABLE = "static const int table[] = {" + ",".join(str(i % 997) for i in range(20000)) + "};\n"
LONG_SUM = TABLE + a.SUM.replace("printf", "table[0] + printf")
SCORES = {cc.NO_CODE, cc.COMPILE_ERROR, cc.FAULT}


class _FaultHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        mode = self.path.strip("/").split("/")[0]
        if mode == "drop":  # read nothing, close: the client sees a reset or an empty answer
            self.close_connection = True
            return
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        status, body = {
            "garbage": (200, b"{not json"),
            "wrong-shape": (200, b'{"compiled": "maybe"}'),
            "too-few": (200, b'{"compiled": true, "results": [], "isolation": "x"}'),
            "busy": (503, b'{"error": "executor busy"}'),
            "refused-token": (401, b"{}"),
            "too-large": (413, b'{"error": "too large"}'),
            "server-error": (500, b"boom"),
        }[mode]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def faults() -> Iterator[dict[str, str]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FaultHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # the kernel accepts, nobody ever answers
    urls = {
        mode: f"{base}/{mode}"
        for mode in (
            "drop",
            "garbage",
            "wrong-shape",
            "too-few",
            "busy",
            "refused-token",
            "too-large",
            "server-error",
        )
    }
    urls["absent"] = f"http://127.0.0.1:{closed.getsockname()[1]}"
    urls["silent"] = f"http://127.0.0.1:{silent.getsockname()[1]}"
    yield urls
    server.shutdown()
    server.server_close()
    closed.close()
    silent.close()


def _codes() -> st.SearchStrategy[str]:
    body = st.sampled_from([a.SUM, "int main( {", "", "int main(){for(;;);}", "\x00\ud800"])
    pad = st.integers(min_value=0, max_value=3 * sandbox.MAX_CODE_BYTES)
    return st.builds(lambda b, n: b + "\n//" + "x" * n, body, pad)


def _solutions() -> st.SearchStrategy[object]:
    wrapped = st.builds(a.answer, _codes())
    return st.one_of(
        wrapped, st.text(max_size=200), st.none(), st.integers(), st.binary(max_size=50)
    )


_numbers = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=5),
    st.dictionaries(st.sampled_from(["seconds", "nanos"]), st.floats(-1e9, 1e9), max_size=2),
)
_tests = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.fixed_dictionaries(
        {
            "input": st.lists(st.text(max_size=30), max_size=5),
            "output": st.lists(st.text(max_size=30), max_size=5),
        }
    ),
)


def _truths() -> st.SearchStrategy[object]:
    truth = st.fixed_dictionaries(
        {"name": st.text(max_size=10), "time_limit": _numbers, "memory_limit_bytes": _numbers},
        optional={"private_tests": _tests, "public_tests": _tests},
    )
    return st.one_of(truth, truth.map(json.dumps), st.text(max_size=50), st.none(), st.integers())


def _is_score(value: object) -> bool:
    return isinstance(value, float) and (value in SCORES or 0.0 <= value <= 1.0)


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    solution=_solutions(),
    truth=_truths(),
    fault=st.sampled_from(
        [
            "drop",
            "garbage",
            "wrong-shape",
            "too-few",
            "busy",
            "refused-token",
            "too-large",
            "server-error",
            "absent",
            "silent",
        ]
    ),
    max_tests=st.integers(min_value=-5, max_value=300),
)
def test_any_input_against_any_service_fault_gets_a_score_within_the_budget(
    faults: dict[str, str], solution: object, truth: object, fault: str, max_tests: int
) -> None:
    """Never a raise, never past budget + slack."""
    budget = 0.05
    start = time.monotonic()
    verdict = cc.judge_solution(
        solution, truth, max_tests=max_tests, sandbox_url=faults[fault], budget_s=budget
    )
    elapsed = time.monotonic() - start
    assert _is_score(verdict.score) and verdict.reason
    assert elapsed <= cc.remote_bound_s(budget), (elapsed, verdict)


@settings(max_examples=1000, deadline=None)
@given(
    time_limit=_numbers,
    memory=_numbers,
)
def test_any_problem_limits_become_limits_inside_the_sandboxs_bounds(
    time_limit: object, memory: object
) -> None:
    """Limits outside the sandbox's bounds are clamped, never a validation error."""
    try:
        limits = cc.limits_for({"time_limit": time_limit, "memory_limit_bytes": memory})
    except ValueError as e:  # a value that is not a number at all is the data's fault, named
        assert "time_limit" in str(e) or "memory_limit_bytes" in str(e)
        return
    assert 0 < limits.time_s <= 20 and 16 * 2**20 <= limits.memory_bytes <= 2 * 2**30


@settings(max_examples=500, deadline=None)
@given(
    inputs=st.lists(st.text(max_size=3000), min_size=1, max_size=40),
    cap=st.integers(min_value=2000, max_value=40000),
    per_request=st.integers(min_value=1, max_value=10),
)
def test_requests_are_cut_to_fit_the_body_limit(
    inputs: list[str], cap: int, per_request: int
) -> None:
    """A long test set goes as several requests, each within the service's limit."""
    cases = [sandbox.Case(input=i, output=i[::-1]) for i in inputs]
    groups = cc.request_chunks(a.SUM, cases, sandbox.Limits(), cap, per_request)
    assert sorted(i for g in groups for i in g) == list(range(len(cases)))
    for group in groups:
        body = cc._body(a.SUM, [cases[i] for i in group], sandbox.Limits())
        assert len(group) <= per_request
        assert len(body) <= cap or len(group) == 1


# ------------------------------------------------------------------------- the real compiler


@pytest.fixture(scope="module")
def service() -> Iterator[Service]:
    s = Service()
    yield s
    s.stop()


def test_code_over_64_kib_scores_the_same_in_process_and_through_the_service(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service refused such code with a 400 and the batch raised; now both paths give
    the judge's answer (a source over Codeforces' 64 KiB is refused: a compile error)."""
    monkeypatch.delenv(cc.SANDBOX_URL_ENV, raising=False)
    monkeypatch.setenv(cc.SANDBOX_TOKEN_ENV, service.token)
    assert len(LONG_SUM.encode()) > sandbox.MAX_CODE_BYTES
    local = cc.judge_solution(a.answer(LONG_SUM), a.SUM_TRUTH)
    remote = cc.judge_solution(a.answer(LONG_SUM), a.SUM_TRUTH, sandbox_url=service.url)
    assert local == remote and local.score == cc.COMPILE_ERROR and "65536" in local.reason
    scores = compute_score_batch(
        ["code_contests"] * 2,
        [a.answer(LONG_SUM), a.answer(a.SUM)],
        [a.SUM_TRUTH] * 2,
        sandbox_url=service.url,
    )
    assert scores == [cc.COMPILE_ERROR, 1.0]


@pytest.mark.parametrize(
    ("time_limit", "memory"),
    [(30.0, 256 * 2**20), (2.0, 8 * 2**20), (2.0, 4 * 2**30), (1e9, 1)],
)
def test_problem_limits_outside_the_sandboxs_bounds_are_clamped_not_raised(
    time_limit: float, memory: int, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Time > 20 s, memory < 16 MiB or > 2 GiB raised a validation error."""
    monkeypatch.setenv(cc.SANDBOX_TOKEN_ENV, service.token)
    truth = json.loads(a.SUM_TRUTH) | {"time_limit": time_limit, "memory_limit_bytes": memory}
    assert cc.compute_score("code_contests", a.answer(a.SUM), truth) == 1.0
    assert cc.compute_score("code_contests", a.answer(a.SUM), truth, sandbox_url=service.url) == 1.0


def test_the_data_converter_clamps_the_limits_it_writes() -> None:
    """The converter wrote limits the sandbox refuses."""
    record = {
        "name": "p",
        "description": "d",
        "cf_rating": 800,
        "time_limit": {"seconds": 60, "nanos": 0},
        "memory_limit_bytes": 8 * 2**30,
        "private_tests": {"input": ["1"], "output": ["1"]},
        "public_tests": {"input": [], "output": []},
    }
    _tier, row = to_row(record, 0)
    truth = json.loads(row["reward_model"]["ground_truth"])
    assert truth["time_limit"] == 20.0 and truth["memory_limit_bytes"] == 2 * 2**30
    assert "Time limit: 20 seconds" in row["prompt"][0]["content"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    # No endless loop here: with a limit clamped to 20 s each example would take a minute; the
    # time limits have tests of their own (test_sandbox.py).
    code=st.sampled_from([a.SUM, "int main( {", "int main(){return 3;}", LONG_SUM, a.SUM + "//é"]),
    time_limit=st.sampled_from([0.3, 1, 25, -1]),
    memory=st.sampled_from([1, 64 * 2**20, 2**40]),
    tests=st.lists(st.sampled_from([("1 2", "3"), ("5 5", "10"), ("", "")]), max_size=3),
)
def test_in_process_any_code_and_limits_get_a_score_within_the_bound(
    code: str, time_limit: float, memory: int, tests: list[tuple[str, str]]
) -> None:
    """With the real compiler: never raises, within call_bound_s."""
    truth = {
        "name": "p",
        "time_limit": time_limit,
        "memory_limit_bytes": memory,
        "private_tests": {"input": [t[0] for t in tests], "output": [t[1] for t in tests]},
    }
    start = time.monotonic()
    verdict = cc.judge_solution(a.answer(code), truth)
    elapsed = time.monotonic() - start
    assert _is_score(verdict.score) and verdict.reason
    limits = cc.limits_for(truth)
    assert elapsed <= cc.call_bound_s(limits, max(1, len(tests)))
    if not tests:
        assert verdict.score == cc.FAULT and "no private or public tests" in verdict.reason
