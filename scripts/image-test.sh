#!/usr/bin/env bash
# `make image-test`: builds the container images and proves them on this machine.
#  1. the server image (Containerfile), the Redis and balancer images of compose.yaml; prints the size
#  2. one container over HTTP: the time from start to a 200 on /health, the image's HEALTHCHECK, non-root
#  3. `run -i ... --transport stdio` as the server of an MCP client (the repo's Python SDK): retrieve_chunks,
#     then process_document on a .doc, .ppt, .xls, .odt, .rtf, .msg and .epub (LibreOffice in the image), and
#     get_page_image of the first page of the .doc, .ppt, .odt and .rtf (LibreOffice's PDF export, fonts)
#  4. compose.yaml (Redis + two replicas + the balancer): retrieve_chunks through the balancer, then on
#     each replica; /metrics of both show one index build between them (the other loaded it from Redis)
# Not part of `make test`: it takes minutes (docs/deployment.md has the figures).
#
# `image-test.sh --build-only` stops after building the images (scripts/k8s-test.sh uses them).
# Podman or Docker (CONTAINER_ENGINE to choose); compose through podman-compose or `docker compose`.
# Where no registry is reachable the Debian base is made with debootstrap (as root), and where the PyTorch
# index is not reachable torch's CPU wheel comes from pip's own sources into wheelhouse/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-$ROOT/.venv/bin/python}
BASE=docker.io/library/debian:bookworm-slim
IMAGE=rag-document-server:latest
PROJECT=ragimagetest
TORCH_VERSION=2.13.0
t_start=$(date +%s)
log=$(mktemp)  # what the engine and compose print, shown when a step fails
say() { printf '\n== %s\n' "$*"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The engine: CONTAINER_ENGINE, else the first of podman and docker that answers `info` (a docker CLI
# with no daemon behind it does not); none answering, as root with apt-get, Podman is installed the way
# `make` installs Tesseract (podman, podman-compose, runc, and debootstrap for a base image without a
# registry); otherwise the exact command is printed. `image-test.sh --pick-engine` stops there.
# Podman's CNI networks resolve container names (compose's `rag-a`) only with the dnsname plugin.
PODMAN_PACKAGES=(podman podman-compose runc debootstrap golang-github-containernetworking-plugin-dnsname)
# runc, and ulimits within the machine's own (Podman's defaults are refused on some kernels); set
# before `podman info` is asked, and ignored by Docker.
export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/deploy/podman-containers.conf}
answers() { timeout 30 "$1" info >/dev/null 2>&1; }
install_packages() {
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "image-test: installing $*"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    else
        echo "image-test: run:  sudo apt-get install -y $*" >&2
        exit 1
    fi
}
pick_engine() {
    if [ -n "${CONTAINER_ENGINE:-}" ]; then command -v "$CONTAINER_ENGINE"; return; fi
    local name path
    for name in podman docker; do
        path=$(command -v "$name" || true)
        if [ -n "$path" ] && answers "$path"; then echo "$path"; return; fi
        [ -n "$path" ] && echo "image-test: $path does not answer '$name info' (no daemon?); not using it" >&2
    done
    return 0
}
ENGINE=$(pick_engine)
if [ -z "$ENGINE" ]; then
    install_packages "${PODMAN_PACKAGES[@]}"
    ENGINE=$(command -v podman)
fi
answers "$ENGINE" || { echo "image-test: $ENGINE does not answer '$(basename "$ENGINE") info'" >&2; exit 1; }
ENGINE_NAME=$(basename "$ENGINE")
if [ "$ENGINE_NAME" = podman ] && ! command -v podman-compose >/dev/null 2>&1; then install_packages podman-compose; fi
if [ "$ENGINE_NAME" = podman ] && [ "$("$ENGINE" info --format '{{.Host.NetworkBackend}}')" = cni ] \
        && [ ! -x /usr/lib/cni/dnsname ] && [ ! -x /usr/libexec/cni/dnsname ]; then
    install_packages golang-github-containernetworking-plugin-dnsname  # else the balancer finds no `rag-a`
fi
echo "image-test: container engine $ENGINE ($("$ENGINE" --version))"
[ "${1:-}" = --pick-engine ] && { rm -f "$log"; exit 0; }
BUILD_FLAGS=()
if [ "$ENGINE_NAME" = podman ]; then
    BUILD_FLAGS+=(--format docker)  # Docker-format images, since OCI images drop HEALTHCHECK
    if command -v podman-compose >/dev/null; then COMPOSE=(podman-compose -p "$PROJECT"); fi
    NAME_SEP=_
else
    COMPOSE=(docker compose -p "$PROJECT")
    NAME_SEP=-
fi
[ -n "${COMPOSE[*]:-}" ] || { echo "image-test: no compose tool (podman-compose or docker compose)" >&2; exit 1; }

cleanup() {
    for name in "$PROJECT-single" "$PROJECT-docs"; do "$ENGINE" rm -f -v "$name" >/dev/null 2>&1 || true; done
    "${COMPOSE[@]}" -f compose.yaml down -v >/dev/null 2>&1 || true
    "$ENGINE" network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true  # made again, with DNS if it lacked it
    "$ENGINE" volume rm -f "$PROJECT-single-data" "$PROJECT-stdio-data" >/dev/null 2>&1 || true
    rm -f "$log"
}
if [ "${1:-}" = --build-only ]; then
    trap 'rm -f "$log"' EXIT  # builds only: the containers of a test running beside it are left alone
else
    trap cleanup EXIT
    cleanup
fi
trap "exit 1" INT TERM  # through the EXIT trap

say "base image $BASE"
if ! "$ENGINE" image inspect "$BASE" >/dev/null 2>&1 && ! "$ENGINE" pull -q "$BASE" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || install_packages debootstrap
    [ "$(id -u)" -eq 0 ] || { echo "image-test: cannot pull $BASE; making it with debootstrap needs root" >&2; exit 1; }
    rootfs=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >/dev/null
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | "$ENGINE" import - "$BASE" >/dev/null
    rm -rf "$rootfs"
    echo "made from Debian packages with debootstrap (no registry reachable)"
fi

say "torch $TORCH_VERSION (CPU build)"
BUILD_ARGS=()
if ls wheelhouse/torch-"$TORCH_VERSION"*.whl >/dev/null 2>&1; then
    echo "from wheelhouse/: $(basename wheelhouse/torch-"$TORCH_VERSION"*.whl)"
    BUILD_ARGS+=(--build-arg TORCH_INDEX_URL=)
elif ! "$PY" -c "import urllib.request; urllib.request.urlopen('https://download.pytorch.org/whl/cpu/', timeout=5)" \
        >/dev/null 2>&1; then
    # The PyTorch index is out of reach: pip's own sources (this machine's has the CPU wheel on disk).
    "$PY" -m pip download --quiet --no-deps --only-binary :all: --python-version 3.11 --platform manylinux_2_28_x86_64 \
        -d wheelhouse "torch==$TORCH_VERSION"
    case "$(ls wheelhouse/torch-"$TORCH_VERSION"*.whl)" in
        *+cpu*) echo "from pip's sources into wheelhouse/: $(basename wheelhouse/torch-*.whl)" ;;
        *) echo "image-test: pip gave a torch wheel that is not the CPU build; put one in wheelhouse/" >&2; exit 1 ;;
    esac
    BUILD_ARGS+=(--build-arg TORCH_INDEX_URL=)
