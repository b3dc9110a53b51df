"""House rules a reader relies on: the code states contracts and reasons, not its history (the story
of a change lives in git and bench/, never in mcp_server/); the benchmarks stand on their own
modules (bench/data.py, bench/servers.py), not on the tests' harness."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_server"
BENCH = PACKAGE.parent / "bench"
# Phrases that only tell how the code came to be: an issue number, the project it started from.
HISTORY_PHRASES = ("issue #", "the seed")


def history_mentions(root: Path) -> list[str]:
    """``path:line: phrase`` for every history phrase (case-insensitive) in the text files under ``root``."""
    found: list[str] = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # binary data files (model weights, fixtures) say nothing
            continue
        for number, line in enumerate(text.lower().splitlines(), start=1):
            found.extend(f"{path.relative_to(root)}:{number}: {phrase}" for phrase in HISTORY_PHRASES if phrase in line)
    return found


def test_no_file_under_mcp_server_tells_the_history_of_the_code() -> None:
    assert history_mentions(PACKAGE) == []


def test_the_history_check_finds_an_issue_number_and_the_seed_in_any_case(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text('"""Fixed in Issue #12."""\nx = 1  # as The Seed did\n', encoding="utf-8")
    (tmp_path / "clean.py").write_text("y = 2  # a fixed seed keeps runs reproducible\n", encoding="utf-8")
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe issue # \x00")

    assert history_mentions(tmp_path) == ["pkg/a.py:1: issue #", "pkg/a.py:2: the seed"]


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_no_benchmark_imports_the_tests() -> None:
    offenders = {path.name: sorted(name for name in imported_modules(path)
                                   if name.split(".")[0] in {"tests", "conftest", "mcp_harness"})
                 for path in sorted(BENCH.glob("*.py"))}
    assert {name: modules for name, modules in offenders.items() if modules} == {}


# Every way of reaching a thread from the loop or back, or of starting one: the calls, the
# modules' attributes (anyio.to_thread, anyio.from_thread) and the names imported.
THREAD_SPELLINGS = frozenset({
    "run_sync", "to_thread", "from_thread", "in_thread", "Thread", "ThreadPoolExecutor", "ThreadPool",
    "wrap_future", "run_in_executor", "start_new_thread", "_thread",
})
SEAM = "core/concurrency.py"
# module -> why it may spell a hop itself (at most six, each with its reason)
THREAD_ALLOWLIST = {
    "embedding/runner.py": "a model's progress goes from its worker thread back to the loop (anyio.from_thread.run): "
                           "the one hop the other way, made by the adapter the runner hands to the build",
}


def thread_spellings(root: Path) -> list[str]:
    """``path:line: name`` of every thread spelling under ``root`` outside the seam."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        if where == SEAM:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Call):
                names = [getattr(node.func, "attr", None) or getattr(node.func, "id", None) or ""]
            elif isinstance(node, ast.Attribute) and node.attr in {"to_thread", "from_thread"}:
                names = [node.attr]
            elif isinstance(node, ast.Import):
                names = [part for alias in node.names for part in alias.name.split(".")]
            elif isinstance(node, ast.ImportFrom):
                names = [*(node.module or "").split("."), *(alias.name for alias in node.names)]
            found.extend((where, node.lineno, name) for name in names if name in THREAD_SPELLINGS)
    return [f"{where}:{line}: {name}" for where, line, name in sorted(found)]


def test_every_hop_to_a_thread_goes_through_the_one_seam() -> None:
    # core/concurrency.py: off_loop (a blocking call awaited), start_thread, thread_pool, wait_future
    outside = [hit for hit in thread_spellings(PACKAGE) if hit.split(":")[0] not in THREAD_ALLOWLIST]
    assert outside == []
    assert len(THREAD_ALLOWLIST) <= 6 and all(reason for reason in THREAD_ALLOWLIST.values())
    allowed = {hit.split(":")[0] for hit in thread_spellings(PACKAGE)}
    assert sorted(THREAD_ALLOWLIST) == sorted(allowed)  # no stale entry


def test_the_thread_count_sees_every_spelling_but_the_seams_own(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "concurrency.py").write_text("import anyio.to_thread\nthreading.Thread(target=f)\n",
                                                      encoding="utf-8")
    (tmp_path / "a.py").write_text(
        "import anyio.to_thread\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "async def f():\n    await anyio.to_thread.run_sync(g)\n    await runner.in_thread(g)\n"
        "    threading.Thread(target=g).start()\n    await asyncio.wrap_future(x)\n"
        "    await loop.run_in_executor(None, g)\n    await off_loop(g)\n", encoding="utf-8")

    assert thread_spellings(tmp_path) == [
        "a.py:1: to_thread", "a.py:2: ThreadPoolExecutor", "a.py:4: run_sync", "a.py:4: to_thread",
        "a.py:5: in_thread", "a.py:6: Thread", "a.py:7: wrap_future", "a.py:8: run_in_executor",
    ]


def class_lengths(root: Path) -> dict[str, int]:
    """``path:Class`` -> lines, for every class under ``root``."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                found[f"{path.relative_to(root)}:{node.name}"] = node.end_lineno - node.lineno + 1
    return found


