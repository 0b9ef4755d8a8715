"""The rl-on-gke program: load the stack's config once, compose the components, export outputs.

Layers flow one way: config -> GCP (networks, Lustre, GKE, GPU pool) -> Kubernetes (Ray).
"""

import pulumi

from components.cluster import GkeCluster, GkeClusterArgs
from components.gpu_pool import GpuNodePool, GpuNodePoolArgs
from components.k8s.layer import KubernetesLayer, KubernetesLayerArgs
from components.lustre import ManagedLustre, ManagedLustreArgs, PrivateServiceAccess, PrivateServiceAccessArgs
from components.network import Network, NetworkArgs
from components.stack_inputs import load_stack

config, secrets = load_stack()
prefix = config.name_prefix

network = Network(prefix, NetworkArgs(config=config))
psa = PrivateServiceAccess(f"{prefix}-psa", PrivateServiceAccessArgs(config=config, network=network.main_network))
lustre = ManagedLustre(
    f"{prefix}-lustre", ManagedLustreArgs(config=config, network=network.main_network, psa=psa)
)
gke = GkeCluster(
    f"{prefix}-gke", GkeClusterArgs(config=config, network=network.main_network, subnetwork=network.main_subnet)
)
gpu_pool = GpuNodePool(
    f"{prefix}-gpu",
    GpuNodePoolArgs(
        config=config,
        cluster=gke.cluster,
        service_account=gke.node_service_account.email,
        gvnic_network=network.gvnic_network.name,
        gvnic_subnet=network.gvnic_subnet.name,
        rdma_network=network.rdma_network.name,
        rdma_subnets=[subnet.name for subnet in network.rdma_subnets],
    ),
)
k8s = KubernetesLayer(
    f"{prefix}-k8s",
    KubernetesLayerArgs(
        config=config,
        secrets=secrets,
        kubeconfig=gke.kubeconfig,
        cluster=gke.cluster,
        gpu_pool=gpu_pool.node_pool,
        system_pool_name=gke.system_pool_name,
        gvnic_network_name=network.gvnic_network.name,
        gvnic_subnet_name=network.gvnic_subnet.name,
        rdma_network_name=network.rdma_network.name,
        rdma_subnet_names=[subnet.name for subnet in network.rdma_subnets],
        lustre_instance_id=lustre.instance.instance_id,
        lustre_mount_point=lustre.mount_point,
    ),
)

pulumi.export("clusterName", gke.cluster.name)
pulumi.export("clusterLocation", gke.cluster.location)
pulumi.export("clusterProject", config.project)
pulumi.export("clusterEndpoint", gke.cluster.endpoint)
pulumi.export("kubeconfig", gke.kubeconfig)
pulumi.export("getCredentials", gke.get_credentials_command)
pulumi.export("lustreInstanceId", lustre.instance.instance_id)
pulumi.export("lustreMountPoint", lustre.mount_point)
pulumi.export("lustreIp", lustre.ip)
pulumi.export("lustreFilesystem", lustre.instance.filesystem)
pulumi.export("lustreProtected", config.lustre.protect)
# The jobs CLI bounds a run's kept checkpoints by it (jobs/ckpt_size.py).
pulumi.export("lustreCapacityGib", config.lustre.capacity_gib)
pulumi.export("networks", {
    "main": network.main_network.name,
    "gvnic": network.gvnic_network.name,
    "rdma": network.rdma_network.name,
    "rdmaSubnets": [subnet.name for subnet in network.rdma_subnets],
})
pulumi.export("gpuPool", gpu_pool.node_pool.name)
pulumi.export("gpuNodeCount", k8s.node_count)
pulumi.export("gpusPerNode", k8s.gpus_per_node)
pulumi.export("rayClusterName", k8s.ray_cluster_name)
pulumi.export("rayNamespace", k8s.namespace)
pulumi.export("rayHeadService", k8s.head_service)
pulumi.export("rayDashboardPort", k8s.dashboard_port)
pulumi.export("rayFramework", k8s.framework)
pulumi.export("dashboardPortForward", k8s.dashboard_port_forward)
