"""The image's HEALTHCHECK: GET /health on the server's own port; a stdio server has no port and is
healthy while it runs. Standard library only, so the image needs no curl."""

import os
import sys
import urllib.request

with open("/proc/1/cmdline", "rb") as handle:
    arguments = handle.read().split(b"\0")
if os.environ.get("MCP_TRANSPORT") == "stdio" or b"stdio" in arguments:
    sys.exit(0)
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{os.environ.get('MCP_PORT', '8000')}/health", timeout=4) as answer:
        sys.exit(0 if answer.status == 200 else 1)
except OSError as exc:  # refused while starting, 503 until ready, timeouts
    print(f"unhealthy: {exc}", file=sys.stderr)
    sys.exit(1)