CLASS_LINES = 180


def test_no_class_but_the_settings_is_longer_than_180_lines() -> None:
    # a longer class holds several jobs: split it by job (the settings are one list of fields)
    lengths = {name: n for name, n in class_lengths(PACKAGE).items() if name != "core/settings.py:Settings"}
    assert {name: n for name, n in lengths.items() if n > CLASS_LINES} == {}


def test_a_class_is_measured_from_its_line_to_its_last(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class A:\n    x = 1\n\n    def f(self) -> None:\n        pass\n", encoding="utf-8")

    assert class_lengths(tmp_path) == {"a.py:A": 5}


# A package is one room: past this many lines it holds several jobs (the parsers, one module per
# format, are the exception).
PACKAGE_LINES = 2200
LARGE_PACKAGES = {"processors"}


def package_lines(root: Path) -> dict[str, int]:
    """sub-package -> lines of its Python modules, for every sub-package under ``root``."""
    return {init.parent.name: sum(len(path.read_text(encoding="utf-8").splitlines())
                                  for path in init.parent.rglob("*.py"))
            for init in sorted(root.glob("*/__init__.py"))}


def test_no_package_but_the_parsers_is_longer_than_2200_lines() -> None:
    lengths = package_lines(PACKAGE)
    assert {name: n for name, n in lengths.items() if n > PACKAGE_LINES and name not in LARGE_PACKAGES} == {}


def test_a_package_is_measured_over_all_its_modules(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "__init__.py").write_text('"""A."""\n', encoding="utf-8")
    (tmp_path / "a" / "b" / "c.py").write_text("x = 1\ny = 2\n", encoding="utf-8")
    (tmp_path / "a" / "data.json").write_text("{}\n" * 10, encoding="utf-8")

    assert package_lines(tmp_path) == {"a": 3}


# The cold path: the pipeline asks the index manager (``self.indexes``) for a document's index, and
# makes the chunks itself when the manager did not find it (``IndexManager.opening``, then
# ``IndexManager.build`` with them, pipeline/service.py). A function of the caller's goes down only
# as a progress report: its result is never read, so nothing a higher layer decides is called back.
HANDED_DOWN = frozenset({"progress"})


def callbacks_into_indexes(root: Path) -> list[str]:
    """``path:line: method`` for every call on an ``indexes`` object that is handed a function the
    calling module defines (a def or a lambda) other than as ``progress``."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        methods = {id(node) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for node in cls.body}
        local = {node.name for node in ast.walk(tree)  # the module's functions and nested ones, not methods
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and id(node) not in methods}
        # a name bound to something of the indexes (``builder = self.indexes.builder``) is the indexes too
        aliases = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   and "indexes" in ast.unparse(node.value).split(".")
                   for target in node.targets if isinstance(target, ast.Name)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and {"indexes", *aliases} & set(ast.unparse(node.func.value).split("."))):
                continue
            handed = [(None, arg) for arg in node.args] + [(kw.arg, kw.value) for kw in node.keywords]
            if any(name not in HANDED_DOWN and (isinstance(value, ast.Lambda)
                                                or isinstance(value, ast.Name) and value.id in local)
                   for name, value in handed):
                found.append((str(path.relative_to(root)), node.lineno, node.func.attr))
    return [f"{path}:{line}: {method}" for path, line, method in sorted(found)]


def test_the_pipeline_hands_the_index_manager_chunks_never_a_function_to_call_back() -> None:
    assert callbacks_into_indexes(PACKAGE) == []


def test_the_callback_check_finds_a_function_handed_to_the_indexes_but_not_a_progress_report(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "class Service:\n    def chunks(self):\n        pass\n"
        "async def index(self, chunks):\n"
        "    await self.indexes.build(found, chunks)\n"
        "    async def make_chunks():\n        return []\n"
        "    async def report(done, total, message):\n        pass\n"
        "    await self.indexes.open(key, make_chunks, progress=report)\n"
        "    await self.indexes.open(key, chunks=lambda: [], progress=report)\n"
        "    await self.indexes.build(found, await make_chunks(), progress=report)\n"
        "    builder = self.service.indexes.builder\n"
        "    builder.spawn(make_chunks)\n", encoding="utf-8")

    assert callbacks_into_indexes(tmp_path) == ["a.py:10: open", "a.py:11: open", "a.py:14: spawn"]


def test_the_index_managers_cold_path_takes_no_function_but_a_progress_report() -> None:
    import typing
    from collections.abc import Callable

    from mcp_server.indexes.manager import IndexManager, Opening
    from mcp_server.indexes.partial import FirstAnswers

    def functions(hints: dict[str, object]) -> set[str]:
        def callable_(hint: object) -> bool:
            return typing.get_origin(hint) is Callable or any(callable_(arg) for arg in typing.get_args(hint))
        return {name for name, hint in hints.items() if name != "return" and callable_(hint)}

    cold_path = [IndexManager.opening, IndexManager.build, IndexManager.open, IndexManager.get_or_build,
                 IndexManager.stored, FirstAnswers.start, Opening]
    assert {getattr(f, "__qualname__", ""): functions(typing.get_type_hints(f)) - HANDED_DOWN
            for f in cold_path} == {getattr(f, "__qualname__", ""): set() for f in cold_path} | {
        # the manager's own: reserved bytes back to the memory budget when a build cannot start
        "FirstAnswers.start": {"release"}}


# An index's key is given where it is made (``DocumentIndex(..., key=)``, ``build``, ``embed``): passage
# ids name it, so a key set afterwards, from outside, would name a passage after another index.
KEY_ATTRIBUTES = frozenset({"key", "_key"})


def key_assignments(root: Path) -> list[str]:
    """``path:line: target`` for every assignment to a ``key`` attribute of anything but ``self``
    (``x.key = ...``, ``x._key += ...``, ``setattr(x, "key", ...)``)."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                  and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                  and node.args[1].value in KEY_ATTRIBUTES):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
            found.extend(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(target)}"
                         for target in targets if isinstance(target, ast.Attribute) and target.attr in KEY_ATTRIBUTES
                         and not (isinstance(target.value, ast.Name) and target.value.id == "self"))
    return found


def test_no_module_sets_an_index_key_from_outside() -> None:
    roots = (PACKAGE, BENCH, PACKAGE.parent / "scripts", PACKAGE.parent / "tests")
    assert [f"{root.name}/{found}" for root in roots for found in key_assignments(root)] == []


def test_the_key_check_finds_an_assignment_from_outside_but_not_the_constructors_own(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "class Index:\n    def __init__(self, key):\n        self._key = key\n"
        "index = Index(key='k')\n"
        "index.key = 'other'\n"
        "clone._key: str = index.key\n"
        "setattr(index, 'key', 'x')\n"
        "record = {'key': 1}\n", encoding="utf-8")

    assert key_assignments(tmp_path) == ["a.py:5: index.key", "a.py:6: clone._key",
                                         "a.py:7: setattr(index, 'key', 'x')"]
