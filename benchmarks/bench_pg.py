"""The team store's benchmarks: PostgreSQL beside LangGraph's ``PostgresSaver``.

Run: ``python benchmarks/bench_pg.py`` (41 rounds, a queue of 1,000,000 runs; a few minutes),
``--quick`` for a smoke run (7 rounds, 20,000 runs), ``--only anchor`` or ``--only queue``.
Needs PostgreSQL (``RESOLVER_TEST_PG``, else ``postgresql://127.0.0.1:5432/test``); each section
makes a schema of its own and drops it. ``anchor`` needs the bench extra
(``pip install -e '.[bench]'``) for ``langgraph-checkpoint-postgres``.

- ``anchor``: the save of one agent step of a real T-65273 run, the save of a decision (status,
  approval, audit row) and the load of the whole state, beside ``PostgresSaver.put`` /
  ``get_tuple`` of a checkpoint holding the same state (``bench_core.py``'s anchor, on
  PostgreSQL): one process, the same server, URL and connection settings (TCP, one schema,
  ``synchronous_commit=on`` for both, printed as each connection sees it), interleaved, median.
  Targets: save and load no slower than put and get_tuple (ratio <= 1.0).
  Target for a decision's save: <= 2x put. Then the server round trips of each call on both
  sides, counted from libpq's trace of the protocol (a round trip: the client's messages, then
  the server's answer).
- ``queue``: the first page of the waiting filter (and the next page, and "all") through
  ``PostgresStore.page`` over 1,000,000 runs (SQL copies of a real run of each status,
  :mod:`pg_bulk`), with the plan PostgreSQL chose, and the filter bar's counts (kept in
  ``run_counts`` and the deltas its triggers append, migrations 7 and 19) beside the ``GROUP BY`` they replace. Targets: a
  waiting page under 20 ms; counts under 20 ms and equal to the ``GROUP BY``.

Every figure is printed beside its target with "met" or "MISSED"; nothing is asserted.
"""

from __future__ import annotations

import gc
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from core.stores.postgres.store import COUNTS_SQL
from core.stores.postgres.trace import round_trips

from bench_core import (
    Anchor,
    Prepare,
    decision_save,
    get_of,
    interleaved,
    kib,
    load_of,
    new_id,
    put_after,
    ratio_line,
    save_after,
)
from harness import (
    TEMPLATES,
    RealRun,
    chosen_sections,
    figure,
    fresh_copy,
    heading,
    make_templates,
    median,
    ms,
    section_parser,
    shm_tmp,
)

FRIDAY = "2026-10-09T17:00:00-04:00"
SECTIONS = ("anchor", "queue")
SETTINGS = "-csynchronous_commit=on"
"""The durability both sides run at: each commit waits for its WAL record on disk."""


@contextmanager
def schema() -> Iterator[str]:
    """A new schema on the benchmark's server (:func:`pg.fresh_schema`): yields the URL choosing
    it with :data:`SETTINGS` added to its options, dropped at the end."""
    from core.stores.postgres.database import forget

    from pg import _server, fresh_schema

    server, why = _server()
    if server is None:
        sys.exit(f"No PostgreSQL to benchmark on: {why}.")
    with fresh_schema() as url:
        ours = url + quote(f" {SETTINGS}")
        try:
            yield ours
        finally:
            forget(ours)


class PgAnchor(Anchor):
    """LangGraph's ``PostgresSaver`` on ``url`` (one connection, autocommit, as its docs open
    it), checkpoints made as :class:`bench_core.Anchor` makes them."""

    def __init__(self, url: str) -> None:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        self.conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        self.saver = PostgresSaver(self.conn)  # type: ignore[arg-type]
        self.saver.setup()


def collected(prepare: Prepare) -> Prepare:
    """``prepare`` followed by a garbage collection, so a timed call does not pay for the
    set-up's copies (the SQLite store's load at step 200 carried that debt, 11.9x against 4.1x)."""

    def then_collect() -> Callable[[], object]:
        call = prepare()
        gc.collect()
        return call

    return then_collect


