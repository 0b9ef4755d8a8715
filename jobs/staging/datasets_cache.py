"""Hub datasets a recipe's framework loads by name, loaded once into the Hugging Face home so offline runs find them.

With HF_HUB_OFFLINE=1, `datasets.load_dataset(name, config)` serves the newest cached copy of
that dataset (the `datasets` library's cache under `<hf home>/datasets`), so loading each one once
here, online, with the same name and config the framework uses, is what lets the run stay
offline. A record per dataset under `<hf home>/rl-on-gke/staged-datasets/` says it was done.
"""

from __future__ import annotations

import json
from pathlib import Path

from jobs.staging import record
from jobs.staging.download import Say, StageError


def record_file(home: Path, name: str, config: str | None) -> Path:
    slug = name.replace("/", "--") + (f"--{config}" if config else "")
    return home / "rl-on-gke" / "staged-datasets" / f"{slug}.json"


def parse(spec: str) -> tuple[str, str | None]:
    """`org/name` or `org/name:config`."""
    name, _, config = spec.partition(":")
    return name, config or None


def is_staged(home: Path, name: str, config: str | None) -> bool:
    try:
        return bool(json.loads(record_file(home, name, config).read_text("utf-8")).get("splits"))
    except (OSError, ValueError, AttributeError):
        return False


def stage(home: Path, spec: str, say: Say) -> None:
    name, config = parse(spec)
    if is_staged(home, name, config):
        say(f"dataset {spec} staged: runs read it from the cache")
        return
    from datasets import load_dataset

    say(f"dataset {spec} is not in the cache: loading it once")
    try:
        loaded = load_dataset(name, config, cache_dir=str(home / "datasets"))
    except Exception as e:  # datasets raises many kinds; all mean "not staged"
        text = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise StageError(f"dataset {spec} could not be loaded: {text}") from None
    splits = {split: len(part) for split, part in loaded.items()}
    record.write_atomic(
        record_file(home, name, config),
        {"dataset": name, "config": config, "splits": splits, "staged_at": record.now()},
    )
    say(f"dataset {spec} staged: " + ", ".join(f"{k} {v} rows" for k, v in splits.items()))
