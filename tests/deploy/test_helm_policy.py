"""What a reviewer checks in the chart's rendered manifests, over the defaults and every profile:
pinned images, limits, probes on the server's own endpoint, non-root and locked-down containers,
egress that cannot reach the cluster or the metadata endpoint, Redis and secrets wired as the
server reads them, sizes derived from the byte budgets, a shutdown longer than the server's drain,
and every value of values.yaml documented.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from mcp_server.core.settings import Settings
from mcp_server.middleware.http import HTTPGuardMiddleware
from tests.deploy._chart import (
    CHART,
    METADATA,
    PROFILES,
    ROOT,
    env_of,
    of_kind,
    render,
    rendered,
    server_deployment,
    violations,
)

VALUES = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))


def _container(docs: Any) -> dict[str, Any]:
    return server_deployment(docs)["spec"]["template"]["spec"]["containers"][0]


def _volumes(docs: Any) -> dict[str, dict[str, Any]]:
    return {volume["name"]: volume for volume in server_deployment(docs)["spec"]["template"]["spec"]["volumes"]}


def _server_selector() -> dict[str, str]:
    return dict(server_deployment(rendered())["spec"]["selector"]["matchLabels"])


@pytest.mark.parametrize("profile", [None, *PROFILES])
def test_the_rendered_workloads_pass_the_reviewers_checks(profile: str | None) -> None:
    assert violations(rendered(profile)) == []


@pytest.mark.parametrize(("setting", "complaint"), [
    ("securityContext.allowPrivilegeEscalation=true", "privilege escalation allowed"),
    ("securityContext.readOnlyRootFilesystem=false", "root filesystem writable"),
    ("networkPolicy.blockedCIDRs={10.0.0.0/8}", "egress reaches 169.254.169.254"),
    ("resources.limits.cpu=1", "no memory limit"),
    ("redis.image.tag=latest", "is not pinned"),
])
def test_the_checks_find_what_a_bad_value_breaks(setting: str, complaint: str) -> None:
    assert any(complaint in found for found in violations(render("--set", setting)))


def test_the_probes_ask_the_servers_health_endpoint_with_a_host_its_guard_accepts() -> None:
    container = _container(rendered())
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        request = container[probe]["httpGet"]
        assert request["path"] == "/health" and request["port"] == "http"
        host = {header["name"]: header["value"] for header in request["httpHeaders"]}["Host"]
        assert _guard_status(Settings(host="0.0.0.0"), host) == 200


def test_the_probe_windows_fit_the_cold_start_and_the_servers_own_patience() -> None:
    container = _container(rendered())
    startup, liveness = container["startupProbe"], container["livenessProbe"]
    # cold starts measured to the first 200 on /health: 5.8 to 22.2 s (docs/deployment.md, Containers)
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 5 * 22.2
    assert startup["periodSeconds"] <= 2  # a pod is ready within 2 s of its models
    # a worker busy embedding may be slow to answer; the server itself waits this long for one
    patience = Settings.model_fields["worker_healthcheck_timeout"].default
    assert liveness["periodSeconds"] * liveness["failureThreshold"] >= patience


def test_the_scrapers_and_the_services_names_pass_the_dns_rebinding_guard_and_others_do_not() -> None:
    """MCP_ALLOWED_HOSTS as the kubelet expands it ($(POD_IP)) lets a Prometheus scrape by pod IP and
    a client by the Service's name through; a stranger's Host is still refused (421)."""
    env = env_of(_container(rendered("ingress-monitoring.yaml")))
    allowed = env["MCP_ALLOWED_HOSTS"].replace("$(POD_IP)", "10.244.3.17")
    settings = Settings(host="0.0.0.0", allowed_hosts=allowed)
    for host in ("10.244.3.17:8000", "rag-rag-document-server:8000", "rag-rag-document-server.rag.svc:8000",
                 "rag-rag-document-server.rag.svc.cluster.local:8000", "rag.example.com"):
        assert _guard_status(settings, host) == 200, host
    assert _guard_status(settings, "attacker.example:8000") == 421


def _guard_status(settings: Settings, host: str) -> int:
    app = Starlette(routes=[Route("/health", lambda request: PlainTextResponse("ok"))],
                    middleware=[])
    guarded = HTTPGuardMiddleware(app, settings=settings)
    with TestClient(guarded, base_url=f"http://{host}") as client:
        return client.get("/health", headers={"Host": host}).status_code


@pytest.mark.parametrize("profile", [None, *PROFILES])
def test_every_setting_the_chart_passes_is_one_the_server_reads(profile: str | None) -> None:
    known = {f"MCP_{name.upper()}" for name in Settings.model_fields} | {"REDIS_URL"}
    names = set(env_of(_container(rendered(profile)))) - {"POD_IP"}
    assert names <= known, names - known


def test_the_bundled_redis_is_wired_as_the_shared_index_store() -> None:
    docs = rendered()
    env = env_of(_container(docs))
    (redis,) = [service for service in of_kind(docs, "Service")
                if service["metadata"]["labels"]["app.kubernetes.io/component"] == "redis"]
    assert env["REDIS_URL"] == f"redis://{redis['metadata']['name']}:6379/0"
    assert env["MCP_INDEX_STORE"] == "redis"


def test_production_takes_redis_and_the_api_keys_from_secrets_never_from_values() -> None:
    docs = rendered("production.yaml")
    env = env_of(_container(docs))
    assert env["REDIS_URL"] == {"secretKeyRef": {"name": "rag-redis", "key": "redis-url"}}
    assert env["MCP_API_KEYS"] == {"secretKeyRef": {"name": "rag-keys", "key": "MCP_API_KEYS"}}
    assert env["MCP_INDEX_STORE"] == "redis"
    assert not [doc for doc in docs if doc["kind"] in ("Secret", "ConfigMap")]
    assert not [doc for doc in of_kind(docs, "Deployment") if doc["metadata"]["name"].endswith("redis")]


def test_without_redis_every_pod_keeps_its_own_index_folder() -> None:
    env = env_of(_container(rendered("minimal.yaml")))
    assert "REDIS_URL" not in env and "MCP_INDEX_STORE" not in env


def test_memory_and_disk_follow_the_byte_budgets_as_values_yaml_explains() -> None:
    server, derive = VALUES["server"], VALUES["resources"]["derive"]
    for profile, workers, budget, parsers in [(None, 1, 768, 2), ("persistence.yaml", 2, 768, 2),
                                              ("minimal.yaml", 1, 512, 2)]:
        resources = _container(rendered(profile))["resources"]
        request = derive["overheadMB"] + workers * (derive["perWorkerMB"] + budget)
        limit = request + workers * derive["transientMB"] + parsers * derive["perParserMB"]
        assert resources["requests"]["memory"] == f"{request}Mi", profile
        assert resources["limits"]["memory"] == f"{limit}Mi", profile
        assert resources["requests"]["cpu"] == str(workers)
    assert (server["workers"], server["memoryBudgetMB"], server["parseWorkers"]) == (1, 768, 2)
    assert _volumes(rendered())["index"]["emptyDir"]["sizeLimit"] == f"{server['indexDirMaxMB'] + 256}Mi"
    claim = _volumes(rendered("persistence.yaml"))["index"]
    assert claim["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"] == "8448Mi"


def test_the_server_writes_only_to_its_volumes() -> None:
    """Read-only root: every folder the server writes (docs/configuration.md) is a mounted volume."""
    container = _container(rendered())
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    env = env_of(container)
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    for folder in (env["MCP_INDEX_DIR"], env["MCP_UPLOAD_DIR"], "/tmp", "/var/cache/rag"):
        assert any(folder == mount or folder.startswith(mount + "/") for mount in mounts), folder


def test_a_pod_drains_longer_than_the_server_lets_calls_finish() -> None:
    source = (ROOT / "mcp_server" / "__main__.py").read_text(encoding="utf-8")
    drain = int(re.search(r'"timeout_graceful_shutdown":\s*(\d+)', source).group(1))  # type: ignore[union-attr]
    spec = server_deployment(rendered())["spec"]["template"]["spec"]
    sleep = int(spec["containers"][0]["lifecycle"]["preStop"]["exec"]["command"][-1])
    assert sleep >= 3  # endpoints and proxies forget the pod before SIGTERM
    assert spec["terminationGracePeriodSeconds"] >= sleep + drain + 10  # + closing the parser pool and models


def test_the_network_policy_allows_dns_and_the_internet_but_not_the_metadata_endpoint() -> None:
    policy = next(doc for doc in of_kind(rendered(), "NetworkPolicy") if doc["metadata"]["name"].endswith("server"))
    egress = policy["spec"]["egress"]
    assert any({"port": 53, "protocol": "UDP"} in rule["ports"] for rule in egress)
    internet = [rule for rule in egress if any("ipBlock" in peer for peer in rule["to"])]
    assert {port["port"] for rule in internet for port in rule["ports"]} == {80, 443}
    blocks = [peer["ipBlock"] for rule in internet for peer in rule["to"]]
    assert {block["cidr"] for block in blocks} == {"0.0.0.0/0", "::/0"}
    assert "169.254.0.0/16" in blocks[0]["except"] and str(METADATA).startswith("169.254.")


def test_the_bundled_redis_is_reached_by_the_server_pods_alone() -> None:
    policy = next(doc for doc in of_kind(rendered(), "NetworkPolicy") if doc["metadata"]["name"].endswith("redis"))
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": _server_selector()}}]
    assert policy["spec"]["egress"] == []


def test_the_service_monitor_scrapes_the_servers_metrics_with_a_key_from_a_secret() -> None:
    (monitor,) = of_kind(rendered("ingress-monitoring.yaml"), "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["path"]) == ("http", "/metrics")
    assert endpoint["authorization"]["credentials"] == {"name": "rag-keys", "key": "MCP_API_KEYS"}
    assert monitor["spec"]["selector"]["matchLabels"] == _server_selector()


def test_the_autoscaler_scales_on_cpu_and_on_a_documented_server_metric() -> None:
    (hpa,) = of_kind(rendered("ingress-monitoring.yaml"), "HorizontalPodAutoscaler")
    kinds = {metric["type"]: metric for metric in hpa["spec"]["metrics"]}
    assert kinds["Resource"]["resource"]["name"] == "cpu"
    assert kinds["Pods"]["pods"]["metric"]["name"] == "rag_index_builds_waiting"
    deployment = server_deployment(rendered())
    assert "replicas" not in deployment["spec"]  # the HPA owns the count


def _leaf_keys(lines: list[str]) -> list[tuple[int, str, bool]]:
    """(line number, dotted key, documented) of every value in values.yaml that is not a section."""
    found: list[tuple[int, str, bool]] = []
    stack: list[tuple[int, str, bool]] = []  # (indent, key, documented as a whole with "# --")
    for number, line in enumerate(lines):
        match = re.match(r"^( *)([A-Za-z][\w.-]*):(.*)$", line)
        if not match:
            continue
        indent, key, rest = len(match.group(1)), match.group(2), match.group(3).strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        comments = []  # the comment block right above the key
        for i in range(number - 1, -1, -1):
            if not lines[i].strip().startswith("#"):
                break
            comments.append(lines[i].strip())
        whole = any(comment.startswith("# --") for comment in comments)
        covered = whole or any(documented for _, _, documented in stack)
        dotted = ".".join([*(k for _, k, _ in stack), key])
        following = lines[number + 1] if number + 1 < len(lines) else ""
        is_section = rest == "" and len(following) - len(following.lstrip()) > indent \
            and not following.lstrip().startswith("- ")
        if not is_section:
            found.append((number + 1, dotted, covered or bool(comments)))
        stack.append((indent, key, whole))
    return found


def test_every_value_in_values_yaml_is_documented() -> None:
    leaves = _leaf_keys((CHART / "values.yaml").read_text(encoding="utf-8").splitlines())
    assert len(leaves) > 60
    assert [f"line {number}: {key}" for number, key, documented in leaves if not documented] == []


def test_the_documentation_check_finds_a_value_without_a_comment() -> None:
    leaves = _leaf_keys(["server:", "  # -- documented", "  port: 8000", "  workers: 1"])
    assert [(key, documented) for _, key, documented in leaves] == [("server.port", True), ("server.workers", False)]
