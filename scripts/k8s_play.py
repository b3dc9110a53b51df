"""`make k8s-test` (scripts/k8s-test.sh): the Helm chart's rendered pods run by `podman kube play`.

Podman plays Pods, not Deployments with replicas nor Services, so the rendered server Deployment's pod
template becomes two Pods (rag-a, rag-b: the same spec, each with a host port) and the bundled Redis
Deployment one Pod named as its Service, on one network whose DNS resolves pod names. A file server
(the same image, Python's http.server) serves the corpus. Then:
  1. both server pods answer /health within the startup probe's window;
  2. retrieve_chunks on rag-a builds a document (cold), the first call on rag-b loads it from Redis:
     no build on rag-b, and its time <= 0.1 x the cold build;
  3. under calls to both pods, rag-a's server process is SIGKILLed and the pod replaced as the Deployment's
     controller would (podman has none: removed, played again): it is ready again, and no call to rag-b failed.

    k8s_play.py ENGINE HELM IMAGE REDIS_IMAGE
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from image_check import over_http  # noqa: E402  (the MCP client calls of make image-test)

CHART = ROOT / "deploy" / "helm" / "rag-document-server"
NETWORK = "ragk8stest"
DOCS_POD = "ragk8stest-docs"
DOC = f"http://{DOCS_POD}:8000/txt/norwich-city.txt"
QUERY = "When was Norwich City Football Club founded?"
WARM_UP = f"http://{DOCS_POD}:8000/pdf/multi_page.pdf"  # a first call loads what a process loads lazily


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if check and result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {result.stderr[-2000:]}")
    return result


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def render(helm: str, image: str, redis_image: str) -> list[dict[str, Any]]:
    repository, _, tag = image.rpartition(":")
    redis_repository, _, redis_tag = redis_image.rpartition(":")
    result = run(helm, "template", "rag", str(CHART), "--set", "autoscaling.enabled=false",
                 "--set", f"image.repository={repository}", "--set", f"image.tag={tag}",
                 "--set", f"redis.image.repository={redis_repository}", "--set", f"redis.image.tag={redis_tag}",
                 "--set", f"server.env.MCP_FETCH_ALLOWLIST={DOCS_POD}",
                 # one test client calling both pods as fast as they answer: not the rate limit's business
                 "--set-string", "server.env.MCP_RATE_LIMIT_RPM=100000")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def as_pod(deployment: dict[str, Any], name: str, host_port: int | None,
           command: list[str] | None = None) -> dict[str, Any]:
    """The Deployment's pod template as a Pod, with what podman 4.3 cannot play adapted."""
    spec = json.loads(json.dumps(deployment["spec"]["template"]["spec"]))
    if command:  # deploy/redis's image has an empty PATH (its debootstrap base sets none)
        spec["containers"][0]["command"] = command
    spec.pop("affinity", None)  # one host
    # podman 4.3 names an emptyDir's volume after the volume alone: two pods would share "index"
    for volume in spec["volumes"]:
        volume["name"] = f"{name}-{volume['name']}"
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        for mount in container.get("volumeMounts", []):
            mount["name"] = f"{name}-{mount['name']}"
        for item in container.get("env", []):
            if item.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP":
                item.pop("valueFrom")  # podman has no status.podIP, nor $(VAR) expansion: the pod's name
                item["value"] = name
            elif "$(POD_IP)" in item.get("value", ""):
                item["value"] = item["value"].replace("$(POD_IP)", name)
        if host_port is not None and container in spec["containers"]:
            container["ports"][0]["hostPort"] = host_port
            container["ports"][0]["hostIP"] = "127.0.0.1"
    # podman 4.3 removes a "once" init container while it may still be copying: keep it ("always")
    annotations = {"io.podman.annotations.init.container.type": "always"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": deployment["spec"]["template"]["metadata"]["labels"],
                         "annotations": annotations},
            "spec": {**spec, "restartPolicy": "Never"}}  # the "controller" below replaces a pod that died


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def wait_healthy(port: int, window: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < window:
        if healthy(port):
            return time.monotonic() - started
        time.sleep(0.5)
    raise SystemExit(f"port {port}: not healthy within {window:.0f} s")


def metric(port: int, prefix: str) -> float:
    """The sum of the /metrics samples whose line starts with prefix."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


def builds(port: int) -> float:
    return metric(port, 'rag_index_builds_total{event="started"}')


def cold_build(engine: str, port: int) -> tuple[float, float]:
    """retrieve_chunks on a new document: (its answer, the build finished and shared), in seconds from the call.
    A document is answered from its partial index while the build goes on, then stored in Redis: the pod's
    log says `index.built` (the build-slot gauge does not cover the rest of a build continued after the answer)."""
    def built() -> int:
        return run(engine, "logs", "rag-a-server").stdout.count('"msg": "index.built"') + \
            run(engine, "logs", "rag-a-server").stderr.count('"msg": "index.built"')

    before = built()
    started = time.monotonic()
    asyncio.run(over_http(f"http://127.0.0.1:{port}/mcp", DOC, QUERY))
    answered = time.monotonic() - started
    while built() == before:
        time.sleep(0.2)
    return answered, time.monotonic() - started


def started_at(engine: str, container: str) -> float:
    return float(run(engine, "inspect", "--format", "{{.State.StartedAt.Unix}}", container).stdout.strip())


async def timed_call(port: int, doc: str = DOC) -> float:
    started = time.monotonic()
    await over_http(f"http://127.0.0.1:{port}/mcp", doc, QUERY)
    return time.monotonic() - started


async def load(port: int, stop: asyncio.Event) -> tuple[int, int]:
    """Calls one after another until stopped: (answered, failed)."""
    answered = failed = 0
    while not stop.is_set():
        try:
            await over_http(f"http://127.0.0.1:{port}/mcp", DOC, QUERY)
            answered += 1
        except BaseException as exc:  # noqa: BLE001  (SystemExit from image_check, transport errors)
            if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
                raise
            failed += 1
            await asyncio.sleep(0.5)
    return answered, failed


def replace_pod(engine: str, manifest: Path) -> None:
    """What the Deployment's controller does for a pod that died: remove it, start a new one from the template."""
    run(engine, "pod", "rm", "-f", "rag-a")
    run(engine, "kube", "play", "--network", NETWORK, str(manifest))


async def kill_under_load(engine: str, port_a: int, port_b: int, window: float, manifest: Path) -> dict[str, Any]:
    stop = asyncio.Event()
    on_a = asyncio.create_task(load(port_a, stop))
    on_b = asyncio.create_task(load(port_b, stop))
    await asyncio.sleep(3)
    killed = time.monotonic()
    await asyncio.to_thread(run, engine, "kill", "--signal", "KILL", "rag-a-server")
    await asyncio.to_thread(replace_pod, engine, manifest)
    back = await asyncio.to_thread(wait_healthy, port_a, window)
    await asyncio.sleep(3)
    stop.set()
    (a_ok, a_failed), (b_ok, b_failed) = await on_a, await on_b
    return {"rag_a_replaced_and_ready_s": round(time.monotonic() - killed - 3, 1) if back else None,
            "rag_a_calls": [a_ok, a_failed], "rag_b_calls": [b_ok, b_failed]}


def main() -> None:
    engine, helm, image, redis_image = sys.argv[1:5]
    docs = render(helm, image, redis_image)
    deployments = {doc["metadata"]["labels"]["app.kubernetes.io/component"]: doc
                   for doc in docs if doc["kind"] == "Deployment"}
    server = deployments["server"]
    probe = server["spec"]["template"]["spec"]["containers"][0]["startupProbe"]
    window = probe["periodSeconds"] * probe["failureThreshold"]
    redis_name = next(doc["metadata"]["name"] for doc in docs if doc["kind"] == "Service"
                      and doc["metadata"]["labels"]["app.kubernetes.io/component"] == "redis")
    port_a, port_b = free_port(), free_port()
    files = {"docs": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": DOCS_POD}, "spec": {
        "containers": [{"name": "files", "image": image,
                        "command": ["/opt/rag/bin/python", "-m", "http.server", "-d", "/srv", "8000"],
                        "volumeMounts": [{"name": "corpus", "mountPath": "/srv", "readOnly": True}]}],
        "volumes": [{"name": "corpus", "hostPath": {"path": str(ROOT / "tests" / "corpus" / "docs")}}]}},
        "redis": as_pod(deployments["redis"], redis_name, None, command=["/usr/bin/redis-server"]),
        "a": as_pod(server, "rag-a", port_a), "b": as_pod(server, "rag-b", port_b)}
    folder = Path(tempfile.mkdtemp(prefix="rag-k8s-test-"))
    for key, pod in files.items():
        (folder / f"{key}.yaml").write_text(yaml.safe_dump(pod), encoding="utf-8")
    started = time.monotonic()
    for key in ("docs", "redis", "a", "b"):
        run(engine, "kube", "play", "--network", NETWORK, str(folder / f"{key}.yaml"))
    ready = {}
    for pod, port in (("rag-a", port_a), ("rag-b", port_b)):
        wait_healthy(port, window)
        ready[pod] = round(time.time() - started_at(engine, f"{pod}-server"), 1)  # an upper bound: polled in turn
    print(f"kube play of the four pods to both servers ready: {time.monotonic() - started:.1f} s; each server's"
          f" start to ready at most {ready} s (startup window {window} s)")
    assert max(ready.values()) <= window, "both ready within the startup probe's window"
    warm_up = (asyncio.run(timed_call(port_a, WARM_UP)), asyncio.run(timed_call(port_b, WARM_UP)))
    before_a, before_b = builds(port_a), builds(port_b)
    answered, cold = cold_build(engine, port_a)
    warm = asyncio.run(timed_call(port_b))
    built_a, built_b = builds(port_a) - before_a, builds(port_b) - before_b
    print(f"first calls (a 3-page PDF: lazy loading): rag-a {warm_up[0]:.2f} s, rag-b {warm_up[1]:.2f} s")
    print(f"norwich-city.txt: rag-a answered in {answered:.2f} s, its build done in {cold:.2f} s (builds"
          f" {built_a:.0f}); rag-b first call {warm:.2f} s"
          f" (builds {built_b:.0f}); ratio {warm / cold:.3f}")
    assert built_a == 1 and built_b == 0, "one build, on rag-a; rag-b loaded it from Redis"
    assert warm <= 0.1 * cold, "rag-b's first call within 0.1 x the cold build"
    outcome = asyncio.run(kill_under_load(engine, port_a, port_b, window, folder / "a.yaml"))
    shutil.rmtree(folder)
    print(f"rag-a's server SIGKILLed under load: {json.dumps(outcome)}")
    assert outcome["rag_b_calls"][1] == 0 and outcome["rag_b_calls"][0] > 0, "rag-b answered every call"
    assert outcome["rag_a_replaced_and_ready_s"] is not None, "the replacement of rag-a is ready"
    print("k8s-test passed")


if __name__ == "__main__":
    main()
