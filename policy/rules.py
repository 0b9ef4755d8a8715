"""The policy pack's rule list: every guard rail, importable without starting the pack.

`PolicyPack(...)` never returns (it serves gRPC until killed), so it lives only in
`__main__.py`; tests and tools import `POLICIES` from here and call each rule directly.
"""

from __future__ import annotations

from pulumi_policy import Policy

from policy import code_sandbox, gcp, image_streaming, lustre, metrics_ui, ray_head, tokens

POLICIES: list[Policy] = [
    *gcp.POLICIES,
    *ray_head.POLICIES,
    *metrics_ui.POLICIES,
    *tokens.POLICIES,
    *lustre.POLICIES,
    *code_sandbox.POLICIES,
    *image_streaming.POLICIES,
]

PACK_NAME = "rl-on-gke-guardrails"