def read_of(store: Any, state: Any) -> Prepare:
    """Resolver's read side of a load: the statement and the rows joined into the parts a
    TaskState is built from (``PostgresStore._read``), without building it."""
    rid = new_id()
    store.save(fresh_copy(state, rid))

    def read() -> object:
        with store.db.read() as conn:
            return store._read(conn, rid)

    return lambda: read


def _setting(conn: Any, name: str) -> str:
    row = conn.execute(f"SHOW {name}").fetchone()
    return str(row[name] if isinstance(row, dict) else row[0])


def open_store(url: str) -> Any:
    from core.api.queue import queue_columns
    from core.ground.clock import FixedClock
    from core.stores import open_store as open_place

    return open_place(url, FixedClock(FRIDAY), summarize=queue_columns)


def bench_anchor(quick: bool) -> None:
    heading("Checkpoint save and load on PostgreSQL beside LangGraph PostgresSaver, median, interleaved")
    rounds = 7 if quick else 41
    root = shm_tmp("bench-pg-")
    try:
        real = RealRun(root / "real")
        with schema() as url:
            store = open_store(url)
            anchor = PgAnchor(url)
            with store.db.read() as conn:
                ours = f"synchronous_commit={_setting(conn, 'synchronous_commit')}, fsync={_setting(conn, 'fsync')}"
            theirs = f"synchronous_commit={_setting(anchor.conn, 'synchronous_commit')}"
            print(f"  server {store.db.label}; resolver's pool: {ours}; PostgresSaver's connection: {theirs}")
            k = real.typical
            prev, step = real.steps[k - 1], real.steps[k]
            print(f"  the step: step {k} of a real run of T-65273; state {kib(step)}; {rounds} rounds; resolver vs put/get_tuple")
            a, b = interleaved(rounds, save_after(store, prev, step), put_after(anchor, prev, step))
            ratio_line("save of one step vs put", a, b, 1.0)
            a, b = interleaved(
                rounds,
                decision_save(store, real.waiting, real.decision, real.decision_kwargs),
                put_after(anchor, real.waiting, real.decision),
            )
            ratio_line("save of a decision (status, approval, audit) vs put", a, b, 2.0)
            a, b = interleaved(rounds, collected(load_of(store, real.waiting)), collected(get_of(anchor, real.waiting)))
            ratio_line(f"load of the whole state ({kib(real.waiting)}) vs get_tuple", a, b, 1.0)
            a, b = interleaved(rounds, collected(read_of(store, real.waiting)), collected(get_of(anchor, real.waiting)))
            ratio_line("  its read side (the rows, before TaskState is built) vs get_tuple", a, b, 1.0)
            n = 40 if quick else 200
            s_prev, s_next = real.long_state(n - 1), real.long_state(n)
            a, b = interleaved(rounds, save_after(store, s_prev, s_next), put_after(anchor, s_prev, s_next))
            ratio_line(f"save at step {n} ({kib(s_next)}) vs put", a, b, 1.0)
            a, b = interleaved(rounds, collected(load_of(store, s_next)), collected(get_of(anchor, s_next)))
            ratio_line(f"load at step {n} vs get_tuple", a, b, 1.0)
            a, b = interleaved(rounds, collected(read_of(store, s_next)), collected(get_of(anchor, s_next)))
            ratio_line("  its read side (the rows, before TaskState is built) vs get_tuple", a, b, 1.0)
            print("  server round trips per call (libpq's trace; resolver vs LangGraph):")
            with store.db.read() as conn:
                for label, ours_of, theirs_of in (
                    ("save of one step vs put", save_after(store, prev, step), put_after(anchor, prev, step)),
                    (
                        "save of a decision vs put",
                        decision_save(store, real.waiting, real.decision, real.decision_kwargs),
                        put_after(anchor, real.waiting, real.decision),
                    ),
                    ("load vs get_tuple", load_of(store, real.waiting), get_of(anchor, real.waiting)),
                ):
                    ours_trips = round_trips(conn, ours_of())
                    theirs_trips = round_trips(anchor.conn, theirs_of())
                    figure(f"  {label}", f"{ours_trips} vs {theirs_trips}", "(printed)", None)
            anchor.conn.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def plan_of(conn: Any, sql: str, params: tuple[Any, ...]) -> str:
    """The plan's node lines of ``sql`` (EXPLAIN, costs off), joined by `` / ``."""
    rows = conn.execute("EXPLAIN (COSTS OFF) " + sql, params).fetchall()
    return " / ".join(r[0].strip().lstrip("-> ").strip() for r in rows if "->" in r[0] or r is rows[0])


