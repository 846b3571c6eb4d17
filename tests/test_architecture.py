"""The tree is the map: docs/architecture.md, the import-linter layers contract and the folders of
core agree, so a reader who trusts the page is never misled by the code (or the other way round).

The page's table lists the wings highest first, each with every module it holds; the layers
contract in pyproject.toml lists the same wings in the same order; the picture draws them in that
order too. A module added, moved or removed without the page following fails here.
"""

from __future__ import annotations

import re
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
