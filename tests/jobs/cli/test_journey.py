"""A run's life read at every moment: scripted lives on a real local Ray, every read command at each phase.

Each life is a supervised `run --gpus 1` on a local head with a fake GPU raylet (tests/jobs/gpu_node.py)
that a test kills as a spot reclaim and brings back as its replacement. The trainer prints veRL's
step lines and writes veRL's checkpoint layout, and holds still at the moments a phase is read (so
every view is read over the same facts). At every phase every read command runs, from the cluster
and from the runs root: each answers with its documented exit code and never with Ray's error or a
traceback, and every view tells the same state, step, attempt count, duration and GPU-hours.

The table JOURNEY names each life, its phases and the state each phase shows; READS names every
read command. A command the CLI gains is refused here until it is classified (READS or WRITES),
and a run state the CLI can show until a phase shows it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import ray  # noqa: F401  (makes Ray's vendored psutil importable)

# isort: split
import psutil  # Ray's vendored copy, importable once `ray` is imported
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head import events as ev
from jobs.head.run_store import RunStore
from jobs.runs import state
from jobs.staging.entry import HUB_UNREACHABLE_EXIT
from tests import localray
from tests.jobs.conftest import wait_until
from tests.jobs.gpu_node import GpuNode

pytestmark = pytest.mark.ray

FAST = dict(
    JOBS_SUPERVISOR_POLL_S="0.5",
    JOBS_SUPERVISOR_SETTLE_S="2",
    JOBS_SUPERVISOR_PROGRESS_S="3",
    JOBS_SUPERVISOR_MAX_WAIT_S="300",
    JOBS_SUPERVISOR_LEASE_S="3",
    JOBS_SUPERVISOR_GAUGES_S="1",
)
FAST_HEALTH = localray.FAST_HEALTH

# Every read command, as the user types it ({run}, {url}, {root}, {out} filled per phase). The
# runs-root forms read the record on shared storage, without the head.
READS: dict[str, tuple[str, ...]] = {
    "list": ("list", "--address", "{url}"),
    "list --json": ("list", "--json", "--address", "{url}"),
    "status": ("status", "{run}", "--address", "{url}"),
    "status --json": ("status", "{run}", "--json", "--address", "{url}"),
    "logs": ("logs", "{run}", "--address", "{url}"),
    "logs --tail": ("logs", "{run}", "--tail", "5", "--address", "{url}"),
    "report": ("report", "{run}", "--out", "{out}", "--address", "{url}"),
    "report --json": ("report", "{run}", "--json", "--out", "{out}", "--address", "{url}"),
    "cost": ("cost", "--address", "{url}"),
    "cost --json": ("cost", "--json", "--address", "{url}"),
    "checkpoints": ("checkpoints", "{run}", "--address", "{url}"),
    "checkpoints --json": ("checkpoints", "{run}", "--json", "--address", "{url}"),
    "export --dry-run": ("export", "{run}", "--dry-run", "--address", "{url}"),
    "list --runs-root": ("list", "--runs-root", "{root}"),
    "list --runs-root --json": ("list", "--json", "--runs-root", "{root}"),
    "status --runs-root": ("status", "{run}", "--runs-root", "{root}"),
    "status --runs-root --json": ("status", "{run}", "--json", "--runs-root", "{root}"),
    "logs --runs-root": ("logs", "{run}", "--runs-root", "{root}"),
}
# Commands that change something, or read nothing of a run (each has its own tests); with
# READS they are every command.
OTHERS = {"submit", "run", "stop", "stage", "data", "rearm", "export", "recipes", "eval"}
# `export` converts a recipe run's checkpoints: a `run` run is refused by name (exit 2, the
# documented usage error); every other read answers 0 at every phase.
EXIT: dict[str, int] = {"export --dry-run": 2}


# The phases of lives that never logged a step: every view says so alike (no step).
UNSTEPPED = {"gave up"}


@dataclass(frozen=True)
class Phase:
    name: str
    status: str  # the run's state every view shows
    attempts: int


# Every life, its phases in order, and what each phase shows.
JOURNEY: dict[str, list[Phase]] = {
    "preempted twice through a stockout": [
        Phase("training", "RUNNING", 1),
        Phase("waiting for GPUs after preemption 1", state.WAITING, 1),
        Phase("training again", "RUNNING", 2),
        Phase("waiting for GPUs after preemption 2", state.WAITING, 2),
        Phase("succeeded", "SUCCEEDED", 3),
    ],
    "stalled": [
        Phase("training after the stall", "RUNNING", 2),
        Phase("succeeded", "SUCCEEDED", 2),
    ],
    "crashed before ray.init": [Phase("gave up", "FAILED", 2)],
    "hub unreachable, resumed with a fix": [
        Phase("gave up", "FAILED", 1),
        Phase("succeeded after the resume", "SUCCEEDED", 2),
    ],
    "stopped": [
        Phase("training", "RUNNING", 1),
        Phase("stopped", "STOPPED", 1),
    ],
    "supervisor killed, then stopped": [
        Phase("training", "RUNNING", 1),
        Phase("unsupervised", state.UNSUPERVISED, 1),
        Phase("stopped", "STOPPED", 1),
    ],
}


@pytest.fixture(scope="module")
def head() -> Iterator[localray.LocalRay]:
    h = localray.start(num_cpus=2, extra_env=FAST_HEALTH)
    try:
        yield h
    finally:
        h.stop()


# The settle a failure waits for Ray to mark a lost node dead before it is judged a crash: Ray
# marks a SIGKILLed raylet dead 4-7 s after the kill on a quiet machine (FAST_HEALTH), later under
# load, and the attempt can end before that. It ends as soon as the death is seen, so a long one
# costs a preemption nothing; with 2 s a fresh clone's CI judged the preemption journey's first
# loss a crash, and with --max-restarts 0 the run ended. Only that journey loses nodes; the
# others keep 2 s, the back-off between attempts that die before their first step.
SETTLE_FOR_A_LOST_NODE = {"JOBS_SUPERVISOR_SETTLE_S": "30"}


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, list(args), env={**FAST, **(env or {}), "RAY_ADDRESS": None, "COLUMNS": "120"}
    )
    return result.exit_code, result.stdout, result.stderr


TRAINER = """
import os, sys, time
marks, ckpt, plan = {marks!r}, {ckpt!r}, {plan!r}
os.makedirs(marks, exist_ok=True)
n = len([f for f in os.listdir(marks) if f.startswith("attempt-")]) + 1
open(os.path.join(marks, f"attempt-{{n}}"), "w").close()
if os.path.exists(os.path.join(marks, "crash")):
    sys.exit(3)  # before any ray.init: a bad config, every time
