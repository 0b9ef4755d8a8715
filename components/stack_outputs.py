"""The stack outputs as one model with their camelCase names (the contract's, components/contract.py).

Its own module so that importing the contract's paths and labels builds no pydantic model: the
jobs CLI reads a stack only with --stack, and building a model on every start-up costs every
command that never reads one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from components.contract import get_credentials_command, kube_context


class StackOutputs(BaseModel):
    """Every output the program exports, under its camelCase name.

    `__main__.py` exports them through `export_stack_outputs` (which refuses a missing or an
    unknown one); `jobs` parses `pulumi stack output --json` with this same model. Fields the
    jobs CLI does not use are optional so an output added later never breaks an older stack.
    `kubeconfig` is a secret output: without --show-secrets it reads "[secret]", and jobs uses
    the user's own kubeconfig instead.
    """

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )

    cluster_name: str
    cluster_location: str
    cluster_project: str
    ray_cluster_name: str
    ray_namespace: str
    ray_head_service: str
    ray_dashboard_port: int
    ray_framework: str
    gpu_node_count: int
    gpus_per_node: int
    # The exact command for this cluster (it adds --dns-endpoint when the stack uses it).
    get_credentials: str | None = None
    cluster_endpoint: str | None = None
    kubeconfig: str | None = None
    lustre_instance_id: str | None = None
    lustre_mount_point: str | None = None
    lustre_ip: str | None = None
    lustre_filesystem: str | None = None
    lustre_protected: bool | None = None
    # Managed Lustre size in GiB: bounds the checkpoints a run may keep (jobs/recipes/ckpt_size.py).
    # Older stacks lack it; the check is then skipped.
    lustre_capacity_gib: int | None = Field(default=None, ge=1)
    # True when the stack set wandbApiKey, so its Ray pods have WANDB_API_KEY (the key itself is
    # never an output). Older stacks lack it: W&B stays off.
    wandb_enabled: bool = False
    # The code-contests reward's executor service (http://<svc>.<ns>.svc.cluster.local:8080),
    # when the stack runs it (rewards.codeSandbox); jobs passes it as CODE_SANDBOX_URL.
    code_sandbox_url: str | None = None
    networks: dict[str, Any] | None = None
    gpu_pool: str | None = None
    # gpu.scaling as the stack resolved it ("static" or "on-demand"); older stacks lack it.
    gpu_scaling: str | None = None
    # gpu.provisioning: on spot and flex-start GPUs `rl-jobs` supervises runs unless told not
    # to (a preemption would otherwise end them). Older stacks lack it.
    gpu_provisioning: str | None = None
    # flex-start only: the hours a GPU node runs before GKE removes it (gpu.maxRunDurationHours,
    # else GKE's 7-day default); `rl-jobs` has each attempt save before then. Null otherwise.
    gpu_max_run_hours: int | None = Field(default=None, ge=1)
    # What one GPU node-hour costs and where that figure comes from (components/prices.py or the
    # stack's cost.nodeHourUsd): `rl-jobs cost` prices node-hours with it. Older stacks lack it.
    gpu_node_hour_usd: float | None = Field(default=None, gt=0)
    gpu_node_hour_source: str | None = None
    dashboard_port_forward: str | None = None
    # The command that opens the stack's Grafana on localhost:3000, where Ray's dashboard's Metrics
    # tab frames its panels (components/k8s/grafana.py); null when monitoring.grafana is off.
    grafana_port_forward: str | None = None

    def get_credentials_command(self) -> str:
        if self.get_credentials:
            return self.get_credentials
        return get_credentials_command(
            self.cluster_name, self.cluster_location, self.cluster_project, dns_endpoint=False
        )

    def kube_context(self) -> str:
        return kube_context(self.cluster_project, self.cluster_location, self.cluster_name)

    @classmethod
    def output_name(cls, field: str) -> str:
        alias = cls.model_fields[field].alias
        return alias if alias is not None else field


def export_stack_outputs(export: Callable[[str, Any], None], **values: Any) -> None:
    """Call `export(camelCaseName, value)` for every field of StackOutputs, in field order.

    Values may be Pulumi Outputs; the keyword names are the model's snake_case fields, and a
    missing or unknown one is a programming error caught before anything is exported.
    """
    fields = list(StackOutputs.model_fields)
    missing = [f for f in fields if f not in values]
    unknown = sorted(set(values) - set(fields))
    if missing or unknown:
        raise TypeError(f"export_stack_outputs: missing {missing}, unknown {unknown}")
    for field in fields:
        export(StackOutputs.output_name(field), values[field])
