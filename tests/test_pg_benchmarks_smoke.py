"""The PostgreSQL benchmarks still run (the team store's and the live queue's figures): the quick
mode of ``bench_pg.py``, ``pg_races.py`` and ``bench_live.py`` exits 0, prints its headings, and in
the races no rule is broken.

No timing is asserted (speed lives in the printed figures, never in timed tests). The anchor
section is skipped without the bench extra's ``langgraph-checkpoint-postgres``."""

from __future__ import annotations

import importlib.util

import pytest

from helpers import quick_benchmark
from pg import server_url

pytestmark = pytest.mark.slow


def run_quick(script: str, *args: str) -> str:
    server_url()  # skips (or fails under CI=true) without PostgreSQL
    return quick_benchmark(script, *args)


def test_bench_pg_quick_prints_the_queue_page_and_its_index_plan() -> None:
    out = run_quick("bench_pg.py", "--only", "queue")
    assert "== A queue page on PostgreSQL over 20,000 runs" in out, out
    assert "first page of waiting (200 rows)" in out and "using runs_status_updated_ts" in out, out
    assert "bench_pg done" in out


@pytest.mark.skipif(
    importlib.util.find_spec("langgraph") is None or importlib.util.find_spec("langgraph.checkpoint.postgres") is None,
    reason="the bench extra is not installed (pip install -e '.[bench]'): no LangGraph PostgresSaver to compare with",
)
def test_bench_pg_quick_prints_the_anchor() -> None:
    out = run_quick("bench_pg.py", "--only", "anchor")
    assert "== Checkpoint save and load on PostgreSQL beside LangGraph PostgresSaver" in out, out
    assert "synchronous_commit=on" in out and "save of one step vs put" in out and "load of the whole state" in out


def test_pg_races_quick_breaks_no_rule() -> None:
    out = run_quick("pg_races.py", "--only", "resume", "--only", "sweep")
    assert "== Two resumes of one loop killed after step 1, 2 rounds" in out, out
    assert "MISSED" not in out.split("== SIGKILL", 1)[1].replace("(printed)", ""), out
    assert "pg_races done" in out


def test_bench_live_quick_prints_the_delay_from_commit_to_repaint() -> None:
    out = run_quick("bench_live.py")
    assert "== A colleague's claim or release, from its commit to the other app's repaint (6 changes)" in out, out
    assert "commit to repaint, median" in out and "commit to repaint, p95" in out
    assert "bench_live done" in out


def test_pg_races_deciders_quick_prints_n_1_beside_n_8_and_no_errors() -> None:
    out = run_quick("pg_races.py", "--only", "deciders")
    assert "== N approvers rejecting waiting runs at once, 2 s each" in out, out
    for n in (1, 2, 4, 8):
        assert f"N = {n}, distinct runs: decisions/s, p50 / p99" in out, out
    errors = [line for line in out.splitlines() if "errors, conflicts, deadlocks" in line or "other outcomes" in line]
    assert len(errors) == 5 and not any("MISSED" in line for line in errors), out
    assert "N = 8 decisions/s at least N = 1's" in out and "pg_races done" in out
