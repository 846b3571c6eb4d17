"""Every install hint names an install that works.

The distribution was named ``resolver``, an unrelated package's name on PyPI, and the sentences
said ``pip install 'resolver[postgres]'``, which installs that package; doctor said
``pip install -e .`` for a missing psycopg, which does not install it. Now the project folder is
the only source (the project is not published), every hint comes from :func:`core.install_hint`,
and these tests find every install command in the packages, the tools, the benchmarks, the tests
and the Markdown pages, and check each extra it names against ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from core import DISTRIBUTION, FEATURE_EXTRAS, install_hint

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "resolver_tui", "resolver")
SCANNED_CODE = (*PACKAGES, "tools", "benchmarks", "tests")
DEVELOPER_EXTRAS = {"test", "bench", "docs"}
"""Extras for working on the project (the suite, the benchmarks, the docs site), never named by the program."""

_COMMAND = re.compile(r"\b(?:pip3?\s+install|uv\s+pip\s+install|uv\s+tool\s+install|uv\s+add|uv\s+sync|pipx\s+install)\b")
_REST = re.compile(r"[^\n`\"]*")
"""An install command's arguments: up to the end of the line, a closing backtick or double quote."""
_SPEC = re.compile(r"(?<![\w\-.\[])(?P<name>[A-Za-z0-9_.\-/]*)\[(?P<extras>[A-Za-z0-9_,\- ]*)\]")
_EXTRA_FLAG = re.compile(r"--extra[= ]+(?P<extras>[A-Za-z0-9_\-]+)")
_OUR_NAMES = {"resolver", DISTRIBUTION}


def _declared_extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])


def hint_problems(text: str, where: str, extras: set[str]) -> tuple[list[str], int]:
    """The install commands in ``text`` (``pip install``, ``uv tool install``, ``pipx install`` ...)
    and what is wrong with each: an extra of the project folder (``'.[X]'``, ``--extra X``) that
    ``extras`` does not hold, or our distribution named by its name (``resolver[...]``,
    ``larkfield-resolver``), which is not on a package index (``resolver`` there is another
    package). f-string placeholders (``{extra}``) are left to the tests that call
    :func:`core.install_hint`. Returns (the problems, each a sentence with ``where`` and the line;
    the number of commands found)."""
    problems = []
    found = 0
    for command in _COMMAND.finditer(text):
        rest = _REST.match(text, command.end())
        args = rest.group(0) if rest else ""
        line = text.count("\n", 0, command.start()) + 1
        said = f"{where}:{line}: {command.group(0)}{args}".strip()
        found += 1
        for spec in _SPEC.finditer(args):
            name, named = spec.group("name"), {e.strip() for e in spec.group("extras").split(",") if e.strip()}
            if "{" in name:
                continue
            if name.lower() in _OUR_NAMES:
                problems.append(f"{said}: names the distribution {name}[...]; install from the project folder ('.[EXTRA]')")
            elif name.startswith((".", "/")) or name == "":
                problems += [f"{said}: the extra {e} is not in pyproject.toml" for e in sorted(named - extras)]
        for flag in _EXTRA_FLAG.finditer(args):
            if flag.group("extras") not in extras:
                problems.append(f"{said}: the extra {flag.group('extras')} is not in pyproject.toml")
        for word in args.replace("'", " ").split():
            if word.lower() in _OUR_NAMES:
                problems.append(f"{said}: names the distribution {word}, which is not on a package index")
    return problems, found


def _sources() -> list[Path]:
    code = [p for d in SCANNED_CODE for p in sorted((ROOT / d).rglob("*.py")) if p != Path(__file__).resolve()]
    pages = [ROOT / name for name in ("README.md", "CONTRIBUTING.md") if (ROOT / name).is_file()]
    return code + pages + sorted((ROOT / "docs").glob("*.md"))


def test_every_install_hint_in_the_tree_names_a_declared_extra_and_never_the_distribution():
    extras = _declared_extras()
    problems: list[str] = []
    found = 0
    for path in _sources():
        more, n = hint_problems(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix(), extras)
        problems += more
        found += n
    assert found >= 10, f"the scan found only {found} install commands; it has stopped seeing them"
    assert not problems, "install hints that would install the wrong thing:\n" + "\n".join(problems)


@pytest.mark.parametrize("extra", [None, *FEATURE_EXTRAS])
def test_each_hint_the_program_prints_installs_from_the_project_folder(extra):
    said = install_hint(extra)
    problems, found = hint_problems(said, f"install_hint({extra!r})", _declared_extras())
    assert not problems and found == 3, (said, problems)
    assert ("pip install -e ." if extra is None else f"pip install -e '.[{extra}]'") in said
    every = ",".join(FEATURE_EXTRAS)
    assert f"uv tool install '.[{every}]'" in said and f"pipx install --force '.[{every}]'" in said


