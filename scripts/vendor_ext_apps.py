"""Vendor the MCP Apps SDK's browser bundle into the package, for the citation viewer (server/app_ui/).

    .venv/bin/python scripts/vendor_ext_apps.py [path/to/app-with-deps.js]

Reads ``@modelcontextprotocol/ext-apps``' self-contained ES module ``dist/src/app-with-deps.js``
(default: the one tests/clients_js installs, pinned by its lockfile) and writes it, its closing
``export{...}`` turned into one ``globalThis.McpExtApps`` object, to
``mcp_server/server/app_ui/ext_apps_app.js``: the viewer inlines it, so the ``ui://`` resource is one
HTML document that loads nothing from anywhere (hosts sandbox apps; no CDN). tests/server/test_app_ui.py
checks the vendored file is this transform of the installed package.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tests" / "clients_js" / "node_modules" / "@modelcontextprotocol" / "ext-apps"
TARGET = ROOT / "mcp_server" / "server" / "app_ui" / "ext_apps_app.js"
_EXPORT = re.compile(r"export\{([^}]*)\};?\s*$")


def globalised(source: str, version: str) -> str:
    """The bundle with its final ``export{a as B, ...}`` replaced by ``globalThis.McpExtApps = {B: a, ...}``."""
    match = _EXPORT.search(source)
    if match is None:
        raise SystemExit("no closing export{...} in the bundle: has its format changed?")
    pairs = [part.strip().split(" as ") for part in match.group(1).split(",") if part.strip()]
    names = ",".join(f"{pair[-1]}:{pair[0]}" for pair in pairs)
    header = (f"/* @modelcontextprotocol/ext-apps {version} dist/src/app-with-deps.js (MIT licence, "
              "https://github.com/modelcontextprotocol/ext-apps), vendored by scripts/vendor_ext_apps.py */\n")
    return header + source[:match.start()] + f"globalThis.McpExtApps={{{names}}};\n"


def main(argv: list[str]) -> int:
    bundle = Path(argv[0]) if argv else PACKAGE / "dist" / "src" / "app-with-deps.js"
    version = json.loads((bundle.parents[2] / "package.json").read_text(encoding="utf-8"))["version"]
    TARGET.write_text(globalised(bundle.read_text(encoding="utf-8"), version), encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)} from ext-apps {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
