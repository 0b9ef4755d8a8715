"""Choosing the cluster, and the --stack port-forward lifecycle (fake kubectl/pulumi, real Ray).

`kubectl` and `pulumi` are external binaries with no cluster or cloud here, so the tests put
small stand-ins first on PATH: the fake kubectl really forwards TCP to the local Ray dashboard
(or hangs, or fails), and records its pid so the test can prove it was ended.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from jobs.common.errors import UsageError
from jobs.runs import address
from tests.jobs.conftest import REPO, as_in_a_terminal, clean_env, pid_alive, run_cli, wait_until

OUTPUTS = {
    "rayClusterName": "rl-dev-ray",
    "rayNamespace": "ray",
    "rayHeadService": "rl-dev-ray-head-svc",
    "rayDashboardPort": 8265,
    "rayFramework": "nemo-rl",
    "gpuNodeCount": 2,
    "gpusPerNode": 8,
    "clusterName": "rl-dev",
    "clusterLocation": "us-central1",
    "clusterProject": "my-proj",
    "kubeconfig": "[secret]",
}

FAKE_KUBECTL = """\
#!{python}
import os, socket, sys, threading, time
args = sys.argv[1:]
log = os.environ["FAKE_KUBECTL_LOG"]
with open(log, "a") as f:
    f.write(" ".join(args) + "\\n")
if args[:2] == ["config", "get-contexts"]:
    print(os.environ.get("FAKE_KUBECTL_CONTEXTS", ""))
    sys.exit(0)
mode = os.environ.get("FAKE_KUBECTL_MODE", "forward")
with open(os.environ["FAKE_KUBECTL_PIDFILE"], "w") as f:
    f.write(str(os.getpid()))
if mode == "fail":
    print("error: You must be logged in to the server (Unauthorized)", file=sys.stderr)
    sys.exit(1)
if mode == "hang":
    time.sleep(3600)
local = int(args[args.index("port-forward") + 2].split(":")[0])
host, port = os.environ["FAKE_KUBECTL_TARGET"].split(":")
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", local))
server.listen(16)
def pump(a, b):
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
while True:
    client, _ = server.accept()
    upstream = socket.create_connection((host, int(port)))
    threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
"""

FAKE_PULUMI = """\
#!{python}
import os, sys
if os.environ.get("FAKE_PULUMI_FAIL"):
    print("error: no stack named 'nope' found", file=sys.stderr)
    sys.exit(255)