if os.path.exists(os.path.join(marks, "no-hub")) and not os.path.exists(os.path.join(marks, "hub-ok")):
    print("error: cannot reach the Hub", flush=True)
    sys.exit({hub_exit})
tracker = os.path.join(ckpt, "latest_checkpointed_iteration.txt")
first = int(open(tracker).read()) + 1 if os.path.exists(tracker) else 1
steps, then = plan.get(n, (5, "end"))
for step in range(first, first + steps):
    print(f"step:{{step}} - critic/score/mean:0.{{step % 10}} - timing_s/step:0.1", flush=True)
    time.sleep(0.1)
    os.makedirs(os.path.join(ckpt, f"global_step_{{step}}", "actor"), exist_ok=True)
    with open(tracker + ".tmp", "w") as f:
        f.write(str(step))
    os.replace(tracker + ".tmp", tracker)
open(os.path.join(marks, f"held-{{n}}"), "w").close()
if then == "hold":
    time.sleep(3600)  # still, until its node is taken or it is stopped
elif then == "busy":
    # Busy on its checkpoint dir (no stall) until the test has read the phase and lets it end:
    # a fixed time ran out while 18 commands were read on a machine at load 20.
    release = os.path.join(marks, f"release-{{n}}")
    for _ in range(600):
        if os.path.exists(release):
            break
        open(os.path.join(ckpt, ".busy"), "w").close()
        time.sleep(0.5)
        os.remove(os.path.join(ckpt, ".busy"))
        time.sleep(0.5)
elif then == "silent":
    time.sleep(3600)  # a stall: nothing printed, nothing saved