def test_the_scan_refuses_the_hints_that_installed_the_wrong_package():
    """The failing inputs: the old sentences, and an extra pyproject.toml does not declare."""
    extras = _declared_extras()
    old = "which are not installed: pip install 'resolver" + "[postgres]'."
    assert hint_problems(old, "x", extras)[0] == [
        "x:1: pip install 'resolver[postgres]'.: names the distribution resolver[...]; install from the project folder ('.[EXTRA]')"
    ]
    assert hint_problems("uv tool install '.[postgress]'", "x", extras)[0] == [
        "x:1: uv tool install '.[postgress]': the extra postgress is not in pyproject.toml"
    ]
    assert hint_problems("`pipx install " + DISTRIBUTION + "`", "x", extras)[0]
    assert hint_problems("uv sync --extra nope", "x", extras)[0]
    assert hint_problems("pip install -e '.[postgres,openai]' or pip install 'psycopg[binary]'", "x", extras) == ([], 2)


def test_the_feature_extras_are_the_declared_extras_but_the_developers():
    assert set(FEATURE_EXTRAS) == _declared_extras() - DEVELOPER_EXTRAS
    with pytest.raises(ValueError, match="not a feature extra"):
        install_hint("test")


def _non_docstring_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string constant in ``tree`` that is not a docstring (f-strings' literal parts too)."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_the_program_words_install_hints_in_one_place():
    """A sentence of the packages that says how to install something takes it from
    :func:`core.install_hint`, so a new sentence cannot bring back a wrong name (docstrings may
    describe them)."""
    spread = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "core" / "__init__.py":
                continue
            for line, text in _non_docstring_strings(ast.parse(path.read_text(encoding="utf-8"))):
                if _COMMAND.search(text) or re.search(r"\bpipx\b|\buv tool\b", text):
                    spread.append(f"{path.relative_to(ROOT).as_posix()}:{line}: {text!r}")
    assert not spread, "install commands worded outside core.install_hint:\n" + "\n".join(spread)


# -- doctor ---------------------------------------------------------------------------------------


def _versions(monkeypatch: pytest.MonkeyPatch, **have: str | None) -> None:
    """Make ``metadata.version`` in doctor answer ``have`` for those packages (None: not installed)."""
    from core.ops import doctor

    real = metadata.version

    def version(package: str) -> str:
        key = package.replace("-", "_")
        if key in have:
            if have[key] is None:
                raise metadata.PackageNotFoundError(package)
            return str(have[key])
        return real(package)

    monkeypatch.setattr(doctor.metadata, "version", version)


def test_doctor_names_the_postgres_extra_for_a_missing_psycopg(monkeypatch):
    """doctor said ``pip install -e .`` for a missing psycopg, which does not install the extra."""
    from core.ops.doctor import _dependency_lines

    _versions(monkeypatch, psycopg=None)
    lines = [ln for ln in _dependency_lines(team=True) if ln.startswith("FAIL")]
    assert lines == [f"FAIL  psycopg (the postgres extra) is not installed: {install_hint('postgres')}."]
    assert "pip install -e '.[postgres]'" in lines[0]


def test_doctor_says_the_missing_packages_of_one_extra_in_one_line(monkeypatch):
    """Without the extra both its packages are missing; one install brings both, so one line."""
    from core.ops.doctor import _dependency_lines

    _versions(monkeypatch, psycopg=None, psycopg_pool=None)
    lines = [ln for ln in _dependency_lines(team=True) if ln.startswith("FAIL")]
    assert lines == [f"FAIL  psycopg and psycopg-pool (the postgres extra) are not installed: {install_hint('postgres')}."]
    assert not [ln for ln in _dependency_lines(team=False) if ln.startswith("FAIL")]


def test_doctor_names_the_base_install_for_a_missing_dependency_and_the_extra_for_an_old_one(monkeypatch):
    from core.ops.doctor import _dependency_lines

    _versions(monkeypatch, pydantic=None, psycopg_pool="3.1")
    lines = [ln for ln in _dependency_lines(team=True) if ln.startswith("FAIL")]
    assert lines == [
        f"FAIL  psycopg-pool 3.1 (the postgres extra) is older than the declared 3.2: {install_hint('postgres')}.",
        f"FAIL  pydantic is not installed: {install_hint(None)}.",
    ]


def test_doctor_reads_the_floors_from_the_installed_distribution():
    """doctor read ``metadata.requires("resolver")``: under the new name that finds nothing, and
    every floor check would pass silently."""
    from core.ops.doctor import _floor

    assert metadata.version(DISTRIBUTION)
    assert _floor("pydantic") == "2.10" and _floor("psycopg") == "3.2.1" and _floor("psycopg-pool") == "3.2"
