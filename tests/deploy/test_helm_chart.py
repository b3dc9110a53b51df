"""The Helm chart (deploy/helm/rag-document-server) without a cluster: `helm lint`, `helm template`
of the defaults and of every profile, each rendered manifest validated against Kubernetes' own
JSON schemas of 1.31 to 1.35 in strict mode (an unknown or misspelt field is an error), and proof
that the validation and the chart's guards refuse what they should.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy._chart import (
    CHART,
    KUBERNETES_VERSIONS,
    OPERATOR_KINDS,
    PROFILES,
    helm,
    load_manifests,
    render,
    rendered,
    server_deployment,
    validate_strictly,
)


@pytest.mark.parametrize("profile", [None, *PROFILES])
def test_helm_lint_passes_strictly_on_the_defaults_and_every_profile(profile: str | None) -> None:
    args = ["-f", str(CHART / "profiles" / profile)] if profile else []
    result = helm("lint", str(CHART), "--strict", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize("kube_version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("profile", [None, *PROFILES])
def test_every_rendered_manifest_is_valid_for_each_supported_kubernetes(profile: str | None, kube_version: str) -> None:
    docs = rendered(profile, kube_version)
    validated = 0
    for doc in docs:
        if doc["kind"] in OPERATOR_KINDS:
            continue  # a CRD: tests/deploy/test_helm_policy.py checks its fields
        validate_strictly(doc, kube_version)
        validated += 1
    assert validated >= 4  # at least the Deployment, Service, ServiceAccount and NetworkPolicy


def test_the_defaults_render_the_documented_set_of_objects() -> None:
    kinds = sorted(f"{doc['kind']}/{doc['metadata']['name']}" for doc in rendered())
    assert kinds == sorted([
        "Deployment/rag-rag-document-server", "Deployment/rag-rag-document-server-redis",
        "HorizontalPodAutoscaler/rag-rag-document-server", "NetworkPolicy/rag-rag-document-server",
        "NetworkPolicy/rag-rag-document-server-redis", "PodDisruptionBudget/rag-rag-document-server",
        "Service/rag-rag-document-server", "Service/rag-rag-document-server-redis",
        "ServiceAccount/rag-rag-document-server",
    ])


def test_a_misspelt_field_in_values_fails_the_strict_validation() -> None:
    """The check can fail: a value with a typo (readOnlyRootFileSystem) renders, and the schema refuses it."""
    import kubernetes_validate

    docs = render("--set", "securityContext.readOnlyRootFileSystem=true")
    with pytest.raises(kubernetes_validate.ValidationError) as refused:
        validate_strictly(server_deployment(docs), KUBERNETES_VERSIONS[0])
    assert "readOnlyRootFileSystem" in str(refused.value.message)


def test_a_field_of_the_wrong_type_fails_the_strict_validation() -> None:
    import kubernetes_validate

    docs = render("--set-json", 'securityContext={"runAsNonRoot": "yes"}')
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_strictly(server_deployment(docs), KUBERNETES_VERSIONS[-1])


def test_a_manifest_with_a_field_out_of_place_fails_the_strict_validation() -> None:
    import kubernetes_validate

    deployment: dict[str, Any] = server_deployment(render())
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["hostHeader"] = "x"
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_strictly(deployment, KUBERNETES_VERSIONS[-1])


@pytest.mark.parametrize(("setting", "message"), [
    (["--set", "image.tag=latest"], "not latest"),
    (["--set", "externalRedis.enabled=true", "--set", "externalRedis.existingSecret=r"], "choose one"),
    (["--set", "redis.enabled=false", "--set", "externalRedis.enabled=true"], "never a value"),
    (["--set", "indexVolume.type=persistentVolumeClaim"], "ReadWriteMany"),
    (["--set", "indexVolume.type=hostPath"], "emptyDir, ephemeral or persistentVolumeClaim"),
])
def test_the_chart_refuses_values_that_would_deploy_something_wrong(setting: list[str], message: str) -> None:
    result = helm("template", "rag", str(CHART), *setting)
    assert result.returncode != 0
    assert message in result.stderr


def test_a_manifest_with_a_key_twice_is_refused_when_read() -> None:
    with pytest.raises(Exception, match="duplicate keys"):
        load_manifests("kind: Service\nmetadata:\n  labels:\n    a: '1'\n    a: '2'\n")
