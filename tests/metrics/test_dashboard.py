"""The Grafana dashboard and the documented queries use exactly the exported metric names."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from mcp_server import metrics
from tests.mcp_harness import make_settings

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"\brag_[a-z0-9_]+")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def exported() -> dict[str, str]:
    """Every sample name a scrape can hold -> the family it belongs to."""
    metrics.configure(make_settings())
    names = {}
    for family in text_string_to_metric_families(metrics.render()[0].decode()):
        for suffix in SUFFIXES[family.type]:
            names[family.name + suffix] = family.name
    return names


def dashboard_expressions() -> list[str]:
    dashboard = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text(encoding="utf-8"))
    panels = dashboard["panels"] + [inner for p in dashboard["panels"] for inner in p.get("panels", [])]
    return [target["expr"] for panel in panels for target in panel.get("targets", [])]


def test_every_metric_in_the_dashboard_is_exported_and_every_exported_family_is_charted() -> None:
    names = exported()
    used = {name for expr in dashboard_expressions() for name in NAME.findall(expr)}
    assert used, "no expressions found"
    assert used <= set(names), sorted(used - set(names))
    assert {names[name] for name in used} == set(names.values()) == set(metrics.metric_names())


def test_the_deployment_guide_names_only_exported_metrics_and_documents_them_all() -> None:
    guide = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    section = guide[guide.index("## Metrics"):]
    names = exported()
    queries = "\n".join(re.findall(r"```promql\n(.*?)```", section, flags=re.S))
    assert set(NAME.findall(queries)) <= set(names), sorted(set(NAME.findall(queries)) - set(names))
    documented = set(NAME.findall(section))  # the table names families (a histogram's, without suffix)
    assert documented <= set(names) | set(names.values()), sorted(documented - set(names) - set(names.values()))
    assert set(names.values()) <= {names.get(name, name) for name in documented}
