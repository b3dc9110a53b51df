#!/usr/bin/env bash
# `make k8s-test`: the Helm chart's rendered Deployment, Service and Redis run by `podman kube play` on this
# machine (no cluster): two server pods and the bundled Redis (scripts/k8s_play.py says what is checked).
# Builds the images as `make image-test` does (reused when cached), then plays them. Podman only (Docker
# plays no Kubernetes YAML); not part of `make test`: it takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-$ROOT/.venv/bin/python}
HELM=${HELM:-$ROOT/.venv/bin/helm}
NETWORK=ragk8stest
export CONTAINER_ENGINE=${CONTAINER_ENGINE:-podman}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/deploy/podman-containers.conf}
t_start=$(date +%s)

bash scripts/image-test.sh --build-only
ENGINE=$(command -v "$CONTAINER_ENGINE")
[ "$(basename "$ENGINE")" = podman ] || { echo "k8s-test: needs podman (kube play)" >&2; exit 1; }
if ! command -v catatonit >/dev/null 2>&1; then  # the pods' pause process
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends catatonit >/dev/null
    else
        echo "k8s-test: run:  sudo apt-get install -y catatonit" >&2; exit 1
    fi
fi
# the chart's image names: the server at the chart's appVersion, Redis from deploy/redis (the chart's
# default docker.io/library/redis needs Docker Hub)
VERSION=$(awk -F'"' '/^appVersion:/ { print $2 }' deploy/helm/rag-document-server/Chart.yaml)
IMAGE=localhost/rag-document-server:$VERSION
REDIS_IMAGE=localhost/rag-document-server-redis:$VERSION
"$ENGINE" tag rag-document-server:latest "$IMAGE"
"$ENGINE" tag rag-document-server-redis:latest "$REDIS_IMAGE"

cleanup() {
    if [ "${1:-0}" != 0 ]; then  # what the pods said, before they go
        for container in rag-a-server rag-b-server rag-rag-document-server-redis-redis; do
            echo "-- $container"; "$ENGINE" logs --tail 15 "$container" 2>&1 || true
        done
    fi
    for pod in rag-a rag-b rag-rag-document-server-redis ragk8stest-docs; do
        "$ENGINE" pod rm -f "$pod" >/dev/null 2>&1 || true
    done
    "$ENGINE" volume prune -f --filter label=io.podman.kube.play >/dev/null 2>&1 || true
    "$ENGINE" network rm -f "$NETWORK" >/dev/null 2>&1 || true
}
trap 'cleanup $?' EXIT
trap "exit 1" INT TERM
cleanup
"$ENGINE" network create "$NETWORK" >/dev/null

"$PY" scripts/k8s_play.py "$ENGINE" "$HELM" "$IMAGE" "$REDIS_IMAGE"
echo "whole k8s-test $(( $(date +%s) - t_start )) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
