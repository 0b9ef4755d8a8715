"""Stack outputs as the jobs CLI reads them: the credentials hint follows what the stack exports."""

from components.stack_outputs import StackOutputs

BASE = {
    "rayClusterName": "rl-dev-ray",
    "rayNamespace": "rl",
    "rayHeadService": "rl-dev-ray-head-svc",
    "rayDashboardPort": 8265,
    "rayFramework": "nemo-rl",
    "gpuNodeCount": 2,
    "gpusPerNode": 8,
    "clusterName": "rl-dev-gke",
    "clusterLocation": "us-east1",
    "clusterProject": "my-proj",
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


import pytest  # noqa: E402

from jobs.common.errors import Unreachable, UsageError  # noqa: E402
from jobs.runs import stack  # noqa: E402


@pytest.mark.parametrize(
    ("key", "value"), [("gpuNodeCount", -1), ("gpusPerNode", 0), ("gpusPerNode", -1)]
)
def test_a_stack_without_gpus_is_refused_in_one_line_naming_the_output(key, value):
    with pytest.raises(UsageError) as e:
        stack.parse("dev", {**BASE, key: value})
    line = e.value.line()
    assert f"stack 'dev' output {key}={value} is not usable" in line
    assert "at least one GPU node with at least one GPU" in line and "\n" not in line


def test_missing_outputs_are_named():
    with pytest.raises(Unreachable) as e:
        stack.parse("dev", {k: v for k, v in BASE.items() if k != "rayHeadService"})
    assert e.value.message == "stack 'dev' lacks outputs rayHeadService"


def test_a_parked_stack_is_read_but_refused_for_new_attempts_with_the_unpark_command():
    outputs = stack.parse("dev", {**BASE, "gpuNodeCount": 0})
    with pytest.raises(UsageError) as e:
        stack.require_gpus("dev", outputs)
    line = e.value.line()
    assert "stack 'dev' is parked" in line and "gpuNodeCount=0" in line
    assert (
        "pulumi config set --path 'rl-on-gke:gpu.nodeCount' <nodes> --type int --stack dev && pulumi up --stack dev"
        in line
    )
