"""Guard rail on the code-contests executor: model-written code runs sandboxed, with nothing to steal.

The executor (jobs/rewards/service.py) compiles and runs whatever the model wrote. When a stack
has it (rewards.codeSandbox), its Deployment must keep every layer of its isolation (defence in
depth: the code it runs is hostile):
  - `runtimeClassName: gvisor` (GKE Sandbox: the programs talk to gVisor's kernel, not the node's);
  - no credential but its own service token: `automountServiceAccountToken: false`; the only Secret
    use allowed is one env var CODE_SANDBOX_TOKEN read by secretKeyRef from key CODE_SANDBOX_TOKEN
    (the token the Ray pods send; the service drops it from its environment and no box sees it);
    no other Secret in env, envFrom or volumes, no projected volume (it can carry a token);
  - not `privileged` (the executor builds its boxes with a listed set of capabilities instead);
  - a NetworkPolicy in its namespace that selects its pods and denies all egress (`Egress` in
    policyTypes and no egress rule), so a program that escapes its rlimits still cannot call out.
The executor is recognised by the sandbox pool it selects, the gvisor runtime class, or its name,
so removing any one of them still leaves the others to find it.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    PolicyResource,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from components.contract import (
    CODE_SANDBOX,
    GVISOR_RUNTIME_CLASS,
)
from components.contract import (
    CODE_SANDBOX_TOKEN_ENV as TOKEN_ENV,
)
from components.contract import NODE_ROLE_LABEL as POOL_ROLE_LABEL
from policy.props import UNKNOWN, as_dict, as_list, dig, plain

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
NAME_SUFFIX = POOL_ROLE = CODE_SANDBOX


def _is_executor(props: dict[str, Any], pod: dict[str, Any]) -> bool:
    name = dig(props, "metadata", "name")
    return (
        as_dict(pod.get("nodeSelector")).get(POOL_ROLE_LABEL) == POOL_ROLE
        or pod.get("runtimeClassName") == GVISOR_RUNTIME_CLASS
        or (isinstance(name, str) and name.endswith(NAME_SUFFIX))
    )


def _secret_uses(pod: dict[str, Any]) -> list[str]:
    found = []
    for kind in ("initContainers", "containers"):
        for container in as_list(pod.get(kind)):
            container = as_dict(container)
            cname = container.get("name")
            if dig(container, "securityContext", "privileged") is True:
                found.append(f"{kind} {cname}: runs privileged")
            for entry in as_list(container.get("env")):
                ref = dig(entry, "valueFrom", "secretKeyRef")
                if ref in (None, UNKNOWN):
                    continue
                if as_dict(entry).get("name") == TOKEN_ENV and as_dict(ref).get("key") == TOKEN_ENV:
                    continue  # the service token, the one secret the executor holds
                found.append(f"{kind} {cname}: env {as_dict(entry).get('name')} from a Secret")
            for source in as_list(container.get("envFrom")):
                if as_dict(source).get("secretRef") is not None:
                    found.append(f"{kind} {cname}: envFrom a Secret")
    for volume in as_list(pod.get("volumes")):
        volume = as_dict(volume)
        for kind in ("secret", "projected"):
            if volume.get(kind) is not None:
                found.append(f"volume {volume.get('name')} is a {kind} volume")
    return found


def _denies_egress(policy: dict[str, Any], namespace: Any, labels: dict[str, Any]) -> bool:
    if dig(policy, "metadata", "namespace") != namespace:
        return False
    selector = as_dict(dig(policy, "spec", "podSelector", "matchLabels"))
    if not selector or any(labels.get(k) != v for k, v in selector.items()):
        return False
    spec = as_dict(policy.get("spec"))
    return "Egress" in as_list(spec.get("policyTypes")) and not as_list(spec.get("egress"))


def _check(
    resource: PolicyResource,
    props: dict[str, Any],
    pod: dict[str, Any],
    policies: list[dict[str, Any]],
    report: ReportViolation,
) -> None:
    where = f"{resource.name}: the code-sandbox executor"
    runtime = pod.get("runtimeClassName")
    if runtime is not UNKNOWN and runtime != GVISOR_RUNTIME_CLASS:
        report(
            f"{where} has runtimeClassName {runtime!r}: model-written code must run under gVisor; set "
            f"spec.template.spec.runtimeClassName to '{GVISOR_RUNTIME_CLASS}'.",
            resource.urn,
        )
    automount = pod.get("automountServiceAccountToken")
    if automount is not UNKNOWN and automount is not False:
        report(
            f"{where} may mount a service-account token (automountServiceAccountToken is {automount!r}): "
            "set it to false so the programs it runs find no credential.",
            resource.urn,
        )
    for use in _secret_uses(pod):
        report(
            f"{where} holds a Secret or privilege beyond its service token ({use}): its pods must hold no other "
            f"credential; remove it.",
            resource.urn,
        )
    namespace = dig(props, "metadata", "namespace")
    labels = as_dict(dig(props, "spec", "template", "metadata", "labels"))
    if namespace is UNKNOWN or any(v is UNKNOWN for v in labels.values()):
        return
    if not any(_denies_egress(p, namespace, labels) for p in policies):
        report(
            f"{where} has no NetworkPolicy in namespace {namespace!r} that selects its pods with 'Egress' in "
            "policyTypes and no egress rule: add one so the programs it runs cannot reach the network.",
            resource.urn,
        )


def _code_sandbox_isolated(args: StackValidationArgs, report: ReportViolation) -> None:
    policies = [plain(r.props) for r in args.resources if r.resource_type == NETWORK_POLICY]
    for resource in args.resources:
        if resource.resource_type != DEPLOYMENT:
            continue
        props = plain(resource.props)
        pod = as_dict(dig(props, "spec", "template", "spec"))
        if _is_executor(props, pod):
            _check(resource, props, pod, policies, report)


POLICIES = [
    StackValidationPolicy(
        name="code-sandbox-isolated",
        description="The code-contests executor runs under gVisor, unprivileged, holds no Secret but its service token, and has its egress denied.",
        validate=_code_sandbox_isolated,
    ),
]
