"""The offline plan: what a stack would build, rendered under Pulumi's mock runtime.

`make plan STACK=dev` (or `python -m tools.plan --stack dev [--json]`). Needs no credentials,
network or Pulumi CLI, and says so: it is a rendering of the program, not a cloud preview.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any

import typer
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.text import Text
from rich.tree import Tree

from components.catalogue import IMAGES
from components.rules import NAMESPACE, ConfigError
from tools.render import (
    UNCONFIRMED_DIGEST,
    RenderedResource,
    Rendering,
    load_stack_file,
    masked,
    render,
)

PLACEHOLDER_PROJECT = "example-project"
NOTICE = (
    "OFFLINE PLAN: the program rendered under Pulumi's mock runtime. This is not a cloud "
    "preview; nothing was contacted, values GCP computes (IPs, endpoints, emails) are stand-ins, and "
    "the capacity lookups (reservation, machine types) are answered as the stack asks."
)

# The settings worth reading in a review, per resource type (camelCase wire names).
KEY_SETTINGS: dict[str, tuple[str, ...]] = {
    "gcp:compute/network:Network": ("name", "mtu", "networkProfile"),
    "gcp:compute/subnetwork:Subnetwork": ("name", "ipCidrRange", "secondaryIpRanges"),
    "gcp:compute/firewall:Firewall": ("name", "network", "sourceRanges", "allows"),
    "gcp:compute/router:Router": ("name",),
    "gcp:compute/routerNat:RouterNat": ("name", "sourceSubnetworkIpRangesToNat"),
    "gcp:compute/globalAddress:GlobalAddress": ("name", "purpose", "address", "prefixLength"),
    "gcp:servicenetworking/connection:Connection": ("service", "deletionPolicy"),
    "gcp:lustre/instance:Instance": (
        "instanceId",
        "location",
        "capacityGib",
        "perUnitStorageThroughput",
        "filesystem",
        "gkeSupportEnabled",
    ),
    "gcp:serviceaccount/account:Account": ("accountId",),
    "gcp:projects/iAMMember:IAMMember": ("role",),
    "gcp:container/cluster:Cluster": (
        "name",
        "location",
        "minMasterVersion",
        "releaseChannel.channel",
        "privateClusterConfig.enablePrivateNodes",
        "masterAuthorizedNetworksConfig.cidrBlocks",
        "workloadIdentityConfig.workloadPool",
        "datapathProvider",
        "enableMultiNetworking",
        "addonsConfig.rayOperatorConfigs",
        "addonsConfig.lustreCsiDriverConfig",
        "privateClusterConfig.enablePrivateEndpoint",
        "maintenancePolicy",
        "defaultMaxPodsPerNode",
    ),
    "gcp:container/nodePool:NodePool": (
        "name",
        "nodeCount",
        "nodeConfig.machineType",
        "nodeConfig.spot",
        "nodeConfig.reservationAffinity",
        "nodeConfig.guestAccelerators",
        "networkConfig.additionalNodeNetworkConfigs",
        "placementPolicy",
        "upgradeSettings",
        "nodeConfig.ephemeralStorageLocalSsdConfig",
        "nodeConfig.gcfsConfig.enabled",
        "nodeConfig.secondaryBootDisks",
    ),
    "gcp:artifactregistry/repository:Repository": (
        "repositoryId",
        "location",
        "mode",
        "remoteRepositoryConfig.dockerRepository",
    ),
    "gcp:projects/service:Service": ("service", "disableOnDestroy"),
    "kubernetes:batch/v1:Job": (
        "metadata.name",
        "spec.backoffLimit",
        "spec.template.spec.containers[0].env",
    ),
    "kubernetes:ray.io/v1:RayCluster": (
        "metadata.name",
        "spec.headGroupSpec.template.spec.containers[0].resources.requests.ephemeral-storage",
        "spec.workerGroupSpecs[0].replicas",
        "spec.workerGroupSpecs[0].template.spec.containers[0].resources.requests.ephemeral-storage",
        "spec.workerGroupSpecs[0].template.spec.containers[0].volumeMounts",
    ),
}
K8S_SETTINGS = ("kind", "metadata.name", "metadata.namespace")


def lookup(values: dict[str, Any], path: str) -> Any:
    """`a.b[0].c` in nested inputs, or None when any step is missing."""
    current: Any = values
    for part in path.split("."):
        name, _, index = part.partition("[")
        if not isinstance(current, dict) or name not in current:
            return None
        current = current[name]
        if index:
            position = int(index.rstrip("]"))
            if not isinstance(current, list) or position >= len(current):
                return None
            current = current[position]
    return current


def _summarise(value: Any) -> str:
    if isinstance(value, list) and len(value) > 3:
        if all(isinstance(v, dict) and "mountPath" in v for v in value):
            value = [v["mountPath"] for v in value]  # volume mounts read as their paths
        if all(isinstance(v, str) for v in value) and sum(map(len, value)) < 240:
            return escape(json.dumps(" ".join(value)))  # a command line reads best as one
        return escape(f"[{len(value)} items]")
    # Escaped: "[secret]" would otherwise be read as rich markup and vanish.
    return escape(json.dumps(masked(value), separators=(",", ":")))


def key_settings(resource: RenderedResource) -> dict[str, Any]:
    paths = KEY_SETTINGS.get(resource.type)
    if paths is None and resource.type.startswith("kubernetes:"):
        paths = K8S_SETTINGS
    settings = {path: lookup(resource.inputs, path) for path in paths or ()}
    return {k: v for k, v in settings.items() if v is not None}


# Dependencies worth showing by type: objects that wait for the CRD gate Job, resources that
# wait for the provider that waits for the Google APIs.
WAITS_FOR_TYPES = ("kubernetes:batch/v1:Job", "gcp:projects/service:Service")


def waits_for(resource: RenderedResource, by_urn: dict[str, RenderedResource]) -> list[str]:
    return sorted(
        by_urn[urn].name
        for urn in resource.dependencies
        if urn in by_urn and by_urn[urn].type in WAITS_FOR_TYPES
    )


def _label(
    resource: RenderedResource, by_urn: dict[str, RenderedResource] | None = None
) -> RenderableType:
    flags = [
        f
        for f, on in (("protected", resource.protect), ("retained", resource.retain_on_delete))
        if on
    ]
    head = f"[bold]{resource.name}[/bold] [dim]{resource.type}[/dim]"
    if flags:
        head += f" [yellow]({', '.join(flags)})[/yellow]"
    settings = key_settings(resource)
    waits = waits_for(resource, by_urn or {})
    if waits:
        settings["waitsFor"] = waits if len(waits) <= 3 else [*waits[:2], f"+{len(waits) - 2} more"]
    details = ", ".join(f"{k}={_summarise(v)}" for k, v in settings.items())
    if not details:
        return head
    # Padded, so a settings line wrapped at the reader's width stays indented under its name.
    return Group(
        Text.from_markup(head), Padding(Text.from_markup(details), (0, 0, 0, 2), expand=False)
    )


def as_json(rendering: Rendering, notes: list[str]) -> dict[str, Any]:
    return {
        "stack": rendering.stack,
        "offline": True,
        "notice": NOTICE,
        "notes": notes,
        "counts": dict(Counter(r.type for r in rendering.custom_resources())),
        "resources": [
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "parent": r.parent,
                "custom": r.custom,
                "protect": r.protect,
                "retainOnDelete": r.retain_on_delete,
                "deletedWith": r.deleted_with,
                "ignoreChanges": r.ignore_changes,
                "dependencies": r.dependencies,
                "inputs": masked(r.inputs),
            }
            for r in rendering.resources
        ],
        "outputs": masked(rendering.outputs),
    }


def print_tree(rendering: Rendering, notes: list[str], console: Console) -> None:
    console.print(f"[bold yellow]{NOTICE}[/bold yellow]")
    for note in notes:
        console.print(f"[yellow]note:[/yellow] {note}")
    root = Tree(f"[bold]stack {rendering.stack}[/bold]")
    children: dict[str, list[RenderedResource]] = {}
    urns = {r.urn for r in rendering.resources}
    by_urn = {r.urn: r for r in rendering.resources}
    for resource in rendering.resources:
        parent = resource.parent if resource.parent in urns else ""
        children.setdefault(parent, []).append(resource)

    def grow(branch: Tree, parent: str) -> None:
        # Registration order depends on async timing; sorting keeps the plan stable to read and diff.
        for resource in sorted(children.get(parent, []), key=lambda r: (r.custom, r.name)):
            grow(branch.add(_label(resource, by_urn)), resource.urn)

    grow(root, "")
    console.print(root)
    counts = Counter(r.type for r in rendering.custom_resources())
    console.print(
        f"\n[bold]{sum(counts.values())} cloud/Kubernetes resources[/bold] in "
        f"{len(rendering.resources) - sum(counts.values())} components:"
    )
    for type_, count in sorted(counts.items()):
        console.print(f"  {count:3d}  {type_}")
    console.print("\n[bold]Stack outputs[/bold]")
    for key, value in sorted(masked(rendering.outputs).items()):
        console.print(f"  {key}: {_summarise(value)}")


def render_stack_file(stack: str) -> tuple[Rendering, list[str]]:
    config, secret_keys = load_stack_file(stack)
    notes: list[str] = []
    if "gcp:project" not in config:
        config["gcp:project"] = PLACEHOLDER_PROJECT
        notes.append(
            f"gcp:project is not set in Pulumi.{stack}.yaml; rendered with '{PLACEHOLDER_PROJECT}'. "
            f"Set yours with `pulumi config set gcp:project <id> --stack {stack}`."
        )
    for key in secret_keys:
        notes.append(f"{key} is a secret; offline it is a placeholder and shown as [secret].")
    rendering = render(config, stack=stack, secret_keys=secret_keys)
    return rendering, notes + unconfirmed_digest_notes(config, rendering)


def unconfirmed_digest_notes(config: dict[str, Any], rendering: Rendering) -> list[str]:
    """A stack setting to confirm per image the plan shows with the placeholder digest: the
    real preview refuses the stack until `images.<name>.digest` is set."""
    rendered = json.dumps([r.inputs for r in rendering.resources], default=str)
    notes = []
    for name, pin in IMAGES.items():
        given = (config.get(f"{NAMESPACE}:images") or {}).get(name, {}).get("digest")
        if given == UNCONFIRMED_DIGEST and f"/{pin.path}@{UNCONFIRMED_DIGEST}" in rendered:
            notes.append(
                f"CONFIRM rl-on-gke:images.{name}.digest: {pin.upstream_ref} has no verified "
                f"digest; rendered with the placeholder {UNCONFIRMED_DIGEST[:15]}..., and "
                f"`pulumi preview` refuses the stack until you set it (`crane digest "
                f"{pin.upstream_ref}`; docs/deploy.md 'Image digests')."
            )
    return notes


def main(
    stack: str = typer.Option("dev", help="Stack name: reads Pulumi.<stack>.yaml."),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable plan on stdout."),
) -> None:
    """Print the offline plan of a stack."""
    err = Console(stderr=True)
    try:
        rendering, notes = render_stack_file(stack)
    except FileNotFoundError as error:
        err.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    except ConfigError as error:
        err.print(f"[red]error:[/red] Pulumi.{stack}.yaml: {error}", markup=False, highlight=False)
        raise typer.Exit(2) from None
    if json_output:
        sys.stdout.write(json.dumps(as_json(rendering, notes), indent=2, sort_keys=True) + "\n")
    else:
        # The reader's width (COLUMNS, else the terminal's, else 80): rich wraps each label under
        # its own branch; a fixed 160 was hard-wrapped by 80-column terminals mid-tree.
        print_tree(rendering, notes, Console())


if __name__ == "__main__":
    typer.run(main)