def bench_queue(quick: bool) -> None:
    from core.contract.store import PAGE_SIZE

    from pg_bulk import copy_runs

    n = 20_000 if quick else 1_000_000
    heading(f"A queue page on PostgreSQL over {n:,} runs (SQL copies of a real run of each status)")
    rounds = 7 if quick else 41
    root = shm_tmp("bench-pg-queue-")
    try:
        templates = make_templates(root / "templates")
        with schema() as url:
            store = open_store(url)
            for task, _how, _status in dict.fromkeys(TEMPLATES):
                run_id = f"{task}-agent-chat-small-1"
                store.save(fresh_copy(templates.store.load(run_id), run_id))
            with store.db.read() as conn:
                took = copy_runs(conn, n)
                counts = dict(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status ORDER BY status").fetchall())
                size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size('runs'))").fetchone()[0]
            print(
                f"  built {sum(counts.values()):,} runs ({', '.join(f'{s} {c:,}' for s, c in counts.items())}) in {took:.1f} s; runs {size}"
            )
            for status, label, target in (("waiting_approval", "waiting", 0.020), (None, "all", None)):
                first: list[float] = []
                nxt: list[float] = []
                rows: list[Any] = []
                for _ in range(rounds):
                    t = time.perf_counter()
                    rows = store.page(status, limit=PAGE_SIZE)
                    first.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    more = store.page(status, after=rows[-1], limit=PAGE_SIZE)
                    nxt.append(time.perf_counter() - t)
                ok = None if target is None else median(first) < target
                figure(
                    f"first page of {label} ({PAGE_SIZE} rows), median of {rounds}",
                    f"{ms(median(first))} ({len(rows)} rows)",
                    f"< {target * 1000:.0f} ms" if target else "(printed)",
                    ok,
                )
                figure(f"next page of {label}, median of {rounds}", f"{ms(median(nxt))} ({len(more)} rows)", "(printed)", None)
            kept: list[float] = []
            scanned: list[float] = []
            with store.db.read() as conn:
                for _ in range(7 if quick else 11):
                    t = time.perf_counter()
                    counts_kept = store.counts()
                    kept.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    counts_scanned = dict(
                        conn.execute("SELECT CASE WHEN state_ok THEN status ELSE 'corrupt' END, COUNT(*) FROM runs GROUP BY 1")
                    )
                    scanned.append(time.perf_counter() - t)
            figure(
                "the counts of every status (run_counts and deltas, migrations 7, 19), median",
                f"{ms(median(kept))} (equal to the GROUP BY: {counts_kept == counts_scanned})",
                "< 20 ms",
                median(kept) < 0.020 and counts_kept == counts_scanned,
            )
            figure("the same counts by a GROUP BY over every run (before), median", ms(median(scanned)), "(printed)", None)
            with store.db.read() as conn:
                sql = "SELECT run_id FROM runs WHERE status = %s ORDER BY updated_ts ASC, run_id ASC LIMIT %s"
                print(f"  plan of the waiting page: {plan_of(conn, sql, ('waiting_approval', PAGE_SIZE))}")
                print(f"  plan of the counts: {plan_of(conn, COUNTS_SQL, ())}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    args = section_parser(__doc__, SECTIONS).parse_args(argv)
    only = chosen_sections(args.only, SECTIONS)
    if "anchor" in only:
        try:
            import langgraph.checkpoint.postgres  # noqa: F401
        except ImportError:
            sys.exit(
                "The LangGraph anchor is missing: install the bench extra with `pip install -e '.[bench]'`, "
                "or run the other section: --only queue."
            )
    print(f"bench_pg ({'quick' if args.quick else 'full'}): {', '.join(only)}; python {sys.version.split()[0]}")
    started = time.perf_counter()
    if "anchor" in only:
        bench_anchor(args.quick)
    if "queue" in only:
        bench_queue(args.quick)
    print(f"\nbench_pg done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
