"""The benchmarks still run: the quick mode of each script exits 0 and prints its headings.

No timing is asserted (speed lives in the benchmarks' printed figures, never in timed tests).
Skipped when the bench extra (LangGraph's SqliteSaver, the anchor) is not installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("langgraph") is None or importlib.util.find_spec("langgraph.checkpoint.sqlite") is None,
    reason="the bench extra is not installed (pip install -e '.[bench]'): no LangGraph SqliteSaver to compare with",
)


def run_quick(script: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--quick"], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_bench_core_quick_prints_every_section() -> None:
    out = run_quick("bench_core.py")
    for heading in (
        "== Checkpoint save and load beside LangGraph SqliteSaver, tmpfs",
        "== On disk, same durability",
        "== Executor: approve + execute",
        "== Start-up: python -X importtime",
        "== A 30-step run with 5 KB tool outputs",
        "== resolver runs --status waiting_approval",
    ):
        assert heading in out, out
    assert "save of one step vs put" in out
    assert "bench_core done" in out


def test_bench_tui_quick_prints_every_home() -> None:
    out = run_quick("bench_tui.py")
    for heading in ("== The app on 2,000 runs", "== The app on 5,000 runs"):
        assert heading in out, out
    assert "key to detail over" in out
    assert "filter 'all', key to first page" in out
    assert "bench_tui done" in out
