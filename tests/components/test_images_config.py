"""`rl-on-gke:images`: digests by catalogue name, refused by key when malformed or unknown."""

from __future__ import annotations

from typing import Any

import pytest

from components.config import parse_stack_config
from components.rules import ConfigError
from tests.conftest import raw_from_stack


def test_a_stack_digest_is_read_per_image(stack_config: dict[str, Any]) -> None:
    stack_config["rl-on-gke:images"] = {"verl": {"digest": "sha256:" + "b" * 64}}
    config = parse_stack_config(raw_from_stack(stack_config))
    assert config.images["verl"].digest == "sha256:" + "b" * 64


@pytest.mark.parametrize(
    ("images", "says"),
    [
        ({"nemo-rl": {"digest": "v0.4.0"}}, "rl-on-gke:images.nemo-rl.digest = 'v0.4.0'"),
        ({"nemo-rl": {"digest": "sha256:ABC"}}, "must be sha256:<64 lowercase hex digits>"),
        ({"pytorch": {"digest": "sha256:" + "c" * 64}}, "unknown image 'pytorch'"),
    ],
)
def test_a_bad_image_setting_is_refused_by_key(
    stack_config: dict[str, Any], images: dict[str, Any], says: str
) -> None:
    stack_config["rl-on-gke:images"] = images
    with pytest.raises(ConfigError) as err:
        parse_stack_config(raw_from_stack(stack_config))
    assert says in str(err.value)
