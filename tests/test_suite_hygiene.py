"""The suite collects in any mix of files: two ``conftest.py`` files are both loaded under the
module name ``conftest``, so a test module that imported from it found whichever was loaded first,
and ``pytest tests/tui/test_tui_passphrase.py tests/engine/test_approvers.py`` failed at collection.
Shared names live in ``tests/helpers.py`` and ``tests/tui/tui_helpers.py`` (and ``tests/pg.py``,
``tests/pg_roles.py``). No test module imports another: such an import ran the other module's
code and bound its fixtures by name, and it worked only while every test folder was put on the
path, which nothing does now (pytest puts there the folders it collects from)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_test_module_imports_conftest():
    offenders = []
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module)
            if any(n.split(".")[0] == "conftest" for n in names):
                offenders.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert not offenders, offenders


def _imported(path: Path) -> list[tuple[int, str]]:
    """``(line, top-level module)`` of every import in the file ``path`` (relative ones left out)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def test_no_test_module_imports_another():
    offenders = [
        f"{path.relative_to(TESTS)}:{line} imports {name}"
        for path in TESTS.rglob("*.py")
        for line, name in _imported(path)
        if name.startswith("test_")
    ]
    assert not offenders, offenders


def test_the_app_tests_and_the_core_tests_collect_together_in_either_order():
    for files in (
        ["tui/test_tui_passphrase.py", "engine/test_approvers.py"],
        ["engine/test_approvers.py", "tui/test_tui_passphrase.py"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *(str(TESTS / f) for f in files)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=TESTS.parent,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        assert "error" not in done.stdout.lower().splitlines()[-1], done.stdout[-500:]
