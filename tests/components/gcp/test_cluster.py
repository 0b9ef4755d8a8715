"""GkeCluster: private, Workload Identity, Dataplane V2 + multi-networking, add-ons, own node identity."""

from __future__ import annotations

import json

from components.gcp.cluster import NODE_ROLES, GkeCluster, GkeClusterArgs, kubeconfig
from components.gcp.network import Network, NetworkArgs
from tools.render import SecretValue, render_with

CLUSTER = "gcp:container/cluster:Cluster"
POOL = "gcp:container/nodePool:NodePool"


def _render(config):
    def build() -> None:
        network = Network("net", NetworkArgs.for_stack(config))
        cluster = GkeCluster(
            "gke", GkeClusterArgs.for_stack(config, network.main_network, network.main_subnet)
        )
        import pulumi

        pulumi.export("kubeconfig", cluster.kubeconfig)
        pulumi.export("getCredentials", cluster.get_credentials_command)

    return render_with(build, {})


def test_cluster_is_private_with_workload_identity_and_dataplane_v2(config) -> None:
    inputs = _render(config).one(CLUSTER).inputs
    assert inputs["privateClusterConfig"]["enablePrivateNodes"] is True
    assert inputs["workloadIdentityConfig"]["workloadPool"] == "example-project.svc.id.goog"
    assert inputs["datapathProvider"] == "ADVANCED_DATAPATH"
    assert inputs["enableMultiNetworking"] is True
    assert inputs["removeDefaultNodePool"] is True
    assert inputs["ipAllocationPolicy"] == {
        "clusterSecondaryRangeName": "pods",
        "servicesSecondaryRangeName": "services",
    }


def test_control_plane_is_reachable_only_from_the_configured_networks(config) -> None:
    blocks = _render(config).one(CLUSTER).inputs["masterAuthorizedNetworksConfig"]["cidrBlocks"]
    assert blocks == [{"cidrBlock": "203.0.113.0/24", "displayName": "office"}]


def test_ray_operator_and_lustre_csi_addons_on_port_988_with_dcgm_metrics(config) -> None:
    inputs = _render(config).one(CLUSTER).inputs
    addons = inputs["addonsConfig"]
    assert addons["rayOperatorConfigs"][0]["enabled"] is True
    assert addons["rayOperatorConfigs"][0]["rayClusterMonitoringConfig"] == {"enabled": True}
    assert addons["rayOperatorConfigs"][0]["rayClusterLoggingConfig"] == {"enabled": True}
    assert addons["lustreCsiDriverConfig"] == {"enabled": True, "enableLegacyLustrePort": False}
    assert "DCGM" in inputs["monitoringConfig"]["enableComponents"]
    assert inputs["monitoringConfig"]["managedPrometheus"] == {"enabled": True}
    assert inputs["releaseChannel"] == {"channel": "REGULAR"}
    assert inputs["minMasterVersion"] == "1.35"


def test_nodes_run_as_a_dedicated_service_account_with_only_node_roles(config) -> None:
    rendering = _render(config)
    account = rendering.one("gcp:serviceaccount/account:Account").outputs["email"]
    assert account == "rl-test-nodes@example-project.iam.gserviceaccount.com"
    roles = sorted(r.inputs["role"] for r in rendering.of_type("gcp:projects/iAMMember:IAMMember"))
    assert roles == sorted(NODE_ROLES)
    assert not any("admin" in role.lower() or "editor" in role for role in roles)
    assert rendering.one(CLUSTER).inputs["nodeConfig"]["serviceAccount"] == account
    assert rendering.one(POOL).inputs["nodeConfig"]["serviceAccount"] == account


def test_cluster_ignores_the_node_config_gke_reports_back(config) -> None:
    assert _render(config).one(CLUSTER).ignore_changes == ["nodeConfig"]


def test_cluster_waits_for_the_node_roles(config) -> None:
    rendering = _render(config)
    grants = {r.urn for r in rendering.of_type("gcp:projects/iAMMember:IAMMember")}
    assert grants <= set(rendering.one(CLUSTER).dependencies)