assert sys.argv[1:] == ["stack", "output", "--json", "--stack", "dev"], sys.argv
print(os.environ["FAKE_PULUMI_OUTPUTS"])
"""


class Fakes:
    def __init__(self, tmp: Path, ray_url: str) -> None:
        self.bin = tmp / "bin"
        self.bin.mkdir()
        for name, body in (("kubectl", FAKE_KUBECTL), ("pulumi", FAKE_PULUMI)):
            path = self.bin / name
            path.write_text(body.format(python=sys.executable))
            path.chmod(0o755)
        self.pidfile = tmp / "kubectl.pid"
        self.log = tmp / "kubectl.log"
        self.env = clean_env(
            PATH=f"{self.bin}:{Path(sys.executable).parent}:/usr/bin:/bin",
            FAKE_KUBECTL_PIDFILE=str(self.pidfile),
            FAKE_KUBECTL_LOG=str(self.log),
            FAKE_KUBECTL_TARGET=ray_url.removeprefix("http://"),
            FAKE_PULUMI_OUTPUTS=json.dumps(OUTPUTS),
            JOBS_PORT_FORWARD_TIMEOUT="20",
        )

    def kubectl_pid(self) -> int:
        return int(self.pidfile.read_text())


@pytest.fixture
def fakes(tmp_path, ray_url) -> Fakes:
    return Fakes(tmp_path, ray_url)


def test_choose_order_and_conflicts():
    assert address.choose("h:8265", None, {}).address == "http://h:8265"
    assert address.choose("http://a:1", None, {"RAY_ADDRESS": "b:2"}).address == "http://a:1"
    assert address.choose(None, None, {"RAY_ADDRESS": "b:2"}).source == "RAY_ADDRESS"
    assert address.choose(None, "dev", {}).stack == "dev"
    for args, env in (
        (("a", "dev"), {}),
        ((None, "dev"), {"RAY_ADDRESS": "b:2"}),
        ((None, None), {}),
        (("ray://h:10001", None), {}),
    ):
        with pytest.raises(UsageError):
            address.choose(*args, env)


def test_a_stacks_outputs_are_read_once_per_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pulumi stack output` takes about a second: the plan, the supervision and the port-forward
    of one command share one read."""
    reads: list[str] = []

    def read(name: str) -> object:
        reads.append(name)
        return {"stack": name}

    monkeypatch.setattr(address.stack, "read", read)
    where = address.choose(None, "dev", env={})
    assert where.outputs() is where.outputs() and reads == ["dev"]
    assert where == address.Where(None, "dev", "--stack")  # what was read is no part of its name
    assert address.choose("http://h:8265", None, env={}).outputs() is None and reads == ["dev"]


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_stack_port_forward_serves_the_command_and_is_closed_after(fakes):
    fakes.env["FAKE_KUBECTL_CONTEXTS"] = "other\ngke_my-proj_us-central1_rl-dev"
    done = run_cli("list", "--json", "--stack", "dev", env=fakes.env)
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout), list)
    forward = [line for line in fakes.log.read_text().splitlines() if "port-forward" in line][0]
    assert forward.startswith(
        "--context gke_my-proj_us-central1_rl-dev --namespace ray "
        "port-forward svc/rl-dev-ray-head-svc "
    )
    assert forward.split()[-3].endswith(":8265") and forward.endswith("--address 127.0.0.1")
    assert not pid_alive(fakes.kubectl_pid())


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_stack_submit_uses_stack_size_and_records_the_stack(fakes, ray_client):
    run = f"stk-{uuid.uuid4().hex[:8]}"
    done = run_cli(
        "submit", "nemo-rl-grpo-math", "--stack", "dev", "--name", run, "--json", env=fakes.env
    )
    assert done.returncode == 0, done.stderr
    info = ray_client.get_job_info(f"{run}-a1")
    assert info.metadata["stack"] == "dev" and info.metadata["nodes"] == "2"
    assert "cluster.num_nodes=2 cluster.gpus_per_node=8" in info.entrypoint
    assert not pid_alive(fakes.kubectl_pid())
    wait_until(lambda: ray_client.get_job_status(f"{run}-a1").is_terminal(), 60, "terminal")


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_stack_framework_mismatch_is_refused_before_any_port_forward(fakes):
    done = run_cli("submit", "verl-grpo-gsm8k", "--stack", "dev", env=fakes.env)
    assert done.returncode == 2
    assert "needs a verl cluster but stack dev runs nemo-rl" in done.stderr
    assert not fakes.pidfile.exists()


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_port_forward_timeout_exits_3_with_the_credentials_command(fakes):
    fakes.env.update(FAKE_KUBECTL_MODE="hang", JOBS_PORT_FORWARD_TIMEOUT="2")
    done = run_cli("list", "--stack", "dev", env=fakes.env)
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "within 2 s" in lines[0]
    assert (
        "gcloud container clusters get-credentials rl-dev --location us-central1 --project my-proj"
    ) in lines[0]
    assert not pid_alive(fakes.kubectl_pid())


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_kubectl_failure_exits_3_with_its_reason(fakes):
    fakes.env["FAKE_KUBECTL_MODE"] = "fail"
    done = run_cli("list", "--stack", "dev", env=fakes.env)
    assert done.returncode == 3
    assert "Unauthorized" in done.stderr and "get-credentials rl-dev" in done.stderr
    assert "Traceback" not in done.stderr and "[secret]" not in done.stderr


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_pulumi_failure_exits_3(fakes):
    fakes.env["FAKE_PULUMI_FAIL"] = "1"
    done = run_cli("list", "--stack", "dev", env=fakes.env)
    assert done.returncode == 3 and "pulumi stack output" in done.stderr


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_ctrl_c_while_following_closes_the_port_forward(fakes, ray_client, tmp_path):
    job = ray_client.submit_job(
        entrypoint="python -c \"import time; print('up', flush=True); time.sleep(600)\"",
        submission_id=f"pf-{uuid.uuid4().hex[:8]}",
    )
    try:
        streamed = tmp_path / "stdout"
        with streamed.open("w") as sink:
            proc = subprocess.Popen(
                [sys.executable, "-m", "jobs", "logs", job, "--follow", "--stack", "dev"],
                cwd=REPO,
                env=fakes.env,
                stdout=sink,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=as_in_a_terminal,
            )
        # Interrupt only once the CLI is streaming through the port-forward.
        wait_until(lambda: "up" in streamed.read_text(), 60, "the CLI to stream the job's output")
        kubectl = fakes.kubectl_pid()
        assert pid_alive(kubectl)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "detached" in err and f"python -m jobs stop {job} --stack dev" in err
        wait_until(lambda: not pid_alive(kubectl), 10, "kubectl to end")
        assert ray_client.get_job_status(job).value == "RUNNING"
    finally:
        ray_client.stop_job(job)


