"""docs/destroy.md names the resources the program really keeps, and the keys it really reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.policy.conftest import rendered
from tools.render import load_stack_file

DOC = (Path(__file__).resolve().parents[2] / "docs" / "destroy.md").read_text()


@pytest.mark.plan
def test_targeted_update_lists_exactly_the_resources_kept_for_the_data() -> None:
    kept = {r.urn for r in rendered("h200").resources if r.protect or r.retain_on_delete}
    targets = set(re.findall(r"--target '([^']+)'", DOC))
    assert targets == kept


def test_config_keys_in_the_commands_exist_in_the_stack_files() -> None:
    config, _ = load_stack_file("h200")
    for key in re.findall(r"config set --path '([^']+)'", DOC):
        namespace_key, _, field = key.partition(".")
        assert field in config[namespace_key], key


@pytest.mark.plan
def test_the_peering_deletion_policy_the_doc_names_is_the_one_each_stack_renders() -> None:
    """docs/destroy.md said nothing remains after A while the abandoned peering
    kept the main VPC; it now names the policy per protection, which must be what is rendered."""
    connection = "gcp:servicenetworking/connection:Connection"
    for stack, policy in (("dev", "REMOVE_PEERING"), ("h200", "ABANDON")):
        (rendered_connection,) = rendered(stack).of_type(connection)
        assert rendered_connection.inputs["deletionPolicy"] == policy
        assert f"`{policy}`" in DOC
    assert "magic-modules#18476" in DOC and "disable_on_destroy: false" in DOC