print("done", flush=True)
"""


@dataclass
class Life:
    """One scripted run on the head: its name, runs root, trainer marks and GPU node."""

    head: localray.LocalRay
    tmp: Path
    plan: dict[int, tuple[int, str]]

    def __post_init__(self) -> None:
        self.run = f"jrny-{uuid.uuid4().hex[:8]}"
        self.root = self.tmp / "runs"
        self.root.mkdir()
        self.marks = self.tmp / "marks"
        self.ckpt = self.tmp / "ckpt"
        self.node = GpuNode(self.head, gpus=1)
        self.read_at: dict[str, dict[str, tuple[int, str]]] = {}

    @property
    def url(self) -> str:
        return self.head.dashboard_url

    def node_up(self) -> None:
        # A raylet's start takes seconds on a quiet machine, a minute or more on a busy one.
        self.node.join(timeout=240)

    def start(self, *extra: str, env: dict[str, str] | None = None) -> None:
        script = TRAINER.format(
            marks=str(self.marks),
            ckpt=str(self.ckpt),
            plan=self.plan,
            hub_exit=HUB_UNREACHABLE_EXIT,
        )
        code, _, err = cli(
            "run", "--address", self.url, "--name", self.run, "--gpus", "1",
            "--runs-root", str(self.root), "--checkpoint-dir", str(self.ckpt), *extra,
            "--", "python", "-c", script, env=env,
        )  # fmt: skip
        assert code == 0, err

    def mark(self, name: str) -> Path:
        return self.marks / name

    def held(self, attempt: int, timeout: float = 180) -> None:
        wait_until(
            lambda: self.mark(f"held-{attempt}").exists(), timeout, f"attempt {attempt} held"
        )
        # The supervisor keeps the attempt's step lines on the runs root every second.
        time.sleep(2.5)

    def events(self) -> list[str]:
        return [r["event"] for r in RunStore(self.root, self.run).events()]

    def until(self, event: str, timeout: float = 180) -> None:
        wait_until(lambda: event in self.events(), timeout, f"{self.run} records {event}")

    def counted(self, event: str, n: int, timeout: float = 120) -> None:
        """Wait until the run has recorded `event` `n` times; a run that ended first fails at
        once, with its decisions."""

        def seen() -> bool:
            records = list(RunStore(self.root, self.run).events())
            if sum(r["event"] == event for r in records) >= n:
                return True
            if ev.outcome(records) is not None:
                story = "\n".join(f"{r['event']}: {r.get('message', '')}" for r in records)
                raise AssertionError(f"{self.run} ended before {event} {n}:\n{story}")
            return False

        wait_until(seen, timeout, f"{self.run}: {event} {n}")

    def read(self, phase: Phase) -> dict[str, tuple[int, str]]:
        """Every read command at this phase; each answers as documented."""
        seen: dict[str, tuple[int, str]] = {}
        out = self.tmp / "report.html"
        began = time.monotonic()
        for label, template in READS.items():
            args = [
                a.format(run=self.run, url=self.url, root=str(self.root), out=str(out))
                for a in template
            ]
            code, stdout, stderr = cli(*args)
            text = stdout + stderr
            where = f"{phase.name}: `{' '.join(template)}`"
            assert code == EXIT.get(label, 0), f"{where} exited {code}: {text}"
            for wrong in ("status code 500", "Traceback", "error: error:"):
                assert wrong not in text, f"{where}: {text}"
            seen[label] = (code, stdout)
        self.read_at[phase.name] = seen
        agree(phase, self.run, seen, time.monotonic() - began)
        return seen

    def close(self) -> None:
        self.node.close()


def _row(rows: list[dict[str, Any]], run: str) -> dict[str, Any]:
    return next(r for r in rows if r["run"] == run)


def _attempts(rows: list[dict[str, Any]]) -> int:
    return len([a for a in rows if a.get("attempt") is not None])


def _total_gpu_hours(goodput: dict[str, Any]) -> float | None:
    hours = goodput.get("gpu_hours")
    return None if hours is None else sum(hours.values())


def _startups(goodput: dict[str, Any]) -> dict[str, float | None]:
    return {one["submission_id"]: one["startup_s"] for one in goodput["startups"]}


def agree(phase: Phase, run: str, seen: dict[str, tuple[int, str]], reading_s: float) -> None:
    """Every view of the run tells the same state, step, attempt count, duration, GPU-hours and
    start-up of each attempt; `reading_s`: how long the reads took (a live run's life grows meanwhile)."""
    as_json = {k: json.loads(v[1]) for k, v in seen.items() if k.endswith("--json")}
    listed = _row(as_json["list --json"], run)
    listed_root = _row(as_json["list --runs-root --json"], run)
    status = as_json["status --json"]
    status_root = as_json["status --runs-root --json"]
    costed = _row(as_json["cost --json"]["runs"], run)
    views = {
        "list": listed,
        "list --runs-root": listed_root,
        "status": status,
        "status --runs-root": status_root,
    }
    where = f"phase {phase.name!r}: {seen['status --runs-root'][1]}\n{seen['status'][1]}"
    assert {k: v["status"] for k, v in views.items()} == dict.fromkeys(views, phase.status), where
    attempts = {
        "list": _attempts(listed["attempts"]),
        "list --runs-root": len(listed_root["attempts"]),
        "status": status["attempt"],
        "status --runs-root": len(status_root["attempts"]),
        "report": as_json["report --json"]["attempts"],
        "cost": len(costed["attempts"]),
    }
    assert attempts == dict.fromkeys(attempts, phase.attempts), (where, attempts)
    steps = {
        "list": listed["step"],
        "list --runs-root": listed_root["step"],
        "status": (status.get("progress") or {}).get("step"),
        "status --runs-root": (status_root.get("progress") or {}).get("step"),
    }
    assert len(set(steps.values())) == 1, (where, steps)
    assert (None in steps.values()) == (phase.name in UNSTEPPED), (where, steps)
    # Record times are whole seconds, Ray's milliseconds: 2.5 s apart at most; a live run's
    # life grows while the phase is read (seconds on a quiet machine, more on a busy one).
    live = phase.status in ("RUNNING", state.WAITING, state.UNSUPERVISED)
    slack = 2.5 + (reading_s if live else 0.0)
    durations = {
        "list": listed["duration_s"],
        "list --runs-root": listed_root["duration_s"],
        "status": sum(status["goodput"]["seconds"].values()),
        "status --runs-root": sum(status_root["goodput"]["seconds"].values()),
    }
    assert max(durations.values()) - min(durations.values()) <= slack, (where, durations)
    gpu_hours = {
        "status": _total_gpu_hours(status["goodput"]),
        "status --runs-root": _total_gpu_hours(status_root["goodput"]),
        "cost": costed["gpu_hours"],
        "report": _total_gpu_hours(as_json["report --json"]["goodput"]),
    }
    assert None not in gpu_hours.values(), (where, gpu_hours)
    values = [float(v) for v in gpu_hours.values() if v is not None]
    assert max(values) - min(values) <= slack / 3600 + 0.002, (where, gpu_hours)
    # Each attempt's start-up (its GPUs asked for to its first step) alike, for the same attempts,
    # wherever a view could time the attempt's steps: the cluster cannot for an attempt whose log
    # went with its node (the runs root kept its step lines), and says so alike in status and report.
    startups = {
        "status": _startups(status["goodput"]),
        "status --runs-root": _startups(status_root["goodput"]),
        "report": _startups(as_json["report --json"]["goodput"]),
    }
    assert len({tuple(sorted(v)) for v in startups.values()}) == 1, (where, startups)
    cluster = [startups[k] for k in ("status", "report")]
    assert [{s: v is None for s, v in c.items()} for c in cluster] == 2 * [
        {s: v is None for s, v in cluster[0].items()}
    ], (where, startups)
    for sid in startups["status"]:
        known = [v[sid] for v in startups.values() if v[sid] is not None]
        assert not known or max(known) - min(known) <= slack, (where, sid, startups)


def _kill_supervisor(run: str) -> None:
    """SIGKILL the supervisor's python, as an out-of-memory kill would."""
    [sup] = [
        p
        for p in psutil.process_iter(["cmdline"])
        if {"jobs.head.supervisor", f"{run}-s1"} <= set(p.info["cmdline"] or [])
    ]
    sup.kill()
    sup.wait(30)


def _preempted_twice(life: Life, phases: list[Phase]) -> None:
    life.node_up()
    life.start("--max-restarts", "0", "--max-preemptions", "3", env=SETTLE_FOR_A_LOST_NODE)
    life.held(1)
    life.read(phases[0])
    for n, (waiting, training) in enumerate([(phases[1], phases[2]), (phases[3], None)], 1):
        life.node.stop(grace_s=0)  # a reclaimed spot VM: raylet, agent and driver go at once
        life.counted(ev.PREEMPTED, n)
        wait_until(lambda n=n: life.events().count(ev.WAITING) >= n, 120, f"wait {n}")
        life.read(waiting)  # a stockout: no GPU node until the reads are done
        life.node_up()
        if training is not None:
            life.held(2)
            life.read(training)
    life.until(ev.FINISHED)
    life.read(phases[4])


def _stalled(life: Life, phases: list[Phase]) -> None:
    life.node_up()
    life.start("--max-restarts", "1", "--stall-timeout", "4")
    life.until(ev.STALLED, 120)
    life.held(2)
    life.read(phases[0])
    life.mark("release-2").touch()
    life.until(ev.FINISHED)
    life.read(phases[1])


def _crashed(life: Life, phases: list[Phase]) -> None:
    life.marks.mkdir()
    life.mark("crash").touch()
    life.node_up()
    life.start("--max-restarts", "1")
    life.until(ev.GAVE_UP, 120)
    life.read(phases[0])


def _hub_then_resumed(life: Life, phases: list[Phase]) -> None:
    life.marks.mkdir()
    life.mark("no-hub").touch()
    life.node_up()
    life.start("--max-restarts", "2")
    life.until(ev.GAVE_UP, 120)
    life.read(phases[0])
    life.mark("hub-ok").touch()  # the fix: the Hub answers again
    code, _, err = cli("submit", "--resume", life.run, "--address", life.url)
    assert code == 0, err
    life.until(ev.FINISHED)
    life.read(phases[1])


def _stopped(life: Life, phases: list[Phase]) -> None:
    life.node_up()
    life.start("--max-restarts", "1")
    life.held(1)
    life.read(phases[0])
    code, _, err = cli("stop", life.run, "--address", life.url)
    assert code == 0, err
    life.until(ev.STOPPED)
    life.read(phases[1])
    # The stopped attempt's step lines stay on the runs root.
    assert "step:5 " in RunStore(life.root, life.run).progress(f"{life.run}-a1")


def _killed_then_stopped(life: Life, phases: list[Phase]) -> None:
    life.node_up()
    life.start("--max-restarts", "1")
    life.held(1)
    life.read(phases[0])
    _kill_supervisor(life.run)
    time.sleep(4)  # the lease (3 s) lapses
    seen = life.read(phases[1])
    assert "the re-armer takes the run back" in seen["status --runs-root"][1]
    code, _, err = cli("stop", life.run, "--address", life.url)
    assert code == 0, err
    life.until(ev.STOPPED)
    seen = life.read(phases[2])
    for label in ("status", "status --runs-root"):
        assert "re-armer" not in seen[label][1], (label, seen[label][1])
        assert "submit --resume" not in seen[label][1] or "continue" in seen[label][1]


SCRIPTS: dict[str, tuple[dict[int, tuple[int, str]], Callable[[Life, list[Phase]], None]]] = {
    "preempted twice through a stockout": (
        {1: (5, "hold"), 2: (3, "hold"), 3: (2, "end")},
        _preempted_twice,
    ),
    "stalled": ({1: (3, "silent"), 2: (2, "busy")}, _stalled),
    "crashed before ray.init": ({}, _crashed),
    "hub unreachable, resumed with a fix": ({}, _hub_then_resumed),
    "stopped": ({1: (5, "hold")}, _stopped),
    "supervisor killed, then stopped": ({1: (4, "hold")}, _killed_then_stopped),
}


@pytest.mark.parametrize("life_name", list(JOURNEY))
def test_every_read_command_answers_alike_at_every_phase_of_a_life(head, tmp_path, life_name):
    plan, script = SCRIPTS[life_name]
    life = Life(head, tmp_path, plan)
    try:
        script(life, JOURNEY[life_name])
        assert set(life.read_at) == {p.name for p in JOURNEY[life_name]}, "a phase was not read"
    finally:
        cli("stop", life.run, "--address", life.url)
        life.close()


def test_every_command_and_every_run_state_has_its_row() -> None:
    """A command the CLI gains, or a state a run can show, is refused until the journey covers it."""
    commands = {
        c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands
    }
    read = {template[0] for template in READS.values()}
    assert commands <= read | OTHERS, f"classify in READS or OTHERS: {commands - read - OTHERS}"
    shown = {p.status for phases in JOURNEY.values() for p in phases}
    assert set(state.RUN_STATES) <= shown, f"no phase shows {set(state.RUN_STATES) - shown}"
