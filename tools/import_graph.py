"""The import graph of the packages, in figures: files, floors, arrows, circles, deferred imports.

Every Python file of ``core``, ``resolver_tui`` and ``resolver`` is a node; an import of one by
another (at the top of a file or inside a function: grimp, which import-linter uses, sees both)
is an arrow. Files that import each other, directly or round a longer loop, form a circle (a
strongly connected component of more than one file). A file's floor is one above the highest
floor of what it imports (a file importing nothing of ours stands on floor 1), counted on the
graph with each circle drawn as one room; "floors" is the highest floor. An arrow runs back up
when it points from a file to one on a higher floor, which only a circle allows.

Function-level imports are counted by reading each file's syntax tree: an ``import`` inside a
function body. Those that keep start-up fast stay, and say so in a comment on the line or the
line above (``lazy:``); the count of those without a reason is printed beside the total.

Usage::

    python tools/import_graph.py          # the figures
    python tools/import_graph.py --json   # the same as JSON, for tests
    python tools/import_graph.py --rooms  # the tree's folders as rooms: core's wings, the app, the lesson
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

import grimp

PACKAGES = ("core", "resolver_tui", "resolver")
ROOT = Path(__file__).resolve().parent.parent


def room_of(module: str) -> str:
    """The room a module is drawn in when the tree's own folders are the rooms: a module or folder
    directly under ``core`` (``core.engine``, ``core.stores``, ``core.cli``), and the app and the
    lesson's package as one room each."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "core" else parts[0]


def _graph() -> tuple[set[str], dict[str, set[str]]]:
    """The files (module names) and, for each, the files it imports (grimp's graph, built once)."""
    g = grimp.build_graph(*PACKAGES, cache_dir=None)
    files = set(g.modules)
    arrows = {m: {t for t in g.find_modules_directly_imported_by(m) if t in files and t != m} for m in files}
    return files, arrows


def _rooms(files: set[str], arrows: dict[str, set[str]]) -> tuple[set[str], dict[str, set[str]]]:
    """The rooms (:func:`room_of`) of ``files`` and, for each, the rooms it imports."""
    drawn: dict[str, set[str]] = {room_of(m): set() for m in files}
    for m, targets in arrows.items():
        drawn[room_of(m)] |= {room_of(t) for t in targets} - {room_of(m)}
    return set(drawn), drawn


def circles(files: set[str], arrows: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one file (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(files):
        if start in index:
            continue
        work = [(start, iter(sorted(arrows[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(arrows[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=len, reverse=True)


def floors(files: set[str], arrows: dict[str, set[str]], found: list[list[str]]) -> dict[str, int]:
    """Each file's floor, with every circle drawn as one room."""
    room = {f: f for f in files}
    for component in found:
        for f in component:
            room[f] = component[0]
    room_arrows: dict[str, set[str]] = {r: set() for r in set(room.values())}
    for f, targets in arrows.items():
        for t in targets:
            if room[t] != room[f]:
                room_arrows[room[f]].add(room[t])
    height: dict[str, int] = {}

    def floor(r: str) -> int:
        pending = [r]
        while pending:
            top = pending[-1]
            if top in height:
                pending.pop()
                continue
            waiting = [t for t in room_arrows[top] if t not in height]
            if waiting:
                pending.extend(waiting)
                continue
            height[top] = 1 + max((height[t] for t in room_arrows[top]), default=0)
            pending.pop()
        return height[r]

    return {f: floor(room[f]) for f in files}


def _path(module: str) -> Path:
    base = ROOT.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def deferred_imports(files: set[str]) -> tuple[int, list[str]]:
    """Imports inside function bodies: the total, and those whose line (or the line above) gives
    no ``lazy:`` reason, as ``module:line``."""
    total = 0
    unexplained: list[str] = []
    for module in sorted(files):
        path = _path(module)
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom) and not (
                    isinstance(inner, ast.ImportFrom) and inner.module == "__future__"
                ):
                    total += 1
                    here = lines[inner.lineno - 1]
                    above = lines[inner.lineno - 2] if inner.lineno > 1 else ""
                    if "lazy:" not in here and "lazy:" not in above:
                        unexplained.append(f"{module}:{inner.lineno}")
    # a nested function's import is walked once per enclosing function: count each line once
    return total, sorted(set(unexplained))


def figures(rooms: bool = False) -> dict[str, object]:
    """The graph's figures: ``files``, ``arrows``, ``floors``, ``back_arrows``, ``circles`` (lists
    of module names), ``deferred_imports`` and ``deferred_without_reason`` (``module:line``).
    With ``rooms`` the graph is drawn with the tree's folders as rooms (:func:`room_of`), and
    ``files`` counts the rooms."""
    every_file, every_arrow = _graph()
    files, arrows = _rooms(every_file, every_arrow) if rooms else (every_file, every_arrow)
    found = circles(files, arrows)
    floor = floors(files, arrows, found)
    back = sorted(
        f"{f} -> {t}"
        for f, ts in arrows.items()
        for t in ts
        if floor[t] > floor[f] or (floor[t] == floor[f] and any(f in c and t in c for c in found))
    )
    total, unexplained = deferred_imports(every_file)
    return {
        "files": len(files),
        "arrows": sum(len(t) for t in arrows.values()),
        "floors": max(floor.values(), default=0),
        "back_arrows": back,
        "circles": found,
        "deferred_imports": total,
        "deferred_without_reason": unexplained,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--rooms", action="store_true", help="draw the tree's folders as rooms, not each file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    found = figures(args.rooms)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    print(f"{'rooms' if args.rooms else 'files'}            {found['files']}")
    print(f"import arrows    {found['arrows']}")
    print(f"floors           {found['floors']}")
    print(f"arrows back up   {len(found['back_arrows'])}")  # type: ignore[arg-type]
    sizes = [len(c) for c in found["circles"]]  # type: ignore[attr-defined]
    print(f"import circles   {len(sizes)}" + (f" (files in each: {', '.join(map(str, sizes))})" if sizes else ""))
    print(f"deferred imports {found['deferred_imports']} ({len(found['deferred_without_reason'])} without a lazy: reason)")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
