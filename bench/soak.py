"""Soak: hundreds of documents of every format through one server, twice; memory and disk over time.

    .venv/bin/python bench/soak.py [--docs 300] [--passes 2] [--concurrency 4] [--workers 2]
                                   [--env MCP_MEMORY_BUDGET_MB=512 --env MCP_INDEX_DIR_MAX_MB=64]
                                   [--png bench/soak.png]

The documents are the test corpus (tests/corpus/docs, every format, the deliberately unreadable
files too) and variants made from it until there are ``--docs``: the same file with a few bytes
changed where its format ignores them (a comment after a PDF's end, a zip comment for OOXML, bytes
after an image's end, a line for text formats), so each variant is a new document to parse, chunk
and index. The two books of the corpus stay single (a variant would be minutes of embedding).

``python -m mcp_server --workers W`` runs with real models and the given settings; ``--concurrency``
MCP clients each call ``retrieve_chunks`` on the next document until the pass is done. While it runs,
a sampler reads the proportional set size (PSS: shared pages counted once, /proc/<pid>/smaps_rollup)
of every process of the server's tree and the size of the index folder, every ``--interval`` seconds:
before any document (idle), during each pass, and for ``--settle`` seconds after the load stops.
Printed: the timeline, each pass's time and result codes, and the figures against the goals of
issue #33 (PSS <= 0.8 GB at start, never above 2.0 GB, <= 1.2 GB after the load; the index folder
never above its bound plus one document; no errors but refusals of unreadable files; the second pass
no slower). ``--png`` draws the timeline (matplotlib: ``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.servers import ROOT, FileServer, mcp_session, payload, server_env, server_process  # noqa: E402

CORPUS = ROOT / "tests" / "corpus" / "docs"
SINGLE = 1_000_000  # bytes: bigger files (the two books) get no variants
QUERIES = ["What is this document about?", "Which figures does the table give?", "Who is named in it?"]
GB = 2**30
MB = 2**20


# --- documents --------------------------------------------------------------------------------
def variant(data: bytes, suffix: str, n: int) -> bytes:
    """``data`` changed where the format ignores it: a new document with the same content."""
    mark = f"soak variant {n}".encode()
    if suffix == ".pdf":
        return data + b"\n%" + mark + b"\n"
    if suffix in (".docx", ".xlsx", ".pptx"):
        source = zipfile.ZipFile(_bytes_io(data))
        out = _bytes_io(b"")
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for item in source.infolist():
                target.writestr(item, source.read(item.filename))
            target.comment = mark
        return out.getvalue()
    if suffix in (".png", ".jpg", ".jpeg"):
        return data + b"\x00" + mark
    if suffix == ".html":
        return data + b"\n<!-- " + mark + b" -->\n"
    if suffix == ".csv":
        return data  # a new row would change the table; renamed copies still share the content key
    return data + b"\n" + mark + b"\n"


def _bytes_io(data: bytes) -> Any:
    import io

    return io.BytesIO(data)


def make_documents(folder: Path, count: int) -> list[str]:
    """The corpus and variants in ``folder``; relative paths, originals first, then round by round."""
    originals = sorted(p for p in CORPUS.rglob("*") if p.is_file())
    names = []
    for path in originals:
        target = folder / "orig" / path.relative_to(CORPUS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        names.append(str(target.relative_to(folder)))
    growable = [p for p in originals if p.stat().st_size <= SINGLE and p.suffix != ".csv"]
    round_ = 0
    while len(names) < count and growable:
        round_ += 1
        for path in growable:
            if len(names) >= count:
                break
            target = folder / f"v{round_}" / path.relative_to(CORPUS)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                target.write_bytes(variant(path.read_bytes(), path.suffix.lower(), round_))
            except zipfile.BadZipFile:  # a deliberately broken OOXML file: its original stays in the set
                continue
            names.append(str(target.relative_to(folder)))
    return names


# --- sampling ---------------------------------------------------------------------------------
def pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # the process ended between listing and reading
        pass
    return 0


def role(proc: psutil.Process) -> str:
    try:
        line = " ".join(proc.cmdline())
    except psutil.Error:
        return "ocr and other children"
    if "forkserver" in line or "resource_tracker" in line:
        return "parsers"
    if "_e5_worker" in line:
        return "e5 engines"
    if "multiprocessing" in line or "spawn_main" in line:
        return "workers"
    return "supervisor" if "mcp_server" in line else "ocr and other children"


def folder_bytes(folder: Path) -> tuple[int, int]:
    """(bytes of the index folder, bytes of its largest index). The server deletes indexes while
    this walks: what vanished meanwhile is skipped (os.walk ignores errors)."""
    sizes: dict[str, int] = {}
    for root, _, files in os.walk(folder):
        parts = Path(root).relative_to(folder).parts
        if ".locks" in parts:
            continue
        for name in files:
            with contextlib.suppress(OSError):
                top = parts[0] if parts else name
                sizes[top] = sizes.get(top, 0) + os.stat(os.path.join(root, name)).st_size
    return sum(sizes.values()), max(sizes.values(), default=0)


class Sampler(threading.Thread):
    def __init__(self, root_pid: int, index_dir: Path, interval: float) -> None:
        super().__init__(daemon=True)
        self.root, self.index_dir, self.interval = psutil.Process(root_pid), index_dir, interval
        self.phase = "idle"
        self.samples: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self._halt = threading.Event()

    def sample(self) -> dict[str, Any]:
        by_role: dict[str, int] = {}
        procs = [self.root, *self.root.children(recursive=True)]
        for proc in procs:
            name = "supervisor" if proc is self.root else role(proc)
            by_role[name] = by_role.get(name, 0) + pss(proc.pid)
        index_bytes, largest = folder_bytes(self.index_dir)
        row = {"t": round(time.monotonic() - self.started, 1), "phase": self.phase, "pss": sum(by_role.values()),
               "by_role": by_role, "processes": len(procs), "index_bytes": index_bytes, "largest_index": largest}
        self.samples.append(row)
        return row

    def run(self) -> None:
        while not self._halt.wait(self.interval):
            try:
                self.sample()
            except psutil.Error:  # a process ended while it was read
                continue
            except Exception as exc:  # noqa: BLE001 - a lost sample must not end the timeline
                print(f"sample failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def cache_bytes(base: str) -> dict[str, int]:
    """rag_cache_bytes by layer, summed over the live workers (GET /metrics); {} when unreadable."""
    by_layer: dict[str, int] = {}
    with contextlib.suppress(httpx.HTTPError, ValueError):
        for line in httpx.get(f"{base}/metrics", timeout=10).text.splitlines():
            if line.startswith("rag_cache_bytes{"):
                layer = line.split('layer="', 1)[1].split('"', 1)[0]
                by_layer[layer] = by_layer.get(layer, 0) + int(float(line.rsplit(" ", 1)[1]))
    return by_layer


def _mb(by_layer: dict[str, int]) -> str:
    return f"{sum(by_layer.values()) / MB:.0f} MB (" + ", ".join(
        f"{k} {v / MB:.0f}" for k, v in sorted(by_layer.items()) if v) + ")"


# --- the load ---------------------------------------------------------------------------------
async def one_pass(mcp_url: str, base: str, names: list[str], concurrency: int, stop_at: float,
                   call_timeout: float) -> dict[str, Any]:
    """Every document once; a call that gets no answer within ``call_timeout`` (its worker was
    replaced: the SDK client then waits forever) counts as CLIENT_TIMEOUT and the client reconnects.
    No new call starts after ``stop_at`` (time.monotonic): the run stays bounded."""
    queue = list(enumerate(names))
    codes: dict[str, int] = {}
    refused: dict[str, str] = {}
    seconds: list[float] = []

    async def client() -> None:
        while queue and time.monotonic() < stop_at:
            async with mcp_session(mcp_url, read_timeout=None) as session:
                while queue and time.monotonic() < stop_at:
                    i, name = queue.pop(0)
                    started = time.perf_counter()
                    broken = False
                    try:
                        with anyio.fail_after(call_timeout):
                            result = await session.call_tool("retrieve_chunks", {
                                "document_url": f"{base}/{name}", "query": QUERIES[i % len(QUERIES)], "top_k": 3})
                        body = payload(result)
                        code = str(body.get("code", "ERROR")) if result.is_error else "OK"
                        if result.is_error:
                            refused[name] = f"{code}: {str(body.get('error', ''))[:100]}"
                    except TimeoutError:
                        code, broken = "CLIENT_TIMEOUT", True
                        refused[name] = f"no answer within {call_timeout:.0f} s"
                    except Exception as exc:  # noqa: BLE001 - a transport failure is counted, the run goes on
                        code, broken = f"EXCEPTION {type(exc).__name__}", True
                        refused[name] = str(exc)[:100]
                    seconds.append(time.perf_counter() - started)
                    codes[code] = codes.get(code, 0) + 1
                    if broken:
                        break  # a new session

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(client)
    return {"seconds": time.perf_counter() - started, "codes": codes, "refused": refused, "calls": len(seconds),
            "unfinished": len(queue), "median_call_s": statistics.median(seconds) if seconds else 0.0}


def report(args: argparse.Namespace, samples: list[dict[str, Any]], passes: list[dict[str, Any]],
           bound: int | None, largest_index: int) -> None:
    print(f"\n{'t(s)':>7} {'phase':<8} {'PSS MB':>8} {'procs':>5} {'index MB':>9}  by role (MB)")
    step = max(1, len(samples) // 60)
    for row in samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else []):
        roles = ", ".join(f"{k} {v / MB:.0f}" for k, v in sorted(row["by_role"].items()))
        print(f"{row['t']:>7} {row['phase']:<8} {row['pss'] / MB:>8.0f} {row['processes']:>5} "
              f"{row['index_bytes'] / MB:>9.1f}  {roles}")
    idle = [r["pss"] for r in samples if r["phase"] == "idle"]
    after = [r["pss"] for r in samples if r["phase"] == "after"]
    peak = max(r["pss"] for r in samples)
    index_peak = max(r["index_bytes"] for r in samples)
    print()
    for n, result in enumerate(passes, 1):
        print(f"pass {n}: {result['calls']} calls in {result['seconds']:.0f} s ({result['unfinished']} documents not "
              f"reached), median call {result['median_call_s']:.2f} s, codes {result['codes']}")
    refusals = sorted(set().union(*(r["refused"].items() for r in passes)))
    for name, why in refusals[:40]:
        print(f"  refused {name}: {why}")
    start, end = (idle[-1] if idle else 0), (after[-1] if after else samples[-1]["pss"])
    print(f"\nPSS at start {start / GB:.2f} GB (goal <= 0.8), peak {peak / GB:.2f} GB (goal <= 2.0), "
          f"after the load {end / GB:.2f} GB (goal <= 1.2)")
    if bound is not None:
        print(f"index folder peak {index_peak / MB:.1f} MB (goal <= {bound / MB:.0f} MB + the largest index, "
              f"{largest_index / MB:.1f} MB)")
    else:
        print(f"index folder peak {index_peak / MB:.1f} MB (unbounded)")
    if len(passes) >= 2 and passes[0]["calls"] and passes[1]["calls"]:
        ratio = (passes[1]["seconds"] / passes[1]["calls"]) / (passes[0]["seconds"] / passes[0]["calls"])
        print(f"second pass / first pass, time per document: {ratio:.2f} (goal <= 1.0)")
    print(f"load average {os.getloadavg()}")


def draw(path: Path, samples: list[dict[str, Any]], bound: int | None, title: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no PNG")
        return
    t = [r["t"] for r in samples]
    roles = sorted({k for r in samples for k in r["by_role"]})
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    top.stackplot(t, [[r["by_role"].get(k, 0) / GB for r in samples] for k in roles], labels=roles, alpha=0.8)
    top.axhline(2.0, color="red", linestyle="--", linewidth=1, label="2.0 GB (peak goal)")
    top.axhline(1.2, color="orange", linestyle=":", linewidth=1, label="1.2 GB (after-load goal)")
    top.set_ylabel("PSS of the process tree (GB)")
    top.legend(loc="upper left", fontsize=8)
    top.set_title(title, fontsize=10)
    bottom.plot(t, [r["index_bytes"] / MB for r in samples], color="tab:blue", label="index folder")
    if bound is not None:
        bottom.axhline(bound / MB, color="red", linestyle="--", linewidth=1, label="MCP_INDEX_DIR_MAX_MB")
    bottom.set_ylabel("index folder (MB)")
    bottom.set_xlabel("seconds")
    bottom.legend(loc="upper left", fontsize=8)
    changes = [(r["t"], r["phase"]) for i, r in enumerate(samples) if i == 0 or samples[i - 1]["phase"] != r["phase"]]
    for axis in (top, bottom):
        for x, phase in changes:
            axis.axvline(x, color="grey", linewidth=0.5)
            axis.text(x, axis.get_ylim()[1], f" {phase}", fontsize=7, va="top")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    print(f"drawn: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds sampled before any document")
    parser.add_argument("--settle", type=float, default=180.0,
                        help="seconds sampled after the load stops (the multilingual model leaves memory after "
                             "MCP_MODEL_IDLE_UNLOAD, 120 s, unused)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server (repeatable)")
    parser.add_argument("--png", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write the samples and passes here")
    parser.add_argument("--call-timeout", type=float, default=600.0, help="seconds a call may take (then counted)")
    parser.add_argument("--max-minutes", type=float, default=90.0,
                        help="no new call starts after this long (the passes are then reported as unfinished)")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        folder, index_dir = Path(tmp) / "docs", Path(tmp) / "indexes"
        names = make_documents(folder, args.docs)
        formats = sorted({Path(n).suffix.lower() for n in names})
        print(f"{len(names)} documents ({', '.join(formats)}), {args.passes} passes, concurrency {args.concurrency}, "
              f"{args.workers} workers, settings {extra or 'defaults'}; load average {os.getloadavg()}")
        env = server_env(MCP_INDEX_DIR=str(index_dir), MCP_LOG_LEVEL="WARNING", **extra)
        with FileServer(folder) as files, \
                server_process(["--workers", str(args.workers)], env=env, ready_timeout=900) as server:
            sampler = Sampler(server.process.pid, index_dir, args.interval)
            deadline = time.monotonic() + args.idle
            while time.monotonic() < deadline:  # workers and parser pools settle
                sampler.sample()
                time.sleep(args.interval)
            sampler.start()
            passes = []
            stop_at = time.monotonic() + 60 * args.max_minutes
            for n in range(1, args.passes + 1):
                sampler.phase = f"pass {n}"
                passes.append(anyio.run(one_pass, server.mcp_url, files.base, names, args.concurrency, stop_at,
                                        args.call_timeout))
                print(f"pass {n} done in {passes[-1]['seconds']:.0f} s: {passes[-1]['codes']}", flush=True)
            sampler.phase = "after"
            caches = {"load end": cache_bytes(server.base)}
            time.sleep(args.settle)
            sampler.stop()
            sampler.sample()
            caches["settled"] = cache_bytes(server.base)
        largest = max(r["largest_index"] for r in sampler.samples)
        bound_mb = extra.get("MCP_INDEX_DIR_MAX_MB")
        bound = int(bound_mb) * MB if bound_mb not in (None, "0") else (2048 * MB if bound_mb is None else None)
        report(args, sampler.samples, passes, bound, largest)
        print(f"cache layers (rag_cache_bytes, all workers): at the load's end {_mb(caches['load end'])}, "
              f"after the settle {_mb(caches['settled'])}")
        if args.json:
            args.json.write_text(json.dumps({"samples": sampler.samples, "passes": passes, "caches": caches}, indent=1))
        if args.png:
            draw(args.png, sampler.samples, bound, f"soak: {len(names)} documents x {args.passes}, "
                 f"concurrency {args.concurrency}, {args.workers} workers, {extra or 'defaults'}")


if __name__ == "__main__":
    main()
