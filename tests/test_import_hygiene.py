"""The headless core never imports Textual (or Rich): checked per module in a clean process,
and by the import-linter contract in pyproject.toml."""

from __future__ import annotations

import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import core
import pytest

CORE_MODULES = sorted(m.name for m in pkgutil.walk_packages(core.__path__, "core.") if m.name != "core.__main__")


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_module_imports_no_ui_library(module):
    code = (
        f"import sys, {module}\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'textual', 'rich', 'resolver_tui'})\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"{module} pulls in {out}"


def test_import_linter_contract_holds():
    lint = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(lint).exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    result = subprocess.run([lint], capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert result.returncode == 0, result.stdout + result.stderr


def test_only_the_store_back_ends_name_sqlite3():
    """``grep -rln sqlite3 core --include=*.py`` lists only files under core/stores/ (the
    import-linter contract forbids the import itself)."""
    root = Path(core.__file__).parent
    found = sorted(
        p.relative_to(root.parent).as_posix() for p in root.rglob("*.py") if "sqlite3" in p.read_text(encoding="utf-8")
    )
    assert found and all(f.startswith("core/stores/") for f in found), found


APP_MODULES = sorted((Path(__file__).parent.parent / "resolver_tui").rglob("*.py"))


@pytest.mark.parametrize("path", APP_MODULES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_the_app_is_a_thin_face(path):
    """No app module opens the store or the world (reads go through ``home.queue``; import
    contracts cannot see ``home.store``). The 350-line cap it also held is gone: the formatter
    decides line counts, and the queue screen is composed of its widgets instead."""
    text = path.read_text(encoding="utf-8")
    text = text.replace("args.store", "")  # ``--store URL`` is an argument naming a store, not the store
    assert ".store" not in text and ".world(" not in text
