"""The queue's pages on PostgreSQL read an index in the page's order: over 20,000 runs, most done
and a few waiting (:data:`pg_bulk.MIX`), the plan of every page the app asks for is an index scan
with no sort and no sequential scan, so a page stays a few hundred rows read whatever the store's
size (``benchmarks/bench_pg.py`` times it over 1,000,000)."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from core.api.home import Home
from core.ground.clock import FixedClock

from helpers import FRIDAY, T65273_RUN
from pg import fresh_schema
from pg_bulk import copy_runs


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A team store of 20,000 runs: a real waiting run, a real done run and their copies."""
    with fresh_schema() as url:
        home = Home(tmp_path_factory.mktemp("plan") / "home", clock=FixedClock(FRIDAY), store=url)
        home.run("T-65273")
        done = home.run("T-90103", repeat=1)
        home.approve(done.run_id, "agent", "Amira")
        with home.store.db.read() as conn:
            copy_runs(conn, 20_000)
        yield home


class Recorder:
    """A connection that records the statements run through it and runs them."""

    def __init__(self, conn):
        self.conn = conn
        self.seen: list[tuple[str, tuple]] = []

    def execute(self, sql, params=()):
        self.seen.append((sql, tuple(params)))
        return self.conn.execute(sql, params)


def plan(home, monkeypatch, **page) -> str:
    """EXPLAIN of the one statement ``home.store.page(**page)`` runs."""
    store = home.store
    real = store.db.read
    recorders: list[Recorder] = []

    @contextmanager
    def read():
        with real() as conn:
            recorders.append(Recorder(conn))
            yield recorders[-1]

    monkeypatch.setattr(store.db, "read", read)
    rows = store.page(**page)
    monkeypatch.setattr(store.db, "read", real)
    assert rows, page
    [(sql, params)] = [s for r in recorders for s in r.seen]
    with real() as conn:
        return "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + sql, params))


def test_the_big_store_is_mostly_done_with_a_few_waiting(big):
    counts = big.store.counts()
    assert sum(counts.values()) == 20_000
    assert counts["done"] > 15_000 and 500 < counts["waiting_approval"] < 2_000


@pytest.mark.parametrize(
    "page",
    [
        {"status": "waiting_approval"},
        {"status": "waiting_approval", "max_role_rank": 1},
        {"status": "done"},
        {"status": None},
        {"status": "waiting_approval", "sort": "amount"},
    ],
    ids=["waiting", "mine", "done", "all", "waiting-by-amount"],
)
def test_a_page_and_the_next_are_index_scans_in_the_pages_order(big, monkeypatch, page):
    first = plan(big, monkeypatch, **page)
    after = big.store.page(**page)[-1]
    nxt = plan(big, monkeypatch, **page, after=after)
    for shown in (first, nxt):
        assert "Index" in shown and "runs_" in shown, shown
        assert "Seq Scan" not in shown and "Sort" not in shown, shown


def test_the_waiting_page_reads_the_status_index(big, monkeypatch):
    shown = plan(big, monkeypatch, status="waiting_approval")
    assert "runs_status_updated_ts" in shown and "Index Cond: (status = " in shown, shown
    assert big.store.page("waiting_approval", limit=1)[0].status == "waiting_approval"
    assert big.store.summary(T65273_RUN).status == "waiting_approval"


def test_the_counts_read_the_kept_rows_not_the_runs(big, monkeypatch):
    """The filter bar's counts sum ``run_counts`` (migration 7), a few dozen rows kept by
    triggers, instead of a GROUP BY over every run (0.5 s at 1,000,000 runs); they agree with
    the GROUP BY."""
    counts = big.store.counts()
    with big.store.db.read() as conn:
        grouped = dict(conn.execute("SELECT status, COUNT(*) FROM runs WHERE state_ok GROUP BY status").fetchall())
    assert counts == grouped
    recorders: list[Recorder] = []
    real = big.store.db.read

    @contextmanager
    def read():
        with real() as conn:
            recorders.append(Recorder(conn))
            yield recorders[-1]

    monkeypatch.setattr(big.store.db, "read", read)
    big.store.counts()
    monkeypatch.setattr(big.store.db, "read", real)
    [(sql, params)] = [s for r in recorders for s in r.seen]
    with real() as conn:
        shown = "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + sql, params))
    assert "run_counts" in shown and " runs" not in shown.replace("run_counts", ""), shown


def test_a_load_is_one_statement_reading_the_keys(big):
    """A load's one statement (header and entries, :data:`core.stores.postgres.store._LOAD`)
    reads the run's row and its entries by their primary keys, whatever the store's size."""
    from core.stores.postgres.store import _LOAD

    with big.store.db.read() as conn:
        shown = "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + _LOAD, (T65273_RUN, T65273_RUN)))
    assert "runs_pkey" in shown and "entries_pkey" in shown and "Seq Scan" not in shown, shown
