"""Feeds an offline rendering to the policy pack the way the Pulumi engine would, minus the CLI.

Resource policies get each resource's *inputs* (the engine's Analyze call), stack policies get
every resource's *outputs* with parents and dependencies linked (AnalyzeStack), both wrapped in
pulumi-policy's unknown-checking proxy as in pulumi_policy/policy.py. Secrets are replaced by
the render's mask, so no test can leak a placeholder secret into a message.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from inspect import isawaitable
from typing import Any

from pulumi_policy import (
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import unknown_checking_proxy

from policy.rules import POLICIES
from tools.render import RenderedResource, Rendering, masked


@dataclass(frozen=True)
class Violation:
    policy: str
    urn: str
    message: str


def policy_options(resource: RenderedResource) -> PolicyResourceOptions:
    # The exact pulumi-policy 1.21.0 signature; `parent` is optional, there is no `provider`.
    return PolicyResourceOptions(
        protect=resource.protect,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
        parent=resource.parent or None,
    )


def resource_args(resource: RenderedResource) -> ResourceValidationArgs:
    props = unknown_checking_proxy(masked(resource.inputs))
    return ResourceValidationArgs(
        resource.type, props, resource.urn, resource.name, policy_options(resource), None
    )


def stack_args(rendering: Rendering) -> StackValidationArgs:
    by_urn: dict[str, PolicyResource] = {}
    for resource in rendering.resources:
        state = resource.outputs if resource.custom else resource.inputs
        by_urn[resource.urn] = PolicyResource(
            resource.type,
            unknown_checking_proxy(masked(state)),
            resource.urn,
            resource.name,
            policy_options(resource),
            None,
            None,
            [],
            {},
        )
    for resource in rendering.resources:
        policy_resource = by_urn[resource.urn]
        policy_resource.parent = by_urn.get(resource.parent)
        policy_resource.dependencies = [by_urn[d] for d in resource.dependencies if d in by_urn]
    return StackValidationArgs(list(by_urn.values()))


def _run(result: Any) -> None:
    assert not isawaitable(result), "rules are synchronous; an awaitable would go unchecked here"


def run_policies(rendering: Rendering, policies: Iterable[Policy] = POLICIES) -> list[Violation]:
    """Every violation the given policies report on a rendering."""
    found: list[Violation] = []
    for policy in policies:
        if isinstance(policy, ResourceValidationPolicy):
            for resource in rendering.resources:

                def report(
                    message: str,
                    urn: str | None = None,
                    _r: RenderedResource = resource,
                    _name: str = policy.name,
                ) -> None:
                    found.append(Violation(_name, _r.urn, message))

                _run(policy.validate(resource_args(resource), report))
        elif isinstance(policy, StackValidationPolicy):

            def report_stack(
                message: str, urn: str | None = None, _name: str = policy.name
            ) -> None:
                found.append(Violation(_name, urn or "", message))

            _run(policy.validate(stack_args(rendering), report_stack))
    return found


def mutated(
    rendering: Rendering,
    type_: str,
    change: Callable[[dict[str, Any], RenderedResource], None],
    name_suffix: str = "",
    *,
    protect: bool | None = None,
) -> Rendering:
    """A deep copy of `rendering` where `change` edited the inputs and outputs of matching resources."""
    copied = copy.deepcopy(rendering)
    targets = [r for r in copied.of_type(type_) if r.name.endswith(name_suffix)]
    assert targets, f"no {type_} named *{name_suffix} to mutate"
    for resource in targets:
        change(resource.inputs, resource)
        change(resource.outputs, resource)
        if protect is not None:
            resource.protect = protect
    return copied


def add_resource(rendering: Rendering, resource: RenderedResource) -> Rendering:
    copied = copy.deepcopy(rendering)
    copied.resources.append(resource)
    return copied


def k8s_resource(stack: str, type_: str, name: str, props: dict[str, Any]) -> RenderedResource:
    """A hand-built Kubernetes object as the render would record it."""
    return RenderedResource(
        urn=f"urn:pulumi:{stack}::rl-on-gke::{type_}::{name}",
        type=type_,
        name=name,
        parent="",
        custom=True,
        inputs=copy.deepcopy(props),
        outputs=copy.deepcopy(props),
        dependencies=[],
        protect=False,
        retain_on_delete=False,
        deleted_with="",
        provider="",
    )
