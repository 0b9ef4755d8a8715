"""Who training pods are: their namespace, Kubernetes SA bound to a Google SA, and token Secret.

Workload Identity (reference 3.4): the KSA carries `iam.gke.io/gcp-service-account` and the GSA
grants `roles/iam.workloadIdentityUser` to `serviceAccount:<project>.svc.id.goog[<ns>/<ksa>]`.
Tokens (reference 3.5 leaves this open) go Pulumi secret config -> one Kubernetes Secret ->
`secretKeyRef`: the secret Outputs are passed straight into `stringData`, never unwrapped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.contract import SECRET_ENV
from components.gcp.cluster import ADOPT_EXISTING_ACCOUNT
from components.k8s.names import K8sNames
from components.k8s.provider import KubeTarget, typed_object

WORKLOAD_IDENTITY_ANNOTATION = "iam.gke.io/gcp-service-account"

# Project roles of the training GSA, each with why training needs it. Container stdout, the
# Ray metrics scraped by PodMonitoring and image pulls all run as the *node* service account,
# so this list is only what code inside the pods does with Google APIs.
TRAINING_ROLES: dict[str, str] = {
    # Run summaries / structured events written with the Cloud Logging client from the driver.
    "roles/logging.logWriter": "write log entries from training code",
    # Custom time series (tokens/s, reward) pushed with the Cloud Monitoring client.
    "roles/monitoring.metricWriter": "write custom metrics from training code",
    # Deliberately absent: storage.* - checkpoints and the Hugging Face cache live on Lustre and
    # no bucket exists in this stack; grant a bucket-scoped role when one is added.
}

# W&B is optional for both frameworks (logging turns off without a key), so its reference stays
# optional; a missing HF token must fail the pod loudly.
_OPTIONAL_KEYS = frozenset({SECRET_ENV["wandbApiKey"]})


def workload_identity_member(project: str, namespace: str, service_account: str) -> str:
    return f"serviceAccount:{project}.svc.id.goog[{namespace}/{service_account}]"


def namespace_manifest(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def service_account_manifest(
    name: str, namespace: str, gsa_email: pulumi.Input[str]
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {WORKLOAD_IDENTITY_ANNOTATION: gsa_email},
        },
    }


def token_secret_manifest(
    name: str, namespace: str, data: Mapping[str, pulumi.Input[str]]
) -> dict[str, Any] | None:
    """The token Secret, or None when no token is configured (nothing to create)."""
    if not data:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        # stringData, not data: base64-encoding here would need the value unwrapped.
        "stringData": dict(data),
    }


def token_env(secret_name: str | None, keys: Sequence[str]) -> list[dict[str, Any]]:
    """Env vars reading each present token from the Secret; nothing when there is no Secret."""
    if secret_name is None:
        return []
    return [
        {
            "name": key,
            "valueFrom": {
                "secretKeyRef": {
                    "name": secret_name,
                    "key": key,
                    "optional": key in _OPTIONAL_KEYS,
                }
            },
        }
        for key in sorted(keys)
    ]


@dataclass(frozen=True)
class GoogleIdentity:
    """A Google SA for one Kubernetes SA: its project roles and who may act as it."""

    project: str
    account_id: str
    display_name: str
    roles: tuple[str, ...]  # project roles, e.g. roles/monitoring.viewer
    namespace: str  # of the Kubernetes SA that acts as it through Workload Identity
    service_account: str  # the Kubernetes SA's name


def workload_identity_gsa(
    prefix: str, identity: GoogleIdentity, *, cluster: pulumi.Resource, parent: pulumi.Resource
) -> gcp.serviceaccount.Account:
    """`{prefix}-gsa`, one `{prefix}-<role>` member per role and `{prefix}-workload-identity`.

    GCP objects: the default GCP provider, and not deleted with the cluster."""
    child = pulumi.ResourceOptions(parent=parent)
    gsa = gcp.serviceaccount.Account(
        f"{prefix}-gsa",
        project=identity.project,
        account_id=identity.account_id,
        display_name=identity.display_name,
        **ADOPT_EXISTING_ACCOUNT,
        opts=child,
    )
    for role in identity.roles:
        gcp.projects.IAMMember(
            f"{prefix}-{role.removeprefix('roles/').replace('.', '-').lower()}",
            project=identity.project,
            role=role,
            member=gsa.member,
            opts=child,
        )
    gcp.serviceaccount.IAMMember(
        f"{prefix}-workload-identity",
        service_account_id=gsa.name,
        role="roles/iam.workloadIdentityUser",
        member=workload_identity_member(
            identity.project, identity.namespace, identity.service_account
        ),
        # The pool <project>.svc.id.goog exists only once a Workload Identity cluster does;
        # binding earlier fails with "Identity Pool does not exist"
        # (terraform-google-kubernetes-engine#916, googleforgames/global-multiplayer-demo#39).
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[cluster]),
    )
    return gsa


@dataclass(frozen=True)
class TrainingIdentityArgs:
    target: KubeTarget
    project: str
    names: K8sNames
    token_data: Mapping[str, pulumi.Output[str]]


class TrainingIdentity(pulumi.ComponentResource):
    """Namespace, GSA + roles + Workload Identity binding, KSA, and the optional token Secret."""

    namespace: k8s.core.v1.Namespace
    service_account: k8s.core.v1.ServiceAccount
    worker_service_account: k8s.core.v1.ServiceAccount
    gsa: gcp.serviceaccount.Account
    token_secret: k8s.core.v1.Secret | None
    token_secret_name: str | None
    token_keys: tuple[str, ...]

    def __init__(
        self, name: str, args: TrainingIdentityArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("rl-on-gke:k8s:TrainingIdentity", name, None, opts)
        names = args.names
        target = args.target

        ns = namespace_manifest(names.namespace)
        self.namespace = typed_object(
            k8s.core.v1.Namespace, f"{name}-namespace", ns, target.options(self)
        )

        self.gsa = workload_identity_gsa(
            name,
            GoogleIdentity(
                project=args.project,
                account_id=names.gsa_account_id,
                display_name=f"Ray training pods ({names.namespace}/{names.service_account})",
                roles=tuple(TRAINING_ROLES),
                namespace=names.namespace,
                service_account=names.service_account,
            ),
            cluster=target.cluster,
            parent=self,
        )

        ksa = service_account_manifest(names.service_account, names.namespace, self.gsa.email)
        self.service_account = typed_object(
            k8s.core.v1.ServiceAccount,
            f"{name}-ksa",
            ksa,
            target.options(self, depends_on=[self.namespace]),
        )

        self.worker_service_account = self._worker_ksa(name, args)

        secret = token_secret_manifest(names.token_secret, names.namespace, args.token_data)
        self.token_secret = None
        self.token_secret_name = None
        self.token_keys = tuple(sorted(args.token_data))
        if secret is not None:
            self.token_secret_name = names.token_secret
            self.token_secret = typed_object(
                k8s.core.v1.Secret,
                f"{name}-tokens",
                secret,
                target.options(self, depends_on=[self.namespace]),
            )

        self.register_outputs(
            {
                "namespace": names.namespace,
                "serviceAccount": names.service_account,
                "workerServiceAccount": names.worker_service_account,
                "gsaEmail": self.gsa.email,
                "tokenSecret": self.token_secret_name,
                "tokenKeys": list(self.token_keys),
            }
        )

    def _worker_ksa(self, name: str, args: TrainingIdentityArgs) -> k8s.core.v1.ServiceAccount:
        """The GPU workers' KSA, acting as the same Google SA through a binding of its own.

        Kept apart from the head's because KubeRay binds its autoscaler Role (patch pods and the
        RayCluster) to the head template's service account (kuberay v1.7.0 ray-operator/
        controllers/ray/raycluster_controller.go `reconcileAutoscalerRoleBinding`). Lustre comes
        through the PVC, not an identity, so the Google side is all workers need."""
        names = args.names
        gcp.serviceaccount.IAMMember(
            f"{name}-worker-workload-identity",
            service_account_id=self.gsa.name,
            role="roles/iam.workloadIdentityUser",
            member=workload_identity_member(
                args.project, names.namespace, names.worker_service_account
            ),
            # The identity pool exists only once the cluster does (see workload_identity_gsa).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[args.target.cluster]),
        )
        ksa = service_account_manifest(
            names.worker_service_account, names.namespace, self.gsa.email
        )
        return typed_object(
            k8s.core.v1.ServiceAccount,
            f"{name}-worker-ksa",
            ksa,
            args.target.options(self, depends_on=[self.namespace]),
        )

    @property
    def env(self) -> list[dict[str, Any]]:
        """Env vars pods use to read the tokens (see `token_env`)."""
        return token_env(self.token_secret_name, self.token_keys)
