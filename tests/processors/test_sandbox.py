"""Parser workers: hostile parses fail alone, typed errors survive, the loop keeps running."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from mcp_server.core.errors import ProcessingError, RateLimitError, UnsupportedFormatError
from mcp_server.core.settings import Settings
from mcp_server.processors import DocumentInput, ProcessOptions, process_document
from mcp_server.processors.sandbox import ParserPool
from mcp_server.server.lifespan import open_app_context
from mcp_server.subprocesses.process_pool import ParserService
from tests.mcp_harness import make_settings
from tests.processors._sandbox_tasks import (
    abort,
    allocate_10gb,
    busy,
    echo,
    grow,
    hang,
    hang_marked,
    language_profiles_loaded,
    loaded,
    niceness,
    pid,
    raise_rate_limit,
    raise_typed,
    raise_untyped,
    wait_for_word,
)


@pytest.fixture(scope="module", params=["own", "shared"])
def pool(request: pytest.FixtureRequest) -> Iterator[ParserPool]:
    """A process's own pool, and the pool a --workers supervisor shares, seen from a worker: every
    test below holds for both."""
    settings = Settings(parse_workers=2, parse_timeout=30, parse_memory_mb=1024, _env_file=None)
    with shared_pool(settings) if request.param == "shared" else contextlib.nullcontext(settings) as settings:
        parser_pool = ParserPool(settings)
        assert parser_pool.shared == (request.param == "shared")
        yield parser_pool
        parser_pool.close()


@contextlib.contextmanager
def shared_pool(settings: Settings) -> Iterator[Settings]:
    """A ParserService as the supervisor runs it; yields the settings a worker of it reads."""
    service = ParserService(settings)
    try:
        yield settings.model_copy(update={"parser_socket": Path(service.address)})
    finally:
        service.close()


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_a_function_runs_in_another_process(pool: ParserPool) -> None:
    assert run(pool.run(echo, "hello")) == "hello"
    assert run(pool.run(pid)) != os.getpid()


def test_workers_run_below_the_server_priority_so_busy_parsers_leave_it_the_cores(pool: ParserPool) -> None:
    own = os.nice(0)
    assert run(pool.run(niceness)) == min(19, own + Settings(_env_file=None).parse_nice) > own


def test_a_fresh_worker_has_the_language_profiles_before_its_first_document(pool: ParserPool) -> None:
    # loaded once in the forkserver; otherwise each worker's first document pays ~1 s for them
    assert run(pool.run(language_profiles_loaded))


def test_a_hanging_parse_times_out_and_the_pool_keeps_serving(pool: ParserPool) -> None:
    with pytest.raises(ProcessingError, match="parsing took longer than 0.5 s"):
        run(pool.run(hang, timeout=0.5))
    assert run(pool.run(echo, "next")) == "next"


def test_an_aborting_worker_fails_only_its_own_call(pool: ParserPool) -> None:
    async def both() -> list[object]:
        return await asyncio.gather(pool.run(abort), pool.run(echo, "fine"), return_exceptions=True)

    crashed, fine = run(both())
    assert isinstance(crashed, ProcessingError)
    assert crashed.message == "the parser crashed on this document"
    assert fine == "fine"
    assert run(pool.run(echo, "after")) == "after"


def test_a_10gb_allocation_hits_the_memory_limit_not_the_machine(pool: ParserPool) -> None:
    with pytest.raises(ProcessingError, match="the parser crashed on this document"):
        run(pool.run(allocate_10gb))
    assert run(pool.run(echo, "after")) == "after"


def test_typed_errors_come_back_with_their_type_and_details(pool: ParserPool) -> None:
    with pytest.raises(UnsupportedFormatError) as info:
        run(pool.run(raise_typed))
    assert info.value.details == {"kind": "x", "reason": "unsupported_format"}
    with pytest.raises(RateLimitError) as limited:
        run(pool.run(raise_rate_limit))
    assert limited.value.details == {"retry_after": 2.5}


def test_untyped_errors_become_processing_errors(pool: ParserPool) -> None:
    with pytest.raises(ProcessingError, match="KeyError"):
        run(pool.run(raise_untyped))


def test_the_event_loop_keeps_ticking_during_a_long_parse(pool: ParserPool) -> None:
    async def scenario() -> tuple[str, int]:
        ticks = 0
        task = asyncio.ensure_future(pool.run(busy, 1.0))
        while not task.done():
            await asyncio.sleep(0.01)
            ticks += 1
        return task.result(), ticks

    result, ticks = run(scenario())
    assert result == "done"
    assert ticks > 10  # a blocked loop would tick once or twice


def test_process_document_runs_in_the_pool(pool: ParserPool, corpus_dir) -> None:  # type: ignore[no-untyped-def]
    path = corpus_dir / "docs" / "txt" / "fake-text.txt"
    inp = DocumentInput(data=path.read_bytes(), doc_type="txt", filename=path.name)
    doc = run(pool.run(process_document, inp, ProcessOptions()))
    assert "This is a test document" in doc.content


def _parser_processes() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


def test_a_starting_server_starts_its_parser_workers_so_the_first_document_does_not(tmp_path) -> None:  # type: ignore[no-untyped-def]
    async def started_with(prestart: bool) -> set[int]:
        before = _parser_processes()
        settings = make_settings(parse_prestart=prestart, parse_workers=2, load_models=False, index_dir=tmp_path)
        async with open_app_context(settings):
            return _parser_processes() - before

    assert not run(started_with(False))  # workers start on first use...
    assert len(run(started_with(True))) >= 2  # ...or with the server: a forkserver and two workers


@pytest.mark.parametrize("mode", ["own", "shared"])
def test_a_worker_left_holding_a_big_documents_memory_is_replaced_and_a_lean_one_is_kept(mode: str) -> None:
    settings = Settings(parse_workers=1, parse_timeout=30, parse_worker_max_mb=48, _env_file=None)
    with shared_pool(settings) if mode == "shared" else contextlib.nullcontext(settings) as settings:
        parser_pool = ParserPool(settings)
        try:
            first = run(parser_pool.run(pid))
            assert run(parser_pool.run(pid)) == first  # a lean worker serves on
            assert run(parser_pool.run(grow, 96)) == first  # the result still comes back ...
            assert run(parser_pool.run(pid)) != first  # ... and the next document meets a fresh worker
        finally:
            parser_pool.close()


def test_jobs_waiting_for_a_busy_worker_start_smallest_first(tmp_path: Path) -> None:
    fifo = tmp_path / "hold"
    os.mkfifo(fifo)
    parser_pool = ParserPool(Settings(parse_workers=1, parse_timeout=30, _env_file=None))
    finished: list[str] = []

    async def job(name: str, size: int) -> None:
        finished.append(await parser_pool.run(echo, name, size=size))

    async def scenario() -> str:
        holder = asyncio.ensure_future(parser_pool.run(wait_for_word, str(fifo), size=1))
        waiting = [asyncio.ensure_future(job(name, size)) for name, size in (("large", 30), ("small", 10),
                                                                              ("medium", 20))]
        await asyncio.sleep(0)  # every job has asked for the worker (a yield to the loop, not a wait)
        with open(fifo, "w", encoding="ascii") as word:  # the worker is free once the holder reads this
            word.write("go")
        said = await holder
        await asyncio.gather(*waiting)
        return said

    try:
        assert run(scenario()) == "go"
    finally:
        parser_pool.close()
    assert finished == ["small", "medium", "large"]


PARSER_ONLY = ("pandas", "pytesseract", "extract_msg", "docx", "pptx")


def test_parser_libraries_are_preloaded_in_the_workers_and_never_loaded_by_the_server_process(pool: ParserPool) -> None:
    assert run(pool.run(loaded, PARSER_ONLY)) == list(PARSER_ONLY)
    code = ("import sys, mcp_server.server.app; from mcp_server.processors.ocr import ocr_available; ocr_available(); "
            f"print([name for name in {PARSER_ONLY + ('torch',)!r} if name in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.strip() == "[]"


def test_an_idle_worker_left_holding_memory_is_replaced_when_the_pool_is_tidied() -> None:
    settings = Settings(parse_workers=1, parse_timeout=30, parse_worker_max_mb=0, _env_file=None)
    parser_pool = ParserPool(settings)
    try:

        async def scenario() -> tuple[int, int, int, int]:
            lean = await parser_pool.run(pid)
            kept = await parser_pool.tidy()  # a lean worker stays
            grown = await parser_pool.run(grow, 48)  # below the per-document bound (off here) ...
            replaced = await parser_pool.tidy()  # ... but not what an idle worker may keep
            return lean, kept, grown, replaced + 10 * await parser_pool.tidy()  # nothing parsed since: no-op

        lean, kept, grown, replaced = run(scenario())
        assert (kept, grown, replaced) == (0, lean, 1)
        assert run(parser_pool.run(pid)) != lean
    finally:
        parser_pool.close()


# --- the pool a --workers supervisor shares ------------------------------------------------------------
def _fifo(folder: Path) -> Path:
    path = folder / "hanging.pid"
    os.mkfifo(path)
    return path


def _marked_pid(fifo: Path) -> int:
    """The pid a ``hang_marked`` task writes: reading the named pipe waits for it."""
    return int(fifo.read_text(encoding="ascii"))


def _stopped(pid: int) -> bool:
    """Whether the process is gone (or only a zombie left for its parent to reap)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_shared_pool_serves_two_worker_processes_from_one_forkserver(tmp_path: Path) -> None:
    settings = Settings(parse_workers=1, parse_timeout=30, _env_file=None)
    with shared_pool(settings) as worker_settings:
        first, second = ParserPool(worker_settings), ParserPool(worker_settings)
        try:
            parsers = {run(first.run(pid)), run(second.run(pid))}
            # one parser serves both: a single preloaded image, whoever asks
            assert len(parsers) == 1 and parsers != {os.getpid()}
            assert run(first.tidy()) == 0  # the supervisor tidies a shared pool, not a worker
        finally:
            first.close()
            second.close()


