"""Ray's own Grafana dashboards, as the pods' Ray (the framework image's, not .venv's) writes them.

The pods run the framework image's Ray: 2.46.0 (NeMo RL v0.4.0) or 2.48.0 (veRL 0.6.0). Each Ray
version's dashboard factory writes panels for the metrics and labels that version emits, with the
panel ids its own Metrics tab embeds; a newer Ray's panels query metrics the older one never
exports (e.g. 2.60's `ray_node_mem_used_host`, `ray_component_rss_bytes`) and filter on a label it
never emits (`RayNodeType`), and are empty there. The program runs under a newer Ray, so the
pinned versions' own dashboards are kept here as files, written by each pinned Ray
(`make ray-dashboards`, tools/ray_dashboards.py) and checked against a fresh generation under it
by tests/components/k8s/test_grafana.py.
"""

from __future__ import annotations

import json
from pathlib import Path

# One folder per Ray version, each holding that Ray's dashboards by file name.
RAY_GRAFANA_DIR = Path(__file__).resolve().parent / "ray_grafana"


def ray_versions() -> tuple[str, ...]:
    """The Ray versions whose dashboards are kept."""
    return tuple(sorted(p.name for p in RAY_GRAFANA_DIR.iterdir() if p.is_dir()))


def ray_dashboards(ray_version: str) -> dict[str, str]:
    """Ray `ray_version`'s own default and Train dashboards, by file name (Data and Serve are
    left out: a GRPO run uses neither)."""
    folder = RAY_GRAFANA_DIR / ray_version
    if not folder.is_dir():
        raise ValueError(
            f"no Ray dashboards kept for Ray {ray_version!r}; kept: {', '.join(ray_versions())}. "
            "Add the version to IMAGE_RAY_VERSIONS in the Makefile and run `make ray-dashboards`"
        )
    return {
        path.name: json.dumps(json.loads(path.read_text()), separators=(",", ":"))
        for path in sorted(folder.glob("*.json"))
    }