else
    echo "from the PyTorch CPU index"
fi
CA=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
[ -s "$CA" ] && BUILD_ARGS+=(--secret "id=ca,src=$CA")  # pip behind a TLS-inspecting proxy trusts what the host trusts

say "build"
t0=$(now)
"$ENGINE" build -q "${BUILD_FLAGS[@]}" "${BUILD_ARGS[@]}" -t "$IMAGE" -f Containerfile . >/dev/null
build_s=$(elapsed "$t0")
"$ENGINE" build -q "${BUILD_FLAGS[@]}" -t rag-document-server-redis:latest deploy/redis >/dev/null
"$ENGINE" build -q "${BUILD_FLAGS[@]}" -t rag-document-server-balancer:latest deploy/balancer >/dev/null
size_mb=$(( $("$ENGINE" image inspect --format '{{.Size}}' "$IMAGE") / 1000000 ))
echo "server image built in ${build_s} s (layers cached from earlier builds are reused); size ${size_mb} MB"
[ "${1:-}" = --build-only ] && exit 0  # scripts/k8s-test.sh: the images, then its own checks

say "one container over HTTP"
port=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
t0=$(now)
"$ENGINE" run -d --name "$PROJECT-single" -p "127.0.0.1:$port:8000" -v "$PROJECT-single-data:/var/lib/rag" \
    "$IMAGE" >/dev/null 2>&1  # (podman without systemd complains it cannot time the HEALTHCHECK itself)