def test_a_cancelled_call_stops_the_shared_parser_running_it(tmp_path: Path) -> None:
    settings = Settings(parse_workers=1, parse_timeout=600, _env_file=None)
    mark = _fifo(tmp_path)
    with shared_pool(settings) as worker_settings:
        parser_pool = ParserPool(worker_settings)
        try:

            async def scenario() -> tuple[int, str]:
                hanging = asyncio.ensure_future(parser_pool.run(hang_marked, str(mark)))
                hung = await asyncio.to_thread(_marked_pid, mark)
                hanging.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await hanging
                # one parser: the next call is answered only if the hung one was stopped
                return hung, await asyncio.wait_for(parser_pool.run(echo, "next"), 120)

            hung, answer = run(scenario())
            assert answer == "next"
            assert _stopped(hung)
        finally:
            parser_pool.close()


def test_a_worker_closing_its_side_of_the_shared_pool_stops_its_jobs_there(tmp_path: Path) -> None:
    # a worker shutting down must not leave a parser busy for it (nor wait for it at exit)
    settings = Settings(parse_workers=1, parse_timeout=600, _env_file=None)
    mark = _fifo(tmp_path)
    with shared_pool(settings) as worker_settings:
        leaving, staying = ParserPool(worker_settings), ParserPool(worker_settings)
        try:

            async def scenario() -> tuple[int, BaseException | None, str]:
                hanging = asyncio.ensure_future(leaving.run(hang_marked, str(mark)))
                hung = await asyncio.to_thread(_marked_pid, mark)
                leaving.close()
                outcome = (await asyncio.gather(hanging, return_exceptions=True))[0]
                return hung, outcome, await asyncio.wait_for(staying.run(echo, "next"), 120)

            hung, outcome, answer = run(scenario())
            assert isinstance(outcome, ProcessingError) and outcome.message == "the parser pool was stopped"
            assert answer == "next"
            assert _stopped(hung)
        finally:
            staying.close()


