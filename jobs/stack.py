"""Reading the Pulumi stack outputs that say where a stack's Ray cluster is and what it runs."""

from __future__ import annotations

import json
import shutil
import subprocess

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobs.errors import Unreachable, UsageError

PULUMI_TIMEOUT_S = 120


class StackOutputs(BaseModel):
    """The outputs `__main__.py` exports for the jobs CLI (names agreed with the infra code).

    `kubeconfig` is deliberately absent: it is a secret output, and we use the user's own
    kubeconfig instead so no credential passes through this process.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    rayClusterName: str
    rayNamespace: str
    rayHeadService: str
    rayDashboardPort: int
    rayFramework: str
    # A run needs at least one GPU node with at least one GPU; 0 would render
    # cluster.num_nodes=0 and the framework would fail on the cluster instead of here.
    gpuNodeCount: int = Field(ge=1)
    gpusPerNode: int = Field(ge=1)
    clusterName: str
    clusterLocation: str
    clusterProject: str
    # True when the stack set wandbApiKey, so its Ray pods have WANDB_API_KEY (the key itself
    # is never read here). Older stacks lack the output: W&B stays off.
    wandbEnabled: bool = False
    # The exact command for this cluster (it adds --dns-endpoint when the stack uses it).
    getCredentials: str | None = None

    def get_credentials_command(self) -> str:
        if self.getCredentials:
            return self.getCredentials
        return (f"gcloud container clusters get-credentials {self.clusterName} "
                f"--location {self.clusterLocation} --project {self.clusterProject}")

    def kube_context(self) -> str:
        """The context name `gcloud container clusters get-credentials` writes."""
        return f"gke_{self.clusterProject}_{self.clusterLocation}_{self.clusterName}"


def read(stack: str) -> StackOutputs:
    """`pulumi stack output --json --stack NAME`, without --show-secrets."""
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        raise Unreachable(f"cannot read stack {stack!r}: the pulumi CLI is not on PATH",
                          "install Pulumi, or pass --address http://HOST:8265")
    try:
        done = subprocess.run([pulumi, "stack", "output", "--json", "--stack", stack],
                              capture_output=True, text=True, timeout=PULUMI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Unreachable(f"pulumi stack output --stack {stack} took over {PULUMI_TIMEOUT_S} s",
                          "check `pulumi whoami` and your network") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise Unreachable(f"pulumi stack output --stack {stack} failed: {last}",
                          "run from the project directory after `pulumi login`; "
                          "list stacks with `pulumi stack ls`")
    try:
        data = json.loads(done.stdout or "{}")
    except json.JSONDecodeError:
        raise Unreachable(f"stack {stack!r} gave unreadable output",
                          f"check `pulumi stack output --json --stack {stack}`") from None
    return parse(stack, data)


def parse(stack: str, data: object) -> StackOutputs:
    """Validate the outputs; a missing output or an unusable value is one line naming it."""
    try:
        return StackOutputs.model_validate(data)
    except ValidationError as e:
        errors = e.errors()
    missing = sorted({str(err["loc"][0]) for err in errors if err["type"] == "missing"})
    if missing or not isinstance(data, dict):
        raise Unreachable(f"stack {stack!r} lacks outputs {', '.join(missing) or '(all)'}",
                          f"deploy the Ray cluster first: pulumi up --stack {stack}")
    first = errors[0]
    key = str(first["loc"][0]) if first["loc"] else "?"
    hint = (f"a run needs at least one GPU node with at least one GPU; grow the stack's GPU "
            f"node pool (pulumi up --stack {stack})" if key in ("gpuNodeCount", "gpusPerNode")
            else f"check `pulumi stack output --json --stack {stack}`")
    raise UsageError(f"stack {stack!r} output {key}={data.get(key)!r} is not usable: "
                     f"{first['msg'].lower()}", hint)