def _follow_via_stack(
    fakes: Fakes, ray_client, tmp_path: Path
) -> tuple[str, subprocess.Popen[str]]:
    job = ray_client.submit_job(
        entrypoint="python -c \"import time; print('up', flush=True); time.sleep(600)\"",
        submission_id=f"pf-{uuid.uuid4().hex[:8]}",
    )
    streamed = tmp_path / "stdout"
    with streamed.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jobs", "logs", job, "--follow", "--stack", "dev"],
            cwd=REPO,
            env=fakes.env,
            stdout=sink,
            stderr=subprocess.PIPE,
            text=True,
        )
    wait_until(lambda: "up" in streamed.read_text(), 60, "the CLI to stream the job's output")
    return job, proc


@pytest.mark.ray
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM])
def test_hangup_quit_or_term_closes_the_port_forward(fakes, ray_client, tmp_path, sig):
    job, proc = _follow_via_stack(fakes, ray_client, tmp_path)
    try:
        kubectl = fakes.kubectl_pid()
        assert pid_alive(kubectl)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 128 + sig, err
        # It used to exit 143 silently; it says it detached, and how to stop the job.
        assert (
            f"detached; {job} keeps running. Stop it with: python -m jobs stop {job} --stack dev"
            in err
        )
        wait_until(lambda: not pid_alive(kubectl), 10, "kubectl to end")
        assert ray_client.get_job_status(job).value == "RUNNING"
    finally:
        if proc.poll() is None:
            proc.kill()
        ray_client.stop_job(job)