healthy=""
for _ in $(seq 1 600); do
    if "$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=2)" \
            >/dev/null 2>&1; then healthy=$(elapsed "$t0"); break; fi
    sleep 0.2
done
[ -n "$healthy" ] || { "$ENGINE" logs "$PROJECT-single" 2>&1 | tail -20; echo "image-test: never healthy" >&2; exit 1; }
echo "start to healthy (/health 200): ${healthy} s"
if [ "$ENGINE_NAME" = podman ]; then
    "$ENGINE" healthcheck run "$PROJECT-single" && echo "HEALTHCHECK: healthy"
else
    for _ in $(seq 1 60); do
        status=$("$ENGINE" inspect --format '{{.State.Health.Status}}' "$PROJECT-single")
        [ "$status" = healthy ] && break
        sleep 1
    done
    echo "HEALTHCHECK: $status"; [ "$status" = healthy ]
fi
uid=$("$ENGINE" exec "$PROJECT-single" id -u)
[ "$uid" != 0 ] && echo "runs as uid $uid (not root)"
! "$ENGINE" exec "$PROJECT-single" sh -c 'command -v node || command -v npm' >/dev/null || {
    echo "image-test: Node in the image" >&2; exit 1; }
"$ENGINE" rm -f -v "$PROJECT-single" >/dev/null 2>&1

say "stdio: the Claude Desktop container entry of docs/clients.md (run -i ... --transport stdio) as the server of an MCP client"
# the entry as written, with this engine for `docker` and the documents mounted as its paragraph says
mapfile -t stdio_cmd < <("$PY" - "$ENGINE" "$ROOT/tests/corpus/docs" <<'EOF'
import json, re, sys
clients = open("docs/clients.md", encoding="utf-8").read()
body = re.search(r"<!-- client-config: claude-desktop-docker -->\s*```json\n(.*?)```", clients, re.S).group(1)
server = json.loads(body)["mcpServers"]["rag-documents"]
assert server["command"] == "docker"
args = list(server["args"])
args[3:3] = ["-v", f"{sys.argv[2]}:/documents:ro", "-e", "MCP_DOCUMENT_ROOTS=/documents"]
print("\n".join([sys.argv[1], *[a.replace("rag-data:", "ragimagetest-stdio-data:") for a in args]]))
EOF
)
echo "${stdio_cmd[*]}"
t0=$(now)
# then the formats the image's system packages read (LibreOffice converts the legacy Office, OpenDocument
# and RTF files; extract-msg the Outlook message), each through process_document
OTHER_FORMATS=(doc/testWORD.doc ppt/powerpoint_sample.ppt xls/test.xls odt/testWORD.odt rtf/word_tables.rtf
               msg/test_outlook_msg.msg epub/test.epub)
IMAGE_CHECK_STDERR=$log "$PY" scripts/image_check.py stdio file:///documents/pdf/multi_page.pdf \
    "Which word processor was popular among legal professionals?" "${OTHER_FORMATS[@]/#/file:///documents/}" \
    -- "${stdio_cmd[@]}" || { tail -20 "$log"; exit 1; }
