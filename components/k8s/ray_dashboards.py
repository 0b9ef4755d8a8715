"""Ray's own Grafana dashboards, as the pods' Ray (the framework image's, not .venv's) can fill them.

The dashboards come from Ray's factory in the program's venv (Ray 2.60), while the pods run the
framework image's Ray: 2.46.0 (NeMo RL v0.4.0) or 2.48.0 (veRL 0.6.0). A panel that selects on a
label the pods' Ray never emits is empty. tests/components/k8s/test_grafana.py reads, from each
pinned Ray's installed sources (`make venv-ray`), the labels it names, and holds every served
panel to them.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A label Ray 2.60 filters and groups its node panels by that neither 2.46 nor 2.48 emits (no such
# string in their ray/ package). Its panels are the node CPU / memory / disk / GPU / network ones
# Ray's own Metrics tab embeds, so the filter is taken out and the panels kept: a panel selecting
# `RayNodeType=~"(head|worker)"` (the "All" of Ray's custom variable) matches no series.
LABELS_THE_IMAGES_LACK = ("RayNodeType",)
# Labels a pinned Ray does not emit at all, per version: the panels that select on them are left
# out. Ray 2.46 has no TPU labels on its node metrics and no Train v2 controller metrics
# (ray_train_run_id, ray_train_worker_actor_id, ray_train_controller_state); 2.48 has both.
PANEL_LABELS_MISSING: dict[str, frozenset[str]] = {
    "2.46.0": frozenset(
        {
            "TpuIndex",
            "TpuTopology",
            "TpuDeviceName",
            "TpuType",
            "ray_train_run_id",
            "ray_train_worker_actor_id",
            "ray_train_controller_state",
        }
    ),
    "2.48.0": frozenset(),
}


def _without_label(text: str, label: str) -> str:
    """A query or legend with one label's matcher, grouping and legend part taken out."""
    text = re.sub(rf'\s*\b{label}=~"\${label}"\s*,?', "", text)
    text = re.sub(rf",\s*{label}\b", "", text)
    text = re.sub(rf"\(\s*{label}\s*,\s*", "(", text)
    return re.sub(rf"\s*\(\{{\{{{label}\}}\}}\)", "", text)


def _selects_on(panel: dict[str, Any], labels: frozenset[str]) -> bool:
    targets = panel.get("targets") or []
    exprs = [str(t.get("expr", "")) for t in targets if isinstance(t, dict)]
    return any(re.search(rf"\b{label}\b", e) for e in exprs for label in labels)


def _filtered_panels(panels: list[dict[str, Any]], drop: frozenset[str]) -> list[dict[str, Any]]:
    kept = []
    for panel in panels:
        if drop and _selects_on(panel, drop):
            continue
        inner = panel.get("panels")
        if isinstance(inner, list):
            panel["panels"] = _filtered_panels(inner, drop)
        for target in panel.get("targets") or []:
            for key in ("expr", "legendFormat"):
                if isinstance(target.get(key), str):
                    for label in LABELS_THE_IMAGES_LACK:
                        target[key] = _without_label(target[key], label)
        kept.append(panel)
    return kept


def for_the_images_ray(content: str, ray_version: str = "") -> str:
    """A Ray dashboard without what `ray_version` (the pods' Ray; "": only the labels no image's
    Ray emits) cannot fill: its filters, groupings and variables on LABELS_THE_IMAGES_LACK, and
    the panels and variables on labels it does not emit."""
    board = json.loads(content)
    drop = PANEL_LABELS_MISSING.get(ray_version, frozenset())
    board["panels"] = _filtered_panels(list(board.get("panels", [])), drop)
    templating = board.get("templating", {})
    templating["list"] = [
        v
        for v in templating.get("list", [])
        if v.get("name") not in LABELS_THE_IMAGES_LACK
        and not any(re.search(rf"\b{label}\b", json.dumps(v)) for label in drop)
    ]
    return json.dumps(board)


def ray_dashboards(ray_version: str = "") -> dict[str, str]:
    """Ray's dashboards as Ray's own factory writes them, by file name, for the pods' Ray
    (`for_the_images_ray`). Data and Serve are left out: a GRPO run uses neither."""
    from ray.dashboard.modules.metrics import grafana_dashboard_factory as factory

    out = {}
    for generate in (
        factory.generate_default_grafana_dashboard,
        factory.generate_train_grafana_dashboard,
    ):
        content, uid = generate()
        out[f"{uid}.json"] = for_the_images_ray(content, ray_version)
    return out
