"""Index writers in their own processes, for the durability tests (SECURITY.md D1, D3).

    python -m tests.security._index_worker fork-writer DIR KEY
        Reads commands on stdin. "go V": fork a child that saves versions V, 1-V, V, ... of the
        index KEY forever (under the store's lock) and print its pid; "reap PID": wait for that
        child (after the test SIGKILLed it); "quit". Forking from this already-imported process
        makes each of the 50 rounds cost milliseconds instead of a Python start-up.
    python -m tests.security._index_worker build DIR
        One "worker": get_or_build of one fixed document through IndexManager; prints its
        counters as JSON.
"""

from __future__ import annotations

import json
import os
import sys

import anyio

from mcp_server.core.models import Chunk, ChunkLocation
from mcp_server.core.settings import Settings
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.indexes.manager import IndexManager
from mcp_server.indexes.store import IndexStore
from mcp_server.retrieval.index import DocumentIndex

CHUNKER = "durability-test"
MODELS = ModelRegistry.fake()


def chunks(version: int) -> list[Chunk]:
    """Version 0 has 300 chunks, version 1 has 500, with different texts: never confused."""
    count = 300 if version == 0 else 500
    return [
        Chunk(text=f"version {version} chunk {n} " + "word " * 40, chunk_index=n, total_chunks=count,
              token_count=45, importance_score=0.5, content_type="text", doc_type="txt",
              location=ChunkLocation(start_char=n * 250, end_char=n * 250 + 240))
        for n in range(count)
    ]


def index(version: int) -> DocumentIndex:
    embedder = MODELS.fast
    made = chunks(version)
    return DocumentIndex.build(made, embedder.embed([c.text for c in made]), model_id=embedder.model_id)


def write_forever(root: str, key: str, versions: list[DocumentIndex], first: int) -> None:
    store = IndexStore(root)
    n = first
    while True:
        with store.lock(key):
            store.save(key, versions[n % 2], chunker_version=CHUNKER)
        n += 1


def fork_writer(root: str, key: str) -> None:
    versions = [index(0), index(1)]  # built once, before any fork: a child only writes
    for line in sys.stdin:
        command, *args = line.split()
        if command == "go":
            pid = os.fork()
            if pid == 0:  # the child writes until it is killed
                try:
                    write_forever(root, key, versions, int(args[0]))
                finally:
                    os._exit(1)
            print(pid, flush=True)
        elif command == "reap":
            os.waitpid(int(args[0]), 0)
            print("ok", flush=True)
        else:
            return


async def build(root: str) -> None:
    manager = IndexManager(Settings(_env_file=None, index_dir=root), MODELS)  # type: ignore[call-arg]
    made = chunks(0)
    await manager.get_or_build("same-document", CHUNKER, "params", made)
    print(json.dumps(manager.counters), flush=True)


if __name__ == "__main__":
    mode, root, *rest = sys.argv[1:]
    if mode == "fork-writer":
        fork_writer(root, rest[0])
    else:
        anyio.run(build, root)
