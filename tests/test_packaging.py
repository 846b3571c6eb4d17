"""The wheel ships data/ inside the package, so an installed core finds it without the repo."""

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
