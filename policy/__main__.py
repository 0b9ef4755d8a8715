"""Entry point the Pulumi CLI runs for `--policy-pack policy`: assembles the pack, nothing else.

Importing this module blocks forever (PolicyPack serves gRPC), so tests import policy.rules.
"""

import sys
from pathlib import Path

# The CLI runs this file with the pack directory first on sys.path; replace it with the repo
# root so `policy.*` and the shared `components.catalogue` import as packages, and so modules
# here can never shadow top-level names such as `ray` or `secrets`.
_PACK_DIR = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _PACK_DIR]
sys.path.insert(0, str(_PACK_DIR.parent))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policy.rules import PACK_NAME, POLICIES  # noqa: E402

PolicyPack(PACK_NAME, policies=POLICIES, enforcement_level=EnforcementLevel.MANDATORY)
