"""The rl-on-gke program: load the stack's config once, compose the components, export outputs.

Layers flow one way: config -> GCP (networks, Lustre, GKE, GPU pool) -> Kubernetes (Ray).
"""

import pulumi

from components.contract import SECRET_ENV
from components.gcp.apis import ProjectApis, ProjectApisArgs
from components.gcp.budget import ProjectBudget, ProjectBudgetArgs, check_billing_account
from components.gcp.cluster import GkeCluster, GkeClusterArgs
from components.gcp.gpu_capacity import GpuCapacityArgs, check_gpu_capacity
from components.gcp.gpu_pool import GpuNodePool, GpuNodePoolArgs
from components.gcp.lustre import (
    ManagedLustre,
    ManagedLustreArgs,
    PrivateServiceAccess,
    PrivateServiceAccessArgs,
)
from components.gcp.monitoring import StackMonitoring, StackMonitoringArgs
from components.gcp.network import Network, NetworkArgs
from components.gcp.registry import RemoteRepositories, RemoteRepositoriesArgs
from components.gcp.sandbox_pool import SandboxNodePool, SandboxNodePoolArgs
from components.k8s.layer import GkeFoundation, KubernetesLayer, KubernetesLayerArgs
from components.prices import node_hour_price
from components.stack_inputs import load_stack
from components.stack_outputs import export_stack_outputs

config, secret_env = load_stack()
# The reservation and the zone's machine type, looked up before anything is registered, so a
# preview fails in seconds naming the key instead of a node pool timing out (gpu_capacity.py).
check_gpu_capacity(GpuCapacityArgs.for_stack(config))
# A budget on an account that does not pay for the project would never warn; refused the same
# way, by key, before anything is registered (components/gcp/budget.py).
check_billing_account(config)
prefix = config.name_prefix

# Enables the Google APIs; every component below creates its GCP resources through the
# provider that waits for them (components/gcp/apis.py).
apis = ProjectApis(f"{prefix}-apis", ProjectApisArgs.for_stack(config))
on_apis = pulumi.ResourceOptions(providers=[apis.provider])

network = Network(prefix, NetworkArgs.for_stack(config), on_apis)
# Every image is pulled by digest through these, in the cluster's region (components/registry.py).
registries = RemoteRepositories(
    f"{prefix}-registry", RemoteRepositoriesArgs.for_stack(config), on_apis
)
psa = PrivateServiceAccess(
    f"{prefix}-psa", PrivateServiceAccessArgs.for_stack(config, network.main_network), on_apis
)
lustre = ManagedLustre(
    f"{prefix}-lustre", ManagedLustreArgs.for_stack(config, network.main_network, psa), on_apis
)
gke = GkeCluster(
    f"{prefix}-gke",
    GkeClusterArgs.for_stack(config, network.main_network, network.main_subnet),
    on_apis,
)
gpu_pool = GpuNodePool(
    f"{prefix}-gpu",
    GpuNodePoolArgs.for_stack(
        config,
        cluster=gke.cluster,
        service_account=gke.node_service_account.email,
        nics=network.gpu_nics,
    ),
    on_apis,
)
# The gVisor CPU pool for the code-contests executor, only when the stack enables it.
sandbox_pool = (
    SandboxNodePool(
        f"{prefix}-code-sandbox",
        SandboxNodePoolArgs.for_stack(config, gke.cluster, gke.node_service_account.email),
        on_apis,
    )
    if config.rewards.code_sandbox.enabled
    else None
)
k8s = KubernetesLayer(
    f"{prefix}-k8s",
    KubernetesLayerArgs.for_stack(
        config,
        secret_env=secret_env,
        gke=GkeFoundation(
            kubeconfig=gke.kubeconfig,
            cluster=gke.cluster,
            gpu_pool=gpu_pool.node_pool,
            system_pool_name=gke.system_pool_name,
            nics=network.gpu_nics,
            lustre_instance_id=lustre.instance.instance_id,
            lustre_mount_point=lustre.mount_point,
            system_pool=gke.system_pool,
            code_sandbox_pool=sandbox_pool.node_pool if sandbox_pool else None,
        ),
    ),
    # A pod created before its remote repository would sit in ImagePullBackOff until it exists.
    pulumi.ResourceOptions.merge(
        on_apis, pulumi.ResourceOptions(depends_on=registries.repositories)
    ),
)

# A Cloud Billing budget with e-mail alerts, only when the stack sets `budget`.
budget = (
    ProjectBudget(
        f"{prefix}-budget", ProjectBudgetArgs.for_stack(config, after=apis.services), on_apis
    )
    if config.budget is not None
    else None
)
# The stack dashboard and the give-up count; alert policies only when monitoring.alertEmails is set.
monitoring = StackMonitoring(
    f"{prefix}-monitoring", StackMonitoringArgs.for_stack(config, after=apis.services), on_apis
)
price = node_hour_price(config.gpu.machine_type, config.gpu.provisioning, config.cost.node_hour_usd)

export_stack_outputs(
    pulumi.export,
    cluster_name=gke.cluster.name,
    cluster_location=gke.cluster.location,
    cluster_project=config.project,
    cluster_endpoint=gke.cluster.endpoint,
    kubeconfig=gke.kubeconfig,
    get_credentials=gke.get_credentials_command,
    lustre_instance_id=lustre.instance.instance_id,
    lustre_mount_point=lustre.mount_point,
    lustre_ip=lustre.ip,
    lustre_filesystem=lustre.instance.filesystem,
    lustre_protected=config.lustre.protect,
    # The jobs CLI bounds a run's kept checkpoints by it (jobs/ckpt_size.py).
    lustre_capacity_gib=config.lustre.capacity_gib,
    # Whether pods get WANDB_API_KEY; the key itself never becomes an output.
    wandb_enabled=SECRET_ENV["wandbApiKey"] in secret_env,
    networks={
        "main": network.main_network.name,
        "gvnic": network.gvnic_network.name,
        "rdma": network.rdma_network.name,
        "rdmaSubnets": [subnet.name for subnet in network.rdma_subnets],
    },
    gpu_pool=gpu_pool.node_pool.name,
    gpu_scaling=config.gpu.scaling_mode,
    gpu_provisioning=config.gpu.provisioning,
    gpu_max_run_hours=config.gpu.node_max_run_hours,
    # What `rl-jobs cost` prices a node-hour at, and the figure's source (components/prices.py).
    gpu_node_hour_usd=price.usd if price else None,
    gpu_node_hour_source=price.source if price else None,
    gpu_node_count=k8s.node_count,
    gpus_per_node=k8s.gpus_per_node,
    ray_cluster_name=k8s.ray_cluster_name,
    ray_namespace=k8s.namespace,
    ray_head_service=k8s.head_service,
    ray_dashboard_port=k8s.dashboard_port,
    ray_framework=k8s.framework,
    dashboard_port_forward=k8s.dashboard_port_forward,
    # Ray's Metrics tab frames Grafana from the user's localhost:3000 (monitoring.grafana).
    grafana_port_forward=k8s.grafana_port_forward,
    # The executor service's in-cluster URL when rewards.codeSandbox is enabled, else None.
    code_sandbox_url=k8s.code_sandbox_url,
)
