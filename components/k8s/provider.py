"""How Kubernetes objects reach the GKE cluster, and the options that tie their lifetime to it.

Every Kubernetes object of the layer is registered through `KubeTarget.options`, so none can
forget the explicit provider (built from the cluster's kubeconfig) or `deleted_with`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


def kubernetes_provider(
    name: str,
    kubeconfig: pulumi.Input[str],
    cluster: pulumi.CustomResource,
    parent: pulumi.Resource,
) -> k8s.Provider:
    """A provider for the new cluster only, never the ambient ~/.kube/config context.

    The kubeconfig (built by components/gcp/cluster.py with the `gke-gcloud-auth-plugin` exec stanza)
    is a secret Output; the provider keeps it secret in state. `depends_on` makes the ordering
    explicit even when the kubeconfig does not carry the cluster as a dependency.
    """
    return k8s.Provider(
        name,
        kubeconfig=kubeconfig,
        # Replace the provider (and with it every object) only when the cluster itself is
        # replaced. Without this, pulumi-kubernetes' heuristics replace it when the kubeconfig's
        # server or CA changes (endpoint switch, CA rotation), deleting the namespace and with
        # it a running RayCluster (pulumi-kubernetes Provider `clusterIdentifier` docs).
        cluster_identifier=cluster.id,
        # Server-side apply is the v4 default; pinned so a provider upgrade cannot flip it.
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[cluster]),
    )


@dataclass(frozen=True)
class KubeTarget:
    """The provider and the GKE cluster every Kubernetes object is created in."""

    provider: k8s.Provider
    cluster: pulumi.Resource

    def options(
        self, parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource] = ()
    ) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=parent,
            provider=self.provider,
            # "Safe destroy": objects die with the cluster instead of being deleted one by one,
            # so `pulumi destroy` never waits on a finalizer (a RayCluster's or a PVC's) that no
            # controller will clear once nodes are going away (reference 4, teardown notes).
            deleted_with=self.cluster,
            depends_on=list(depends_on),
        )


def custom_object(
    resource_name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    """Register a custom-resource manifest (apiVersion, kind, metadata, spec) as built."""
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=opts,
    )
