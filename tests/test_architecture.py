"""The tree is the map: docs/architecture.md, the import-linter layers contract and the folders of
core agree, so a reader who trusts the page is never misled by the code (or the other way round).

The page's table lists the wings highest first, each with every module it holds; the layers
contract in pyproject.toml lists the same wings in the same order; the picture draws them in that
order too. A module added, moved or removed without the page following fails here.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
CORE = ROOT / "core"
OUTSIDE_WINGS = {"__init__.py", "__main__.py", "_data", "__pycache__"}


def _table() -> list[tuple[str, list[str]]]:
    """The page's wings table as ``(folder, modules)``, in its order."""
    text = PAGE.read_text(encoding="utf-8")
    body = text.split("<!-- wings:", 1)[1]
    rows = []
    for line in body.splitlines():
        m = re.match(r"\|\s*`(core/[a-z_]+)`\s*\|.*\|\s*(.+?)\s*\|\s*$", line)
        if m:
            rows.append((m.group(1), re.findall(r"`([a-z_]+/?)`", m.group(2))))
        elif rows and not line.startswith("|"):
            break
    return rows


def _layers() -> list[str]:
    """The layers contract's wings, highest first, siblings split (``core.trainer | core.ops``)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c.get("type") == "layers"]
    return [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]


def _modules(folder: str) -> list[str]:
    """What a wing holds on disk: its modules, and its packages as ``name/``; a wing that is one
    module (``core/cli.py``) holds itself."""
    path = ROOT / folder
    if not path.is_dir():
        assert path.with_suffix(".py").is_file(), f"{folder} is neither a folder nor a module"
        return [path.name]
    found = [p.stem for p in path.glob("*.py") if p.name != "__init__.py"]
    found += [f"{p.name}/" for p in path.iterdir() if p.is_dir() and (p / "__init__.py").is_file()]
    return sorted(found)


def test_the_pages_wings_are_the_layers_contract_in_its_order():
    assert [folder.replace("/", ".") for folder, _ in _table()] == _layers()


def test_every_wing_lists_exactly_the_modules_it_holds():
    for folder, modules in _table():
        assert sorted(modules) == _modules(folder), f"docs/architecture.md's row for {folder} does not match the folder"


def test_every_module_of_core_is_in_a_wing():
    wings = {folder.split("/", 1)[1] for folder, _ in _table()}
    loose = sorted(
        p.name for p in CORE.iterdir() if p.name not in OUTSIDE_WINGS and (p.stem if p.suffix == ".py" else p.name) not in wings
    )
    assert loose == [], f"modules of core outside every wing (give each a wing and a row on the page): {loose}"


def test_the_picture_draws_the_wings_in_the_layers_order():
    text = PAGE.read_text(encoding="utf-8")
    picture = text.split("```text", 1)[1].split("```", 1)[0]
    positions = [picture.index(folder) for folder, _ in _table()]
    assert positions == sorted(positions)


def _graph_figures() -> dict:
    import importlib.util

    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.figures()


def test_no_import_circle_between_files():
    """Files that import each other, directly or round a loop, hide which one is the ground of the
    other; a circle is held open at run time only by a deferred import. There are none."""
    assert _graph_figures()["circles"] == []


TRACKER = re.compile(r"\b[Ii]ssues? #?[0-9]")
"""A citation of a tracker number: the people who carry this code on have no tracker to look it
up in, so code, tests and docs say the rule and its reason in words (the history is in
CHANGELOG.md)."""


def test_no_file_cites_a_tracker_number():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    if not tracked:  # not a git checkout (an unpacked sdist): nothing to read the list from
        return
    cited = []
    for name in tracked:
        path = ROOT / name
        if not path.is_file() or path.suffix not in {".py", ".md", ".toml", ".txt", ".tcss", ".cfg", ""}:
            continue
        if name.startswith("tests/fixtures/") and path.suffix not in {".md", ".txt"}:
            continue  # frozen data, byte for byte as an older release wrote it
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if TRACKER.search(line):
                cited.append(f"{name}:{number}: {line.strip()[:100]}")
    assert cited == [], "\n".join(cited[:40])


def test_the_tree_drawn_as_rooms_stands_at_most_twelve_floors_high():
    """Drawn with the tree's folders as rooms (core's wings, the app, the lesson's package), the
    import graph stands at most 12 floors high: the map stays one a reader can hold."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figures = module.figures(rooms=True)
    assert figures["circles"] == [] and figures["floors"] <= 12, figures
