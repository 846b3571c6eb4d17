"""The benchmarks still run: the quick mode of each script exits 0 and prints its headings.

No timing is asserted (speed lives in the benchmarks' printed figures, never in timed tests). The
sections that need no anchor run everywhere, CI's README command included; only those measured
beside LangGraph's SqliteSaver are skipped when the bench extra is not installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import quick_benchmark

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow

needs_anchor = pytest.mark.skipif(
    importlib.util.find_spec("langgraph") is None or importlib.util.find_spec("langgraph.checkpoint.sqlite") is None,
    reason="the bench extra is not installed (pip install -e '.[bench]'): no LangGraph SqliteSaver to compare with",
)


def test_bench_core_quick_prints_the_sections_without_an_anchor() -> None:
    out = quick_benchmark("bench_core.py", "--only", "executor", "--only", "startup", "--only", "long", "--only", "listing")
    for heading in (
        "== Executor: approve + execute",
        "== Start-up: python -X importtime",
        "== A 30-step run with 5 KB tool outputs",
        "== resolver runs --status waiting_approval",
    ):
        assert heading in out, out
    assert "LangGraph" not in out.split("\n", 1)[1]  # no anchor section ran
    assert "bench_core done" in out


@needs_anchor
def test_bench_core_quick_prints_the_sections_beside_the_anchor() -> None:
    out = quick_benchmark("bench_core.py", "--only", "anchor", "--only", "disk")
    for heading in (
        "== Checkpoint save and load beside LangGraph SqliteSaver, tmpfs",
        "== On disk, same durability",
    ):
        assert heading in out, out
    assert "save of one step vs put" in out
    assert "bench_core done" in out


def test_bench_core_names_the_sections_that_need_no_anchor_when_it_is_missing() -> None:
    if importlib.util.find_spec("langgraph") is not None:
        pytest.skip("the bench extra is installed: the anchor is not missing")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_core.py"), "--quick", "--only", "anchor"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "--only executor" in proc.stderr and "Traceback" not in proc.stderr


def test_bench_tui_quick_prints_every_home() -> None:
    out = quick_benchmark("bench_tui.py")
    for heading in ("== The app on 2,000 runs", "== The app on 5,000 runs"):
        assert heading in out, out
    assert "key to detail painted over" in out and "main-thread CPU per key" in out
    assert "filter 'all', key to first page painted" in out and "filter 'mine', key to first page painted" in out
    assert "bench_tui done" in out


def test_bench_keys_quick_prints_the_cost_of_a_guess() -> None:
    out = quick_benchmark("bench_keys.py")
    assert "## one passphrase guess against a stored key" in out and "guesses/s" in out


def test_callgrind_counts_each_marked_region_and_nothing_else(tmp_path) -> None:
    """benchmarks/callgrind.py: outside valgrind a region counts nothing and the driver runs as
    usual; under valgrind each region is one count, a loop twice as long counts about twice the
    instructions, and the start-up is not counted."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import callgrind
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    meter = callgrind.Meter()
    assert meter.on_valgrind is False
    with meter.region("nothing"):
        pass
    if not callgrind.available():
        pytest.skip(callgrind.why_not() or "no valgrind")
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
        "from callgrind import Meter, floor\n"
        "m = Meter()\n"
        "for label, n in (('short', 20000), ('long', 40000), ('short', 20000)):\n"
        "    with m.region(label):\n"
        "        sum(i * i for i in range(n))\n"
        "floor(m, 2)\n"
        "print(m.on_valgrind)\n"
    )
    regions, out = callgrind.counted([sys.executable, str(driver)], timeout=600)
    assert out.strip() == "True"
    assert sorted(regions) == ["floor", "long", "short"] and len(regions["short"]) == 2
    short, long_ = min(regions["short"]), regions["long"][0]
    assert 1.8 < long_ / short < 2.2, regions
    assert max(regions["floor"]) < short / 20, regions


def test_bench_watch_quick_prints_both_homes_figures() -> None:
    from pg import server_url

    server_url()  # skips with the reason when PostgreSQL is absent
    out = quick_benchmark("bench_watch.py")
    assert "== A claim to its line of resolver watch" in out, out
    for label in ("team store (LISTEN): p99", "SQLite home folder (polling): p99"):
        assert label in out, out
    assert "bench_watch done" in out
