"""The policy pack as the CLI loads it: metadata, pins, and an entry point that only assembles."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml
from pulumi_policy import Policy, ResourceValidationPolicy, StackValidationPolicy

from policy.rules import PACK_NAME, POLICIES

PACK = Path(__file__).resolve().parents[2] / "policy"


def test_pack_file_declares_the_python_runtime_and_a_description() -> None:
    document = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert document["runtime"] == "python"
    assert document["description"].strip()


def test_pack_requirements_pin_the_same_versions_as_the_program() -> None:
    def pins(path: Path) -> dict[str, str]:
        lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
        return dict(line.split("==") for line in lines if "==" in line)

    pack, program = pins(PACK / "requirements.txt"), pins(PACK.parent / "requirements.txt")
    assert pack["pulumi-policy"] == "1.21.0"
    assert all(program[name] == version for name, version in pack.items())


def test_entry_point_builds_one_mandatory_pack_from_the_rules_module() -> None:
    # Parsed, never imported: PolicyPack() serves gRPC forever.
    tree = ast.parse((PACK / "__main__.py").read_text())
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "PolicyPack"
    ]
    assert len(calls) == 1
    keywords = {k.arg: ast.unparse(k.value) for k in calls[0].keywords}
    assert ast.unparse(calls[0].args[0]) == "PACK_NAME" and PACK_NAME == "rl-on-gke-guardrails"
    assert keywords == {"policies": "POLICIES", "enforcement_level": "EnforcementLevel.MANDATORY"}


def test_rules_have_unique_names_descriptions_and_validators() -> None:
    names = [p.name for p in POLICIES]
    assert len(names) == len(set(names))
    for policy in POLICIES:
        assert isinstance(policy, (ResourceValidationPolicy, StackValidationPolicy))
        assert isinstance(policy, Policy) and policy.description.strip()
        # No per-rule level: the pack's MANDATORY applies to all.
        assert policy.enforcement_level is None


def test_no_pack_module_shadows_an_installed_top_level_package() -> None:
    # The CLI may put policy/ first on sys.path; a `ray.py` or `secrets.py` here would hide the real one.
    import importlib.util

    for module in PACK.glob("*.py"):
        if module.stem.startswith("__"):
            continue
        assert importlib.util.find_spec(module.stem) is None, (
            f"policy/{module.name} shadows '{module.stem}'"
        )
