"""The package as people install it: the wheel ships data/ inside the package, so an installed core
finds it without the repo, and ships the lesson's ``resolver`` package, so ``python -m resolver``
works from an install; every third-party package the code imports is declared; both commands answer
``--version``."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("core", "resolver_tui", "resolver")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once for this module (a build takes about 20 s here)."""
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    return next(dist.glob(f"{_wheel_name()}-*.whl"))


def _wheel_name() -> str:
    """The distribution's name as a wheel's file and its ``.dist-info`` folder spell it
    (``larkfield-resolver`` -> ``larkfield_resolver``)."""
    import core

    return re.sub(r"[-_.]+", "_", core.DISTRIBUTION).lower()


@pytest.mark.slow
def test_a_wheel_carries_the_practice_world_and_core_finds_it(wheel: Path, tmp_path: Path):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert {
            "core/_data/policy.json",
            "core/_data/world.json",
            "core/_data/tickets/T-65273.json",
            "core/_data/recordings/T-65273.json",
        } <= names
        zf.extractall(tmp_path / "site")
    code = "import core.ground.data as d; print(d.data_dir()); print(d.load_task('T-65273').order_id)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    assert out.splitlines() == [str(tmp_path / "site" / "core" / "_data"), "LK-507862"]


@pytest.mark.slow
def test_the_wheel_ships_the_lessons_resolver_package(wheel: Path, tmp_path: Path):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "site")
    assert {f"resolver/{m}.py" for m in ("__init__", "__main__", "systems", "checkpoint", "data", "providers", "runner")} <= names
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin", "RESOLVER_HOME": str(tmp_path / "home")}
    code = "import resolver, resolver.systems, resolver.runner; print(resolver.__file__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, check=True).stdout
    assert out.strip() == str(tmp_path / "site" / "resolver" / "__init__.py")
    run = subprocess.run(
        [sys.executable, "-m", "resolver", "run", "T-65273"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert "Outcome: resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081" in run.stdout


@pytest.mark.slow
def test_the_wheel_carries_the_license_and_the_version_of_core(wheel: Path):
    import core

    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read(f"{_wheel_name()}-{core.__version__}.dist-info/METADATA").decode()
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in zf.namelist())
    assert f"\nName: {core.DISTRIBUTION}\n" in metadata
    assert f"\nVersion: {core.__version__}\n" in metadata
    assert "\nLicense-Expression: MIT\n" in metadata
    assert "\nRequires-Python: >=3.11\n" in metadata  # Debian 12's own 3.11.2 too (core.ops.maintenance's restore)
    assert all(f"\nClassifier: Programming Language :: Python :: 3.{minor}\n" in metadata for minor in (11, 12, 13))


def test_the_distribution_is_named_larkfield_resolver_and_installed_under_that_name():
    """The distribution was named ``resolver``, an unrelated package's name on PyPI, so the hint to
    install its postgres extra with pip installed that package. The name lives in pyproject.toml
    and in :data:`core.DISTRIBUTION` (which doctor reads the floors by); the two agree, and the
    installed distribution under that name is this one."""
    import core

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == core.DISTRIBUTION == "larkfield-resolver"
    assert importlib.metadata.version(core.DISTRIBUTION) == core.__version__
    scripts = {e.name for e in importlib.metadata.distribution(core.DISTRIBUTION).entry_points if e.group == "console_scripts"}
    assert scripts == set(project["scripts"]) == {"resolver", "resolver-tui"}


class _Imports(ast.NodeVisitor):
    """The top-level names a module imports at run time (``if TYPE_CHECKING:`` blocks left out)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_If(self, node: ast.If) -> None:
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.names |= {a.name.split(".")[0] for a in node.names}

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self.names.add(node.module.split(".")[0])


def _imported_top_level(package: str) -> set[str]:
    found = _Imports()
    for path in (ROOT / package).rglob("*.py"):
        found.visit(ast.parse(path.read_text(encoding="utf-8")))
    return found.names


def _declared() -> set[str]:
    """Every package the runtime dependencies and the feature extras (:data:`core.FEATURE_EXTRAS`,
    imported only where that feature runs) declare."""
    from core import FEATURE_EXTRAS

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    deps = project["dependencies"] + [d for extra in FEATURE_EXTRAS for d in project["optional-dependencies"][extra]]
    return {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}


def test_every_package_the_shipped_code_imports_is_declared():
    """``rich`` was imported by the app but not declared (it came only through textual)."""
    imported = set().union(*(_imported_top_level(p) for p in SHIPPED)) - set(sys.stdlib_module_names) - set(SHIPPED)
    owners = importlib.metadata.packages_distributions()
    missing = {}
    for name in sorted(imported):
        dists = {d.lower().replace("_", "-") for d in owners.get(name, [name])}
        if not dists & _declared():
            missing[name] = sorted(dists)
    assert not missing, f"imported but not in [project] dependencies: {missing}"


def test_the_openai_extra_is_imported_only_by_the_live_model():
    """The recorded path never imports ``openai``; only ``core/models/live_model.py`` does, inside the
    client's constructor (``tests/models/test_live_model.py`` checks it in a process)."""
    shipped = [p for package in SHIPPED for p in sorted((ROOT / package).rglob("*.py"))]
    users = [p.relative_to(ROOT).as_posix() for p in shipped if "openai" in _imported_top_level_of(p)]
    assert users == ["core/models/live_model.py"]


def test_the_postgres_extra_is_imported_only_by_its_back_end():
    """``psycopg`` and ``psycopg_pool`` (the postgres extra) are imported under
    ``core/stores/postgres/`` only (the import-linter contract in pyproject.toml says the same of
    the import graph)."""
    shipped = [p for package in SHIPPED for p in sorted((ROOT / package).rglob("*.py"))]
    users = [p.relative_to(ROOT).as_posix() for p in shipped if {"psycopg", "psycopg_pool"} & _imported_top_level_of(p)]
    assert users and all(u.startswith("core/stores/postgres/") for u in users), users


def _imported_top_level_of(path: Path) -> set[str]:
    found = _Imports()
    found.visit(ast.parse(path.read_text(encoding="utf-8")))
    return found.names


@pytest.mark.parametrize("command", [["-m", "core"], ["-m", "resolver_tui"], ["-m", "resolver"]])
def test_version(command: list[str]):
    import core

    done = subprocess.run([sys.executable, *command, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(f" {core.__version__}")