echo "stdio session (container start included): $(elapsed "$t0") s"

say "compose.yaml: Redis, two replicas, the balancer"
lb_port=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
# the document comes from a file server on the compose network (the same image, Python's http.server)
t0=$(now)
env -u MCP_API_KEYS -u MCP_ALLOWED_HOSTS RAG_PORT=$lb_port MCP_FETCH_ALLOWLIST=$PROJECT-docs \
    "${COMPOSE[@]}" -f compose.yaml up -d >"$log" 2>&1 || { tail -20 "$log"; exit 1; }
network=$("$ENGINE" inspect --format '{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}' \
    "${PROJECT}${NAME_SEP}rag-a${NAME_SEP}1")
"$ENGINE" run -d --name "$PROJECT-docs" --network "$network" --stop-signal SIGKILL -v "$ROOT/tests/corpus/docs:/srv:ro" \
    --entrypoint python "$IMAGE" -m http.server -d /srv 8000 >"$log" 2>&1 || { cat "$log"; exit 1; }
LB="http://127.0.0.1:$lb_port"
for _ in $(seq 1 900); do
    "$PY" -c "import urllib.request; urllib.request.urlopen('$LB/health', timeout=2)" >/dev/null 2>&1 && break
    sleep 0.2
done
replica() { echo "${PROJECT}${NAME_SEP}$1${NAME_SEP}1"; }
for r in rag-a rag-b; do  # both replicas up before any call, so that the balancer has both
    for _ in $(seq 1 900); do
        "$ENGINE" exec "$(replica $r)" python /usr/local/lib/rag-healthcheck.py >/dev/null 2>&1 && break
        sleep 0.2
    done
done
echo "up and healthy (both replicas): $(elapsed "$t0") s"
DOC="http://$PROJECT-docs:8000/pdf/multi_page.pdf"
QUERY="Which word processor was popular among legal professionals?"
echo "through the balancer ($LB/mcp), from the host:"
"$PY" scripts/image_check.py http "$LB/mcp" "$DOC" "$QUERY"
for r in rag-a rag-b; do  # the balancer's build finished (small PDF): no build of it is under way
    for _ in $(seq 1 300); do
        busy=$("$ENGINE" exec -i "$(replica $r)" python - stats http://127.0.0.1:8000 < scripts/image_check.py \
            | "$PY" -c "import json, sys; print(int(json.load(sys.stdin)['builds_in_flight']))")
        [ "$busy" = 0 ] && break
        sleep 0.2
    done
done
for r in rag-a rag-b; do
    echo "$r directly:"
    "$ENGINE" exec -i "$(replica $r)" python - http http://127.0.0.1:8000/mcp "$DOC" "$QUERY" < scripts/image_check.py
done
stats_a=$("$ENGINE" exec -i "$(replica rag-a)" python - stats http://127.0.0.1:8000 < scripts/image_check.py)
stats_b=$("$ENGINE" exec -i "$(replica rag-b)" python - stats http://127.0.0.1:8000 < scripts/image_check.py)
echo "rag-a: $stats_a"
echo "rag-b: $stats_b"
"$PY" - "$stats_a" "$stats_b" <<'EOF'
import json, sys
a, b = (json.loads(arg) for arg in sys.argv[1:])
assert a["retrievals"] >= 1 and b["retrievals"] >= 1, "both replicas answered retrieve_chunks"
assert a["builds_started"] + b["builds_started"] == 1, "one index build between the two replicas"
assert sorted([a["chunks_embedded"] > 0, b["chunks_embedded"] > 0]) == [False, True], "one replica embedded"
assert "redis" in a["shared_store"]["index"] and "redis" in b["shared_store"]["index"], "indexes shared in Redis"
print("both replicas answered; one index build between them; the other replica loaded it from Redis")
EOF

say "image-test passed"
echo "image ${size_mb} MB; start to healthy ${healthy} s; build ${build_s} s; whole test $(( $(date +%s) - t_start )) s" \
     "(load average $(cut -d' ' -f1-3 /proc/loadavg))"
