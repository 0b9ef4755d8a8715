"""Judging a bare address's framework by the Ray version its dashboard reports."""

from __future__ import annotations

import pytest

from components.catalogue import FRAMEWORKS
from jobs.recipes import frameworks


def test_the_catalogue_pins_tell_the_two_frameworks_apart():
    # The decision below is only meaningful while the two images ship different Ray minors.
    pins = {frameworks.major_minor(spec.ray_version) for spec in FRAMEWORKS.values()}
    assert len(pins) == len(FRAMEWORKS)


@pytest.mark.parametrize(
    "recipe_fw, cluster_ray, refuse",
    [
        ("nemo-rl", FRAMEWORKS["verl"].ray_version, False),  # only a floor: not evidence
        ("verl", FRAMEWORKS["nemo-rl"].ray_version, True),
        ("nemo-rl", "2.49.2", False),  # within veRL's open range: a note
        ("verl", "2.46.7", True),  # patch releases do not matter
        ("verl", "2.47.0", False),  # below veRL's floor, not NeMo's
        ("nemo-rl", FRAMEWORKS["nemo-rl"].ray_version, False),  # its own Ray
        ("nemo-rl", "2.46.9", False),
        ("verl", "2.60.0", False),  # above veRL's floor: its own
        ("nemo-rl", "2.45.0", False),  # neither image's Ray: a note
        ("nemo-rl", None, False),  # no version reported: a note
        ("verl", "nightly", False),
    ],
)
def test_refuses_only_when_the_cluster_has_the_other_frameworks_ray(recipe_fw, cluster_ray, refuse):
    verdict = frameworks.by_ray_version("r", recipe_fw, cluster_ray, "http://h:8265")
    assert verdict.refuse is refuse
    if refuse:
        assert verdict.message.startswith(f"recipe r needs a {recipe_fw} cluster")
        assert f"--framework {recipe_fw}" in verdict.hint
    else:
        assert verdict.message.startswith("note: ")
        assert f"--framework {recipe_fw}" in verdict.message


@pytest.mark.parametrize(
    "cluster_ray, matches",
    [
        ("2.48.0", True),
        ("2.49.2", True),
        ("2.51.1", True),
        ("2.47.9", False),
        ("2.46.0", False),
    ],
)
def test_the_verl_image_ray_is_known_only_from_vllm_0_11s_floor(cluster_ray, matches):
    # vLLM 0.11 needs ray[cgraph]>=2.48.0 and the image pins no exact Ray (catalogue source).
    assert FRAMEWORKS["verl"].ray_floor == "2.48.0"
    assert frameworks.ray_matches("verl", cluster_ray) is matches
    verdict = frameworks.by_ray_version("r", "verl", cluster_ray, "http://h:8265")
    assert ("as the verl image does" in verdict.message) is matches
