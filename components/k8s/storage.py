"""The Managed Lustre instance as a statically provisioned PersistentVolume + claim.

Static, not dynamic, provisioning: the instance is created (and protected from destroy) by
components/gcp/lustre.py, so Kubernetes must only ever *point at* it (reference 3.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.contract import parse_mount_point
from components.k8s.provider import KubeTarget, typed_object

CSI_DRIVER = "lustre.csi.storage.gke.io"


def volume_handle(project: str, zone: str, instance_id: str) -> str:
    """`<project>/<zone>/<instance>`: exactly three tokens, what the CSI driver's ParseVolumeID
    accepts (cluster-toolkit's five-token form is Parallelstore's; reference 3.3).

    Accepts the instance's short id or its full resource id (`projects/.../instances/<id>`).
    """
    instance = instance_id.rsplit("/", 1)[-1]
    if not instance:
        raise ValueError(f"empty Lustre instance id in {instance_id!r}")
    return f"{project}/{zone}/{instance}"


def persistent_volume_manifest(
    name: str,
    *,
    handle: pulumi.Input[str],
    ip: pulumi.Input[str],
    filesystem: pulumi.Input[str],
    capacity_gib: int,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            # Empty class: no provisioner may ever create or resize a Lustre instance from here.
            "storageClassName": "",
            "capacity": {"storage": f"{capacity_gib}Gi"},
            "accessModes": ["ReadWriteMany"],
            # Retain: deleting the PV (or the whole cluster) must never touch the data.
            "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem",
            # No claimRef: the claim binds by its `volumeName`, and kube-controller-manager then
            # writes the claimRef (with the claim's uid) itself. A claimRef set here would be owned
            # by both: ObjectReference is an atomic struct, so after binding every server-side
            # apply of this PV (a capacity change) would conflict on it (pulumi-kubernetes does
            # not force). Kubernetes "Reserving a PersistentVolume": volumeName binds the claim
            # to this volume if it is available, which it is from creation (the claim is created
            # right after it, and nothing else in the cluster asks for class ""). Once bound, the
            # claimRef carries the claim's uid for good (Retain), so a replaced claim could never
            # bind it again: the PV's name follows its claim (names.lustre_pv_name) instead.
            "csi": {
                "driver": CSI_DRIVER,
                "volumeHandle": handle,
                "volumeAttributes": {"ip": ip, "filesystem": filesystem},
            },
        },
    }


# What the claim asks for. A claim bound by `volumeName` only needs a request no larger than the
# volume, and the volume (and `kubectl get pvc`) still shows the full instance. A request equal
# to the capacity would break growing the instance: a statically provisioned claim cannot be
# resized, so the next `pulumi up` would fail at the claim (Kubernetes: "only dynamically
# provisioned pvc can be resized").
CLAIM_REQUEST = "1Gi"


def persistent_volume_claim_manifest(
    name: str, *, namespace: str, volume_name: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "storageClassName": "",
            "accessModes": ["ReadWriteMany"],
            "volumeName": volume_name,
            "resources": {"requests": {"storage": CLAIM_REQUEST}},
        },
    }


@dataclass(frozen=True)
class LustreVolumeArgs:
    target: KubeTarget
    project: str
    zone: str
    instance_id: pulumi.Input[str]
    mount_point: pulumi.Input[str]
    capacity_gib: int
    volume_name: str
    claim_name: str
    namespace: str
    namespace_resource: pulumi.Resource


class LustreVolume(pulumi.ComponentResource):
    claim: k8s.core.v1.PersistentVolumeClaim

    def __init__(
        self, name: str, args: LustreVolumeArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("rl-on-gke:k8s:LustreVolume", name, None, opts)
        # Only values are computed in apply(); the resources are registered outside it.
        mount = pulumi.Output.from_input(args.mount_point).apply(parse_mount_point)
        handle = pulumi.Output.from_input(args.instance_id).apply(
            lambda instance: volume_handle(args.project, args.zone, instance)
        )
        pv = persistent_volume_manifest(
            args.volume_name,
            handle=handle,
            ip=mount.apply(lambda m: m.ip),
            filesystem=mount.apply(lambda m: m.filesystem),
            capacity_gib=args.capacity_gib,
        )
        volume = typed_object(
            k8s.core.v1.PersistentVolume, f"{name}-pv", pv, args.target.options(self)
        )
        pvc = persistent_volume_claim_manifest(
            args.claim_name,
            namespace=args.namespace,
            volume_name=args.volume_name,
        )
        self.claim = typed_object(
            k8s.core.v1.PersistentVolumeClaim,
            f"{name}-pvc",
            pvc,
            args.target.options(self, depends_on=[volume, args.namespace_resource]),
        )
        self.register_outputs({"volume": args.volume_name, "claim": args.claim_name})