def test_a_worker_that_leaves_mid_job_has_its_job_stopped(tmp_path: Path) -> None:
    # a worker killed mid-parse: its connection ends, the supervisor stops the job it was waiting for
    import pickle
    from multiprocessing import current_process
    from multiprocessing.connection import Client

    settings = Settings(parse_workers=1, parse_timeout=600, _env_file=None)
    mark = _fifo(tmp_path)
    with shared_pool(settings) as worker_settings:
        connection = Client(str(worker_settings.parser_socket), family="AF_UNIX", authkey=current_process().authkey)
        connection.send(("run", 600.0, pickle.dumps((hang_marked, (str(mark),)))))
        hung = _marked_pid(mark)
        connection.close()
        parser_pool = ParserPool(worker_settings)
        try:
            assert run(asyncio.wait_for(parser_pool.run(echo, "next"), 120)) == "next"
            assert _stopped(hung)
        finally:
            parser_pool.close()


def test_a_shared_pool_refuses_a_caller_without_the_supervisors_key(tmp_path: Path) -> None:
    from multiprocessing import AuthenticationError
    from multiprocessing.connection import Client

    settings = Settings(parse_workers=1, _env_file=None)
    with shared_pool(settings) as worker_settings, pytest.raises(AuthenticationError):
        Client(str(worker_settings.parser_socket), family="AF_UNIX", authkey=b"not the key")


def test_a_worker_whose_supervisor_pool_is_gone_gets_a_clear_error(tmp_path: Path) -> None:
    settings = Settings(parse_workers=1, _env_file=None)
    with shared_pool(settings) as worker_settings:
        pass
    parser_pool = ParserPool(worker_settings)
    try:
        with pytest.raises(ProcessingError, match="the parser pool was stopped"):
            run(parser_pool.run(echo, "nobody there"))
    finally:
        parser_pool.close()
