"""Stack outputs as the jobs CLI reads them: the credentials hint follows what the stack exports."""

from jobs.stack import StackOutputs

BASE = {
    "rayClusterName": "rl-dev-ray", "rayNamespace": "rl", "rayHeadService": "rl-dev-ray-head-svc",
    "rayDashboardPort": 8265, "rayFramework": "nemo-rl", "gpuNodeCount": 2, "gpusPerNode": 8,
    "clusterName": "rl-dev-gke", "clusterLocation": "us-east1", "clusterProject": "my-proj",
}


def test_credentials_hint_is_the_stacks_own_command_when_exported():
    exported = "gcloud container clusters get-credentials rl-dev-gke --location us-east1 --project my-proj --dns-endpoint"
    outputs = StackOutputs.model_validate({**BASE, "getCredentials": exported})
    assert outputs.get_credentials_command() == exported


def test_credentials_hint_is_built_from_the_cluster_outputs_for_older_stacks():
    outputs = StackOutputs.model_validate(BASE)
    assert outputs.get_credentials_command() == (
        "gcloud container clusters get-credentials rl-dev-gke --location us-east1 --project my-proj"
    )
