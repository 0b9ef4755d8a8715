"""Where a staged model lives in the Hugging Face home, in the layouts Hugging Face and NeMo RL read.

- The snapshot is Hugging Face's own cache (huggingface_hub `constants.HF_HUB_CACHE` =
  `<hf home>/hub`; a repo is `models--<org>--<name>`, its files under `snapshots/<commit>/`, and
  `refs/<branch>` holds a commit), so transformers, vLLM and Megatron-Bridge find it by name.
- NeMo RL v0.4.0 converts a model for Megatron once into `get_megatron_checkpoint_dir()/<name>`
  (nemo_rl/models/policy/utils.py L231-254: `$NRL_MEGATRON_CHECKPOINT_DIR`, else
  `<hf home>/nemo_rl`) and skips the conversion whenever `iter_0000000` exists there
  (megatron_policy_worker.py L486-508); a local path becomes `model_<path with / as _>`.
- Our own records sit apart, under `<hf home>/rl-on-gke/staged/`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# A Hugging Face model id: `org/name` (or a bare legacy `name`), the characters the Hub allows.
_MODEL_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
# Written into a conversion directory, last, by `jobs.staging.megatron` only.
CONVERTED_MARKER = "rl-on-gke-converted.json"
# NeMo RL's own test of "already converted" (megatron_policy_worker.py L494-496).
MEGATRON_ITERATION = "iter_0000000"


def is_model_id(model: str) -> bool:
    return bool(_MODEL_ID.match(model)) and ".." not in model


def hf_home() -> Path:
    """The Hugging Face home as the frameworks resolve it (huggingface_hub reads the job's
    environment once, at import: this process's, as each framework process does)."""
    from huggingface_hub import constants

    return Path(constants.HF_HOME)


def repo_folder(home: Path, model: str) -> Path:
    return home / "hub" / ("models--" + model.replace("/", "--"))


def snapshot_dir(home: Path, model: str, commit: str) -> Path:
    return repo_folder(home, model) / "snapshots" / commit


def ref_file(home: Path, model: str, ref: str = "main") -> Path:
    return repo_folder(home, model) / "refs" / ref


def record_file(home: Path, model: str) -> Path:
    return home / "rl-on-gke" / "staged" / (model.replace("/", "--") + ".json")


def megatron_root(home: Path, env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    env = os.environ if env is None else env
    override = (env.get("NRL_MEGATRON_CHECKPOINT_DIR") or "").strip()
    return Path(override) if override else home / "nemo_rl"


def megatron_dir(
    home: Path, model: str, env: dict[str, str] | os._Environ[str] | None = None
) -> Path:
    subdir = f"model_{model.replace('/', '_')}" if os.path.exists(model) else model
    return megatron_root(home, env) / subdir
