"""Writes Ray's own Grafana dashboards as a given Ray generates them, for the program to serve.

Run by the Ray it writes for, from that Ray's venv (`make ray-dashboards`): the pods run the
framework image's Ray (2.46.0 for NeMo RL v0.4.0, 2.48.0 for veRL 0.6.0), and only that Ray's own
factory writes panels for the metrics and labels it emits, with the panel ids its own dashboard's
Metrics tab embeds. The program runs under a newer Ray and so serves these files
(components/k8s/ray_dashboards.py); tests/components/k8s/test_grafana.py generates them again
under each pinned Ray and compares.

Needs only the standard library and Ray: it runs in `.venv-ray-<version>`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# The folder under which each Ray version's dashboards live, one folder per version.
OUT_DIR = Path(__file__).resolve().parents[1] / "components" / "k8s" / "ray_grafana"


def generate() -> dict[str, str]:
    """The dashboards the running Ray's factory writes, by file name. Data and Serve are left
    out: a GRPO run uses neither."""
    from ray.dashboard.modules.metrics import grafana_dashboard_factory as factory

    out = {}
    for write in (
        factory.generate_default_grafana_dashboard,
        factory.generate_train_grafana_dashboard,
    ):
        content, uid = write()
        # Stored pretty-printed with sorted keys, so a new Ray's change reads as a small diff.
        out[f"{uid}.json"] = json.dumps(json.loads(content), indent=1, sort_keys=True) + "\n"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="folder of version folders")
    args = parser.parse_args(argv)
    # The factory takes a dashboard's uid and global filters from RAY_GRAFANA_<NAME>_DASHBOARD_*
    # variables (grafana_dashboard_factory.py `_read_configs_for_dashboard`): the files must not
    # depend on the shell that wrote them. Read before `import ray`, which sets some RAY_* itself.
    leaked = sorted(k for k in os.environ if k.startswith("RAY_GRAFANA"))
    if leaked:
        print(f"refusing to write with {', '.join(leaked)} set", file=sys.stderr)
        return 2
    import ray

    target = args.out / ray.__version__
    target.mkdir(parents=True, exist_ok=True)
    for name, content in generate().items():
        (target / name).write_text(content)
        print(f"wrote {target / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
