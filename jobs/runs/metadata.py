"""The metadata every attempt carries in Ray's job record: written at submit, read by list/resume.

Ray stores job metadata as str -> str, so lists and numbers are encoded here and nowhere else.
Jobs that this CLI did not submit have none of these keys; `RunMetadata.of` reads them leniently
(`run` falls back to the submission id), `RecipeRun.of` strictly (a resume needs every field).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from jobs.common import commands
from jobs.head import protocol

SUBMITTED_BY = commands.INSTALLED


class RunMetadata(BaseModel):
    """What every attempt of a run records, whatever started it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    run: str
    attempt: int | None = None
    kind: str = ""
    stack: str = ""
    git_commit: str = ""
    jobs_commit: str = ""
    submitted_by: str = ""
    recipe: str = ""
    # Where the run saves (`run --checkpoint-dir`; a recipe run always records its own).
    checkpoint_dir: str = ""
    # What a `run` attempt's driver reserves (`run --cpus/--gpus/--resource`) as JSON, "" for
    # nothing: Ray's job record does not give it back, and a resume sends the same.
    reserve: str = ""

    @field_validator("attempt", mode="before")
    @classmethod
    def _attempt(cls, value: object) -> int | None:
        # Foreign jobs may carry any text here: an unreadable attempt is "not one of ours".
        if isinstance(value, str):
            return int(value) if value.isdigit() else None
        return value if isinstance(value, int) else None

    @classmethod
    def of(cls, metadata: Mapping[str, str] | None, fallback_run: str) -> RunMetadata:
        meta = dict(metadata or {})
        meta["run"] = meta.get("run") or fallback_run
        return cls.model_validate(meta)

    def to_ray(self) -> dict[str, str]:
        return _encode(self.model_dump())


class RecipeRun(RunMetadata):
    """A recipe attempt: everything `submit --resume` needs to send the next attempt as it was."""

    kind: Literal["recipe"] = protocol.RECIPE
    attempt: int = Field(ge=1)
    recipe: str
    framework: str
    framework_version: str
    nodes: int = Field(ge=1)
    gpus_per_node: int = Field(ge=1)
    checkpoint_dir: str
    overrides: list[str] = Field(default_factory=list)

    @field_validator("overrides", mode="before")
    @classmethod
    def _overrides(cls, value: object) -> object:
        return json.loads(value) if isinstance(value, str) else value

    @field_validator("nodes", "gpus_per_node", mode="before")
    @classmethod
    def _count(cls, value: object) -> object:
        return int(value) if isinstance(value, str) and value.isdigit() else value

    @classmethod
    def of_job(cls, metadata: Mapping[str, str] | None) -> RecipeRun | None:
        """The recorded recipe run, or None when the metadata is missing or unreadable."""
        try:
            return cls.model_validate(dict(metadata or {}))
        except (ValidationError, json.JSONDecodeError):
            return None


class ExportRun(RunMetadata):
    """An export job of a recipe run (`rl-jobs export`): grouped under the run by `run`,
    but with no `attempt`, so it is never taken for an attempt to resume or follow."""

    kind: Literal["export"] = protocol.EXPORT
    attempt: None = None
    recipe: str
    framework: str
    backend: str
    checkpoint_dir: str
    out: str
    # The step asked for with --step; empty means "the latest complete one".
    step: str = ""


class StageRun(RunMetadata):
    """A stage job (`rl-jobs stage`): a model's snapshot, and its conversion, onto Lustre."""

    kind: Literal["stage"] = protocol.STAGE
    attempt: None = None
    model: str
    revision: str
    convert: bool = False


def _encode(values: Mapping[str, object]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in values.items():
        if value is None:
            continue
        out[key] = json.dumps(value) if isinstance(value, list) else str(value)
    return out


@dataclass(frozen=True)
class Reserve:
    """What the command itself reserves on the cluster (Ray's entrypoint_num_cpus,
    entrypoint_num_gpus and entrypoint_resources); none of it by default."""

    cpus: float | None = None
    gpus: float | None = None
    resources: dict[str, float] | None = None

    def to_json(self) -> str:
        """The reservations as recorded in a `run` attempt's metadata; "" for none."""
        given = {k: v for k, v in asdict(self).items() if v}
        return json.dumps(given, sort_keys=True) if given else ""

    @classmethod
    def from_json(cls, text: str) -> Reserve:
        try:
            values = json.loads(text) if text else {}
        except ValueError:
            return cls()
        if not isinstance(values, dict):
            return cls()
        return cls(**{k: values[k] for k in ("cpus", "gpus", "resources") if k in values})
