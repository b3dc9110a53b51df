#!/usr/bin/env bash
# Installs the Debian packages the server and its tests need (Tesseract OCR, LibreOffice without a GUI
# for legacy Office, OpenDocument and RTF, Redis, Node.js with npm for the third-party MCP client
# tests, Chromium for the MCP App's browser test), or prints the exact command when not root. Fast when
# everything is already there. Debian's node may be older than the clients need: npm then brings
# Node 22 as a pinned package (scripts/node-deps.sh).
set -euo pipefail
missing=()
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr tesseract-ocr-eng)
command -v soffice >/dev/null 2>&1 \
    || missing+=(libreoffice-core-nogui libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)  # the citation viewer's browser test
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "missing system packages; run:  sudo apt-get install -y ${missing[*]}" >&2
    echo "(OCR, .doc/.xls/.ppt/OpenDocument/RTF, the Redis tests and the MCP client tests need them; the" \
         "server runs without, reporting OCR_AVAILABLE=false and refusing those formats with this command)" >&2
fi
