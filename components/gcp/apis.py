"""The Google APIs the stack needs, enabled by the program itself, and the provider that waits for them.

A new project has few APIs on; without this a first `pulumi up` fails on the first resource of a
disabled API (reference gcp-and-k8s.md 2.1). Two APIs cannot be enabled this way and are the
README's one-time step before the first `up`: Service Usage (which `gcp.projects.Service` calls)
and Cloud Resource Manager, which the provider needs enabled in the caller's quota project before
it can enable anything (terraform-provider-google #6101, #11435). Both are still listed here, so
the list is every API the program calls and none is ever disabled by it. The APIs are never disabled on destroy: other
workloads in the project may use them, and disabling Compute Engine would tear down far more
than this stack. Every GCP resource of the stack is created through `provider`, which depends on
the services, so none is attempted before its API is on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import pulumi
import pulumi_gcp as gcp

from components.config import StackConfig

# Each API and what in this stack calls it.
REQUIRED_APIS: dict[str, str] = {
    "compute.googleapis.com": "VPCs, subnets, NAT, firewalls, PSA range",
    "container.googleapis.com": "the GKE cluster and node pools",
    "lustre.googleapis.com": "the Managed Lustre instance",
    "servicenetworking.googleapis.com": "the Private Service Access peering Lustre uses",
    "iam.googleapis.com": "the node and training service accounts",
    "serviceusage.googleapis.com": "enabling these APIs (gcp.projects.Service); README one-time step",
    "cloudresourcemanager.googleapis.com": "project IAM grants, and every API enable (tpg #6101); README one-time step",
    # The GKE metadata server mints a pod's Google token by impersonating its service account
    # (GKE "Workload Identity Federation for GKE": enable the IAM Service Account Credentials API).
    "iamcredentials.googleapis.com": "Workload Identity tokens for the training service account",
    "logging.googleapis.com": "GKE system and workload logs; the stack's log-based metric (monitoring.py)",
    "monitoring.googleapis.com": "GKE metrics, DCGM and managed Prometheus; the stack dashboard and alerts",
    "artifactregistry.googleapis.com": "the remote repositories every image is pulled through (registry.py)",
    # GKE "Use Image streaming", Requirements: "You must enable the Container File System API".
    "containerfilesystem.googleapis.com": "GKE image streaming on the GPU and sandbox pools",
}


class ServiceArgs(TypedDict):
    """The keyword arguments of `gcp.projects.Service` this program sets."""

    project: str
    service: str
    disable_on_destroy: bool
    disable_dependent_services: bool


def service_args(project: str, api: str) -> ServiceArgs:
    return {
        "project": project,
        "service": api,
        # Never switch an API off with the stack (see module docstring), nor the APIs using it.
        "disable_on_destroy": False,
        "disable_dependent_services": False,
    }


# APIs only some stacks use: enabled only when the stack uses them, so a stack without them
# plans exactly as before.
BUDGET_APIS: dict[str, str] = {
    "billingbudgets.googleapis.com": "the Cloud Billing budget (budget)",
}


@dataclass(frozen=True)
class ProjectApisArgs:
    project: str
    region: str
    # Extra APIs on top of REQUIRED_APIS (from BUDGET_APIS when the stack sets a budget).
    optional: tuple[str, ...] = ()

    @classmethod
    def for_stack(cls, config: StackConfig) -> ProjectApisArgs:
        optional = tuple(BUDGET_APIS) if config.budget is not None else ()
        return cls(project=config.project, region=config.region, optional=optional)

    @property
    def apis(self) -> list[str]:
        return [*REQUIRED_APIS, *self.optional]


class ProjectApis(pulumi.ComponentResource):
    """One `gcp.projects.Service` per required API, and a GCP provider that depends on all of them."""

    services: list[gcp.projects.Service]
    provider: gcp.Provider

    def __init__(
        self, name: str, args: ProjectApisArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("rl-on-gke:gcp:ProjectApis", name, None, opts)
        self.services = [
            gcp.projects.Service(
                f"{name}-{api.split('.')[0]}",
                **service_args(args.project, api),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for api in args.apis
        ]
        # Children of the stack's components inherit this provider, so each GCP resource waits
        # for the APIs without every component having to thread a dependency through.
        self.provider = gcp.Provider(
            f"{name}-gcp",
            project=args.project,
            region=args.region,
            opts=pulumi.ResourceOptions(parent=self, depends_on=self.services),
        )
        self.register_outputs({"apis": args.apis})