def test_system_pool_is_on_demand_in_the_gpu_zone_with_metadata_server(config) -> None:
    pool = _render(config).one(POOL).inputs
    assert pool["name"] == "system"
    assert pool["nodeConfig"]["spot"] is False
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["nodeConfig"]["machineType"] == "n2-standard-16"
    assert pool["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert pool["nodeLocations"] == ["us-east1-b"]
    assert pool["nodeCount"] == 1


def test_kubeconfig_is_a_secret_that_reaches_the_dns_endpoint_with_the_gke_plugin(config) -> None:
    rendering = _render(config)
    exported = rendering.outputs["kubeconfig"]
    assert isinstance(exported, SecretValue)
    document = json.loads(exported.value)
    assert document["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert document["clusters"][0]["cluster"] == {
        "server": "https://gke-0ff11e0000000000-example-project.us-east1.gke.goog"
    }
    assert "token" not in json.dumps(document["users"])
    endpoints = rendering.one(CLUSTER).inputs["controlPlaneEndpointsConfig"]
    assert endpoints == {"dnsEndpointConfig": {"allowExternalTraffic": True}}
    assert rendering.outputs["getCredentials"] == (
        "gcloud container clusters get-credentials rl-test-gke --location us-east1 "
        "--project example-project --dns-endpoint"
    )


def test_without_the_dns_endpoint_the_kubeconfig_uses_the_ip_endpoint_and_its_ca(config) -> None:
    ip_only = config.model_copy(
        update={"cluster": config.cluster.model_copy(update={"dns_endpoint": False})}
    )
    rendering = _render(ip_only)
    document = json.loads(rendering.outputs["kubeconfig"].value)
    assert document["clusters"][0]["cluster"] == {
        "server": "https://203.0.113.10",
        "certificate-authority-data": "T0ZGTElORS1DQQ==",
    }
    endpoints = rendering.one(CLUSTER).inputs["controlPlaneEndpointsConfig"]
    assert endpoints == {"dnsEndpointConfig": {"allowExternalTraffic": False}}
    assert not rendering.outputs["getCredentials"].endswith("--dns-endpoint")


def test_kubeconfig_points_at_the_endpoint_with_its_ca() -> None:
    document = json.loads(kubeconfig("c", "1.2.3.4", "Q0E="))
    assert document["clusters"][0]["cluster"] == {
        "server": "https://1.2.3.4",
        "certificate-authority-data": "Q0E=",
    }
    assert document["current-context"] == "c"


def test_system_pool_upgrades_surge_first_so_it_never_runs_out_of_nodes(config) -> None:
    # The Ray head, kube-dns and konnectivity live here: a one-node pool upgraded in place (0 / 1)
    # would have no node for them during every upgrade or auto-repair.
    pool = _render(config).one(POOL).inputs
    assert pool["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 1, "maxUnavailable": 0}


def test_cluster_gets_the_weekend_night_window_and_states_its_pods_per_node(config) -> None:
    inputs = _render(config).one(CLUSTER).inputs
    assert inputs["maintenancePolicy"] == {
        "recurringWindow": {
            "startTime": "2026-01-03T07:00:00Z",
            "endTime": "2026-01-03T13:00:00Z",
            "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
        },
        # By default node versions are held until end of support.
        "maintenanceExclusions": [
            {
                "exclusionName": "rl-on-gke-hold-node-versions",
                "startTime": "2026-01-01T00:00:00Z",
                "exclusionOptions": {
                    "scope": "NO_MINOR_OR_NODE_UPGRADES",
                    "endTimeBehavior": "UNTIL_END_OF_SUPPORT",
                },
            }
        ],
    }
    assert inputs["defaultMaxPodsPerNode"] == 110


def test_without_authorized_networks_the_ip_endpoint_is_private_and_dns_is_the_way_in(
    stack_config,
) -> None:
    from components.config import parse_stack_config
    from tests.conftest import raw_from_stack

    del stack_config["rl-on-gke:authorizedNetworks"]
    inputs = _render(parse_stack_config(raw_from_stack(stack_config))).one(CLUSTER).inputs
    assert inputs["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert (
        inputs["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["allowExternalTraffic"] is True
    )
    assert inputs["masterAuthorizedNetworksConfig"]["gcpPublicCidrsAccessEnabled"] is False


def test_with_authorized_networks_the_ip_endpoint_stays_public_for_them(config) -> None:
    assert (
        _render(config).one(CLUSTER).inputs["privateClusterConfig"]["enablePrivateEndpoint"]
        is False
    )
