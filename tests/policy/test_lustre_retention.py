"""What the policy pack cannot see: Lustre's retain_on_delete, checked on the rendered program.

The analyzer protocol gives policies `protect` but not `retain_on_delete` (see policy/lustre.py),
so the other half of "data outlives `pulumi destroy`" is asserted here, per real stack.
"""

from __future__ import annotations

import pytest

from tests.policy.conftest import rendered
from tools.render import load_stack_file

LUSTRE = "gcp:lustre/instance:Instance"


def _protect_setting(stack: str) -> bool:
    config, _ = load_stack_file(stack)
    return bool(config.get("rl-on-gke:lustre", {}).get("protect", True))


@pytest.mark.plan
def test_lustre_is_protected_and_retained_exactly_when_the_stack_says_so(stack: str) -> None:
    instance = rendered(stack).one(LUSTRE)
    wanted = _protect_setting(stack)
    assert (instance.protect, instance.retain_on_delete) == (wanted, wanted)
    assert instance.inputs["labels"]["rl-on-gke-protect"] == str(wanted).lower()


def test_both_settings_are_exercised_by_the_real_stacks() -> None:
    assert {_protect_setting("dev"), _protect_setting("h200")} == {True, False}
