"""How Kubernetes objects reach the GKE cluster, and the options that tie their lifetime to it.

Every Kubernetes object of the layer is registered through `KubeTarget.options`, so none can
forget the explicit provider (built from the cluster's kubeconfig) or `deleted_with`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

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


# apiVersion and kind are fixed by each typed resource class (k8s.core.v1.Service sets its own).
_SET_BY_THE_TYPE = frozenset({"apiVersion", "kind"})
_CAMEL_HUMP = re.compile(r"(?<!^)(?=[A-Z])")
Typed = TypeVar("Typed", bound=pulumi.CustomResource)


def typed_object(
    resource: Callable[..., Typed],
    resource_name: str,
    manifest: Mapping[str, Any],
    opts: pulumi.ResourceOptions,
) -> Typed:
    """Register a manifest as its typed resource: every top-level field but apiVersion and kind
    as the snake_case argument of the same name (`roleRef` -> `role_ref`)."""
    fields = {
        _CAMEL_HUMP.sub("_", key).lower(): value
        for key, value in manifest.items()
        if key not in _SET_BY_THE_TYPE
    }
    return resource(resource_name, **fields, opts=opts)


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