@pytest.mark.ray
def test_kubectl_dies_with_a_killed_cli(fakes, ray_client, tmp_path):
    # SIGKILL runs no handler: only the parent-death signal set in kubectl ends it.
    job, proc = _follow_via_stack(fakes, ray_client, tmp_path)
    try:
        kubectl = fakes.kubectl_pid()
        proc.kill()
        proc.wait(timeout=10)
        wait_until(lambda: not pid_alive(kubectl), 10, "kubectl to end after its parent died")
    finally:
        ray_client.stop_job(job)


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_a_stack_too_small_for_the_70b_recipe_is_refused_before_any_port_forward(fakes):
    fakes.env["FAKE_PULUMI_OUTPUTS"] = json.dumps({**OUTPUTS, "gpuNodeCount": 1})
    done = run_cli("submit", "nemo-rl-grpo-math", "--stack", "dev", env=fakes.env)
    assert done.returncode == 2
    # The message is NeMo RL's own replica rule (jobs.recipes.fit), with the sizes that fit.
    assert (
        "does not fit 1 node(s) x 8 GPU(s): 8 GPUs is not a multiple of the 16 GPUs" in done.stderr
    )
    assert not fakes.pidfile.exists()


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_a_parked_stack_is_refused_in_one_line_with_the_unpark_command(fakes):
    fakes.env["FAKE_PULUMI_OUTPUTS"] = json.dumps({**OUTPUTS, "gpuNodeCount": 0})
    done = run_cli("submit", "nemo-rl-grpo-gsm8k", "--stack", "dev", env=fakes.env)
    assert done.returncode == 2
    assert done.stderr.startswith("error: stack 'dev' is parked: its GPU node pool has 0 nodes")
    assert (
        "pulumi config set --path 'rl-on-gke:gpu.nodeCount' <nodes> --type int --stack dev"
        in done.stderr
    )
    assert done.stderr.count("\n") == 1 and not fakes.pidfile.exists()


@pytest.mark.ray
@pytest.mark.subprocess_cli
@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_a_parked_stack_blocks_only_new_attempts(fakes, ray_client):
    """With gpuNodeCount 0 (served by the stand-in `pulumi` above) every command
    exited 2 "parked", so a run waiting for GPUs could not even be stopped."""
    from tests.jobs.cli.test_export_command import ended, recipe_run

    fakes.env["FAKE_PULUMI_OUTPUTS"] = json.dumps({**OUTPUTS, "gpuNodeCount": 0})
    finished = recipe_run(ray_client)  # a recipe run whose attempt 1 has FAILED
    ended(ray_client, f"{finished}-a1")
    busy = recipe_run(ray_client, entrypoint="sleep 120")
    wait_until(
        lambda: ray_client.get_job_status(f"{busy}-a1").value == "RUNNING", 60, f"{busy}-a1 to run"
    )
    for args in (
        ["list", "--json"],
        ["status", busy],
        ["logs", busy],
        ["export", finished, "--dry-run", "--json"],
    ):
        done = run_cli(*args, "--stack", "dev", env=fakes.env)
        assert done.returncode == 0, (args, done.stderr)
        assert "parked" not in done.stderr
    # --resume reads the run first: a running one is refused for being busy, not for parking.
    done = run_cli("submit", "--resume", busy, "--stack", "dev", env=fakes.env)
    assert done.returncode == 2 and f"run {busy} is still RUNNING" in done.stderr, done.stderr
    done = run_cli("stop", busy, "--json", "--stack", "dev", env=fakes.env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "STOPPED"
    # New attempts are what needs GPUs: refused, naming the parking and how to undo it.
    for args in (["submit", "nemo-rl-grpo-math"], ["submit", "--resume", finished]):
        done = run_cli(*args, "--stack", "dev", env=fakes.env)
        assert done.returncode == 2, (args, done.stderr)
        assert "stack 'dev' is parked" in done.stderr


@pytest.mark.parametrize(
    ("typed", "url"),
    [
        ("localhost", "http://localhost:8265"),
        ("10.0.0.5", "http://10.0.0.5:8265"),
        ("[::1]", "http://[::1]:8265"),
        ("localhost:8266", "http://localhost:8266"),
        ("http://localhost", "http://localhost"),  # a scheme keeps its port (an ingress)
        ("https://ray.example.com/", "https://ray.example.com"),
    ],
)
def test_a_bare_host_means_the_dashboard_port(typed, url):
    """`--address localhost` was read as port 80."""
    assert address.normalise(typed) == url


def test_an_address_whose_port_is_not_a_number_is_refused_by_name():
    with pytest.raises(UsageError) as e:
        address.normalise("localhost:82x5")
    assert "localhost:82x5" in e.value.message and "port" in e.value.message
