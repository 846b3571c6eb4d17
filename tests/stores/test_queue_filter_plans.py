"""Each filter of the app reads its pages from an index, on SQLite. The app's "waiting" and "mine"
first pages took 170 to 290 ms at 1,000,000 runs; their plans were already the sort's index (the
time went to loading the page's lapsed runs whole: :func:`core.engine.watch.sweep_lapses`, tested in
``tests/conformance/test_events_contract.py``). This keeps every filter's page, first and next, in
every sort, and the lapse check's read, off a full scan and a temporary B-tree."""

from __future__ import annotations

import sqlite3

import pytest
from core.api.home import Home
from core.contract.store import SORTS
from core.stores.sqlite.checkpoint import CheckpointStore
from resolver_tui.widgets.bars import FILTERS, MINE


def _plan(conn: sqlite3.Connection, sql: str, params: list) -> list[str]:
    return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


def _bad(plan: list[str]) -> list[str]:
    """The steps of ``plan`` that read a table whole or sort in a temporary B-tree."""
    return [step for step in plan if "TEMP B-TREE" in step or (step.startswith("SCAN") and "INDEX" not in step)]


@pytest.mark.parametrize("sort", [None, *SORTS])
def test_every_filters_pages_are_read_from_an_index(home: Home, sort: str | None):
    home.run("T-90103")
    conn = sqlite3.connect(home.store.path)
    try:
        for status, label in FILTERS:
            rank = 2 if status == MINE else None
            where = "waiting_approval" if status == MINE else status
            for after in (None, (1.0, "T-90103-agent-chat-small-1")):
                sql, params = CheckpointStore._page_sql("run_id", where, None, sort, after, rank)
                plan = _plan(conn, sql, [*params, 50])
                assert plan and not _bad(plan) and "USING" in " ".join(plan), (label, sort, after, plan)
    finally:
        conn.close()


def test_the_lapse_check_of_a_waiting_page_reads_the_lapses_index(home: Home):
    home.run("T-90103")
    conn = sqlite3.connect(home.store.path)
    try:
        plan = _plan(conn, "SELECT run_id, at FROM queue_events WHERE kind = 'lapse' AND run_id IN (?, ?)", ["a", "b"])
    finally:
        conn.close()
    assert not _bad(plan) and any("queue_events_lapse" in step for step in plan), plan
