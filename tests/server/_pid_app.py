"""The smallest ASGI app a uvicorn worker can serve: it answers every request with its process id."""

from __future__ import annotations

import os
from typing import Any


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": str(os.getpid()).encode()})
