"""`KubernetesLayer`: composes the whole Kubernetes layer on top of the GKE cluster.

Provider -> Device networks + NCCL installer + identity -> Lustre volume -> RayCluster ->
metrics. Every Kubernetes object uses the cluster's provider and is `deleted_with` the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import pulumi

from components.catalogue import (
    FRAMEWORKS,
    GRAFANA_PORT,
    RAY_DASHBOARD_PORT,
    FrameworkSpec,
    MachineSpec,
)
from components.config import StackConfig
from components.contract import RDMA_NIC_COUNT, port_forward_command
from components.gcp.network import GpuNics
from components.k8s.crd_gate import KUBECTL_IMAGE, CrdGate, CrdGateArgs
from components.k8s.grafana import GrafanaInputs, RayGrafana, RayGrafanaArgs, head_env
from components.k8s.identity import TrainingIdentity, TrainingIdentityArgs
from components.k8s.metrics import RayMetrics, RayMetricsArgs
from components.k8s.names import K8sNames
from components.k8s.nccl import NcclInstaller, NcclInstallerArgs
from components.k8s.networks import GpuNetworks, GpuNetworksArgs
from components.k8s.provider import KubeTarget, kubernetes_provider
from components.k8s.raycluster import RayClusterInputs, TrainingRayCluster, TrainingRayClusterArgs
from components.k8s.sandbox import TOKEN_ENV, SandboxServiceInputs
from components.k8s.sandbox_service import (
    CodeSandboxService,
    CodeSandboxServiceArgs,
    read_sources,
    service_inputs,
)
from components.k8s.storage import LustreVolume, LustreVolumeArgs
from components.registry import StackImages
from components.stack_images import stack_images


@dataclass(frozen=True)
class GkeFoundation:
    """The GCP resources the layer builds on, as the program composes them."""

    kubeconfig: pulumi.Output[str]  # secret
    cluster: pulumi.CustomResource  # gcp.container.Cluster: deleted_with, depends_on, identity
    gpu_pool: pulumi.Resource  # gcp.container.NodePool of the GPUs (RayCluster depends on it)
    system_pool_name: str  # node pool name for the Ray head nodeSelector
    nics: GpuNics  # the GPU nodes' extra NICs, for the Network objects
    lustre_instance_id: pulumi.Input[str]
    lustre_mount_point: pulumi.Input[str]  # "IP@tcp:/FILESYSTEM"
    system_pool: pulumi.Resource | None = None  # the CRD gate's Job runs there
    # The gVisor pool (components/gcp/sandbox_pool.py); required when rewards.codeSandbox.enabled.
    code_sandbox_pool: pulumi.Resource | None = None


@dataclass(frozen=True)
class KubernetesLayerArgs:
    """What the layer reads of the stack (names, where, the GPU machine, Lustre's size, the
    RayCluster and sandbox inputs), and the GCP resources it builds on."""

    names: K8sNames
    project: str
    zone: str
    crd_gate_name: str
    machine: MachineSpec
    lustre_capacity_gib: int
    # The RayCluster's inputs without token env: the layer adds the identity's secretKeyRefs.
    ray: RayClusterInputs
    # The executor service's inputs when rewards.codeSandbox.enabled, else None.
    code_sandbox: SandboxServiceInputs | None
    # Token env name -> secret Output (contract.SECRET_ENV), only for the tokens the stack sets.
    secret_env: Mapping[str, pulumi.Output[str]]
    gke: GkeFoundation
    # Ray's Metrics tab (monitoring.grafana): Grafana and the query frontend; None: off.
    grafana: GrafanaInputs | None = None
    # The CRD gate's kubectl, as pods pull it (by digest, from the stack's remote repository).
    kubectl_image: str = KUBECTL_IMAGE

    @classmethod
    def for_stack(
        cls,
        config: StackConfig,
        *,
        secret_env: Mapping[str, pulumi.Output[str]],
        gke: GkeFoundation,
    ) -> KubernetesLayerArgs:
        names = K8sNames.for_stack(config)
        images = stack_images(config)
        grafana = (
            GrafanaInputs(
                grafana=names.grafana,
                frontend=names.metrics_frontend,
                namespace=names.namespace,
                project=config.project,
                system_pool_name=gke.system_pool_name,
                labels={"app.kubernetes.io/part-of": "rl-on-gke"},
                ray_version=FRAMEWORKS[config.ray.framework].ray_version,
                grafana_image=images.ref("grafana"),
                frontend_image=images.ref("query-frontend"),
            )
            if config.monitoring.grafana
            else None
        )
        sandbox = (
            service_inputs(config, names.ray_cluster, read_sources(), names.token_secret)
            if config.rewards.code_sandbox.enabled
            else None
        )
        ray = RayClusterInputs.for_stack(config, names, system_pool_name=gke.system_pool_name)
        ray = replace(ray, framework=mirrored_framework(ray.framework, images))
        return cls(
            names=names,
            project=config.project,
            zone=config.zone,
            crd_gate_name=f"{config.name_prefix}-crd-gate",
            machine=config.gpu.machine,
            lustre_capacity_gib=config.lustre.capacity_gib,
            ray=replace(ray, metrics_env=tuple(head_env(grafana)) if grafana is not None else ()),
            code_sandbox=sandbox,
            secret_env=secret_env,
            gke=gke,
            grafana=grafana,
            kubectl_image=images.ref("kubectl"),
        )


def mirrored_framework(spec: FrameworkSpec, images: StackImages) -> FrameworkSpec:
    """The framework image as the stack's pods pull it: through the remote repository, by digest
    (its `image_ref` is then `<region>-docker.pkg.dev/.../<path>@sha256:...`)."""
    ref = images.ref(spec.name)
    image, digest = ref.split("@", 1)
    return replace(spec, image=image, image_digest=digest)


def _check_wiring(args: KubernetesLayerArgs) -> None:
    """Checked before anything is registered, so a wrong wiring leaves no half-built layer."""
    if len(args.gke.nics.rdma_subnets) != RDMA_NIC_COUNT:
        raise ValueError(
            f"KubernetesLayerArgs.gke.nics.rdma_subnets: expected {RDMA_NIC_COUNT} subnet names, "
            f"got {len(args.gke.nics.rdma_subnets)}"
        )
    sandbox_on = args.code_sandbox is not None
    if sandbox_on and TOKEN_ENV not in args.secret_env:
        # stack_inputs.load_stack refuses this stack first, by key; this guards other callers.
        raise ValueError(
            "KubernetesLayerArgs.secret_env: CODE_SANDBOX_TOKEN is required when "
            "rewards.codeSandbox.enabled (the service accepts only requests that "
            "carry it)"
        )
    if sandbox_on != (args.gke.code_sandbox_pool is not None):
        raise ValueError(
            "KubernetesLayerArgs.gke.code_sandbox_pool: given exactly when "
            "rewards.codeSandbox.enabled "
            f"(enabled is {sandbox_on})"
        )


class KubernetesLayer(pulumi.ComponentResource):
    ray_cluster_name: str
    namespace: str
    head_service: str
    dashboard_port: int
    framework: str
    node_count: int
    gpus_per_node: int
    dashboard_port_forward: str
    code_sandbox_url: str | None
    grafana_port_forward: str | None

    def __init__(
        self, name: str, args: KubernetesLayerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        _check_wiring(args)
        super().__init__("rl-on-gke:k8s:KubernetesLayer", name, None, opts)
        names = args.names
        child = pulumi.ResourceOptions(parent=self)
        target = KubeTarget(
            provider=kubernetes_provider(
                f"{name}-provider", args.gke.kubeconfig, args.gke.cluster, self
            ),
            cluster=args.gke.cluster,
        )
        identity = TrainingIdentity(
            f"{name}-identity",
            TrainingIdentityArgs(
                target=target, project=args.project, names=names, token_data=dict(args.secret_env)
            ),
            child,
        )
        # Objects whose CRDs GKE installs after the cluster is up wait for this (crd_gate.py).
        crd_gate = CrdGate(
            f"{name}-crd-gate",
            CrdGateArgs(
                target=target,
                name=args.crd_gate_name,
                namespace=names.namespace,
                system_pool_name=args.gke.system_pool_name,
                namespace_resource=identity.namespace,
                system_pool=args.gke.system_pool,
                image=args.kubectl_image,
            ),
            child,
        )
        pods_need = self._node_prerequisites(name, args, target, identity, crd_gate.job)
        self._workloads(name, args, target, identity, crd_gate.job, pods_need)
        self._set_outputs(args)

    def _node_prerequisites(
        self,
        name: str,
        args: KubernetesLayerArgs,
        target: KubeTarget,
        identity: TrainingIdentity,
        crd_gate_job: pulumi.Resource,
    ) -> list[pulumi.Resource]:
        """Device networks, the NCCL installer and the Lustre claim: what every Ray pod needs."""
        child = pulumi.ResourceOptions(parent=self)
        networks = GpuNetworks(
            f"{name}-networks",
            GpuNetworksArgs(target=target, nics=args.gke.nics, depends_on=(crd_gate_job,)),
            child,
        )
        nccl = NcclInstaller(
            f"{name}-nccl", NcclInstallerArgs(target=target, machine=args.machine), child
        )
        storage = LustreVolume(
            f"{name}-lustre",
            LustreVolumeArgs(
                target=target,
                project=args.project,
                zone=args.zone,
                instance_id=args.gke.lustre_instance_id,
                mount_point=args.gke.lustre_mount_point,
                capacity_gib=args.lustre_capacity_gib,
                volume_name=args.names.lustre_pv,
                claim_name=args.names.lustre_pvc,
                namespace=args.names.namespace,
                namespace_resource=identity.namespace,
            ),
            child,
        )
        needs: list[pulumi.Resource] = [
            *networks.resources,
            nccl.daemon_set,
            storage.claim,
            identity.service_account,
            identity.worker_service_account,
            args.gke.gpu_pool,
            crd_gate_job,
        ]
        if identity.token_secret is not None:
            needs.append(identity.token_secret)
        return needs

    def _workloads(
        self,
        name: str,
        args: KubernetesLayerArgs,
        target: KubeTarget,
        identity: TrainingIdentity,
        crd_gate_job: pulumi.Resource,
        pod_prerequisites: list[pulumi.Resource],
    ) -> None:
        """The RayCluster, its metrics scraping and, when enabled, the code-sandbox service."""
        child = pulumi.ResourceOptions(parent=self)
        names = args.names
        TrainingRayCluster(
            f"{name}-ray",
            TrainingRayClusterArgs(
                target=target,
                inputs=replace(args.ray, token_env=tuple(identity.env)),
                depends_on=pod_prerequisites,
            ),
            child,
        )
        RayMetrics(
            f"{name}-metrics",
            RayMetricsArgs(
                target=target,
                name=names.pod_monitoring,
                namespace=names.namespace,
                ray_cluster=names.ray_cluster,
                namespace_resource=identity.namespace,
                depends_on=(crd_gate_job,),
                autoscale=args.ray.autoscale,
            ),
            child,
        )
        if args.grafana is not None:
            RayGrafana(
                f"{name}-grafana",
                RayGrafanaArgs(
                    target=target,
                    inputs=args.grafana,
                    gsa_account_id=names.metrics_gsa_account_id,
                    namespace_resource=identity.namespace,
                    system_pool=args.gke.system_pool,
                ),
                child,
            )
        self.code_sandbox_url = None
        if args.code_sandbox is not None and args.gke.code_sandbox_pool is not None:
            self.code_sandbox_url = CodeSandboxService(
                f"{name}-code-sandbox",
                CodeSandboxServiceArgs(
                    target=target,
                    inputs=args.code_sandbox,
                    namespace_resource=identity.namespace,
                    node_pool=args.gke.code_sandbox_pool,
                ),
                child,
            ).url

    def _set_outputs(self, args: KubernetesLayerArgs) -> None:
        names = args.names
        self.ray_cluster_name = names.ray_cluster
        self.namespace = names.namespace
        self.head_service = names.head_service
        self.dashboard_port = RAY_DASHBOARD_PORT
        self.framework = args.ray.framework.name
        self.node_count = args.ray.worker_replicas
        self.gpus_per_node = args.machine.gpus_per_node
        self.dashboard_port_forward = port_forward_command(
            names.namespace, names.head_service, RAY_DASHBOARD_PORT
        )
        self.grafana_port_forward = (
            port_forward_command(names.namespace, args.grafana.grafana, GRAFANA_PORT)
            if args.grafana is not None
            else None
        )
        self.register_outputs(
            {
                "ray_cluster_name": self.ray_cluster_name,
                "namespace": self.namespace,
                "head_service": self.head_service,
                "dashboard_port": self.dashboard_port,
                "framework": self.framework,
                "node_count": self.node_count,
                "gpus_per_node": self.gpus_per_node,
                "dashboard_port_forward": self.dashboard_port_forward,
                "code_sandbox_url": self.code_sandbox_url,
                "grafana_port_forward": self.grafana_port_forward,
            }
        )
