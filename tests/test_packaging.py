"""The wheel ships data/ inside the package, so an installed core finds it without the repo, and
ships the lesson's ``resolver`` package, so ``python -m resolver`` works from an install."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_wheel_carries_the_practice_world_and_core_finds_it(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("resolver-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert {"core/_data/policy.json", "core/_data/world.json", "core/_data/tickets/T-65273.json",
                "core/_data/recordings/T-65273.json"} <= names
        zf.extractall(tmp_path / "site")
    code = "import core.data as d; print(d.data_dir()); print(d.load_task('T-65273').order_id)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}, check=True).stdout
    assert out.splitlines() == [str(tmp_path / "site" / "core" / "_data"), "LK-507862"]


def test_the_wheel_ships_the_lessons_resolver_package(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("resolver-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "site")
    assert {f"resolver/{m}.py" for m in ("__init__", "__main__", "systems", "checkpoint", "data", "providers", "runner")} <= names
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin", "RESOLVER_HOME": str(tmp_path / "home")}
    code = "import resolver, resolver.systems, resolver.runner; print(resolver.__file__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, check=True).stdout
    assert out.strip() == str(tmp_path / "site" / "resolver" / "__init__.py")
    run = subprocess.run([sys.executable, "-m", "resolver", "run", "T-65273"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "Outcome: resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081" in run.stdout
