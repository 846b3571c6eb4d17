"""The live queue's notifications on PostgreSQL (migration 11): what sends, what is heard by whom,
and a store at the previous schema upgraded.

The waits are on what the listener heard, with a deadline only as a guard. That something is
*not* sent is shown by order: PostgreSQL delivers notifications in commit order, so a change
that would have been heard before a later committed one, and was not, was never sent."""

from __future__ import annotations

import threading
import time

from core.api.home import Home
from core.ground.clock import FixedClock

from helpers import MONDAY
from pg import fresh_schema, undo_migration_12, undo_migration_20

RUN = "T-65273-agent-chat-small-1"
GUARD_S = 30.0


class Heard:
    """What a listener heard, gathered from its thread."""

    def __init__(self) -> None:
        self.changes: list[tuple[str, str | None]] = []
        self.states: list[str] = []
        self.lock = threading.Lock()

    def change(self, batch: list[tuple[str, str | None]]) -> None:
        with self.lock:
            self.changes.extend(batch)

    def state(self, state: str) -> None:
        with self.lock:
            self.states.append(state)

    def until(self, *pairs: tuple[str, str | None], after: int = 0) -> list[tuple[str, str | None]]:
        """Wait until each of ``pairs`` was heard after the first ``after`` changes; the changes
        heard until then (all of them)."""
        end = time.monotonic() + GUARD_S
        while True:
            with self.lock:
                if set(pairs) <= set(self.changes[after:]):
                    return list(self.changes)
            assert time.monotonic() < end, f"{pairs} were never all heard after {after}: {self.changes}"
            time.sleep(0.01)


def _listen(home: Home) -> tuple[Heard, object]:
    listener = home.queue_changes()
    assert listener is not None
    heard = Heard()
    listener.start(heard.change, heard.state)
    assert listener.listening(GUARD_S)
    return heard, listener


def test_a_save_a_claim_a_handover_and_a_decision_are_each_heard(tmp_path):
    with fresh_schema() as url:
        home = Home(tmp_path / "a", clock=FixedClock(MONDAY), store=url)
        heard, listener = _listen(home)
        try:
            home.run("T-65273")
            n = len(heard.until(("run", RUN), ("request", RUN)))
            home.mark("claim", RUN, "grace", "Ana")
            n = len(heard.until(("claim", RUN), ("marks", RUN), after=n))
            home.mark("release", RUN, "grace", "Ana")  # no event of its own: the marks' row is heard
            n = len(heard.until(("marks", RUN), after=n))
            home.mark("handover", RUN, "grace", "Ana", to="Tomás", note="yours")
            n = len(heard.until(("handover", RUN), ("marks", RUN), after=n))
            home.approve(RUN, "grace", "Ana")
            heard.until(("run", RUN), after=n)
        finally:
            listener.stop()
        assert not listener.alive


def test_a_rolled_back_change_and_another_schemas_change_are_not_heard(tmp_path):
    import psycopg

    with fresh_schema() as url, fresh_schema() as elsewhere:
        home = Home(tmp_path / "a", clock=FixedClock(MONDAY), store=url)
        home.run("T-65273")
        other = Home(tmp_path / "b", clock=FixedClock(MONDAY), store=elsewhere)
        heard, listener = _listen(home)
        try:
            with psycopg.connect(url) as conn:  # one transaction, rolled back
                conn.execute("UPDATE runs SET version = version + 1 WHERE run_id = %s", (RUN,))
                conn.rollback()
            other.run("T-90103")  # committed, in another schema
            home.mark("claim", RUN, "grace", "Ana")  # committed after both
            changes = heard.until(("claim", RUN))
        finally:
            listener.stop()
        assert ("run", RUN) not in changes and not any(run and run.startswith("T-90103") for _, run in changes), changes


def test_a_store_at_schema_10_is_upgraded_and_its_waiting_run_approves_and_is_heard(tmp_path):
    """The release before migration 11 left a run waiting: this release's first open adds the
    triggers (nothing stored changes), and the approval is heard and executes."""
    import psycopg
    from core.stores.postgres.database import forget
    from core.stores.postgres.schema import ALL

    with fresh_schema() as url:
        Home(tmp_path / "a", clock=FixedClock(MONDAY), store=url).run("T-65273")
        forget(url)
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():  # back to what migration 10 left
            for trigger, table in (
                ("runs_notify_update", "runs"),
                ("runs_notify_insert", "runs"),
                ("runs_notify_delete", "runs"),
                ("run_marks_notify", "run_marks"),
                ("queue_events_notify", "queue_events"),
            ):
                conn.execute(f"DROP TRIGGER {trigger} ON {table}")
            for function in (
                "resolver_notify_run",
                "resolver_notify_runs_added",
                "resolver_notify_marks",
                "resolver_notify_event",
            ):
                conn.execute(f"DROP FUNCTION {function}()")
            conn.execute("DROP TRIGGER queue_event_refresh ON audit")  # and migration 13's
            conn.execute("DROP FUNCTION resolver_queue_event_refresh()")
            conn.execute("DROP TRIGGER queue_event_forget ON runs")  # and migration 16's
            conn.execute("DROP FUNCTION resolver_queue_event_forget()")
            conn.execute("DELETE FROM resolver_migrations WHERE version IN (11, 13, 16)")
            undo_migration_12(conn)
            undo_migration_20(conn)  # and 20's, which a store at 10 had not either
            assert max(r[0] for r in conn.execute("SELECT version FROM resolver_migrations")) == 10
        home = Home(tmp_path / "a", clock=FixedClock(MONDAY), store=url)
        with psycopg.connect(url) as conn:
            assert [r[0] for r in conn.execute("SELECT version FROM resolver_migrations ORDER BY 1")] == sorted(ALL)
        heard, listener = _listen(home)
        try:
            assert home.approve(RUN, "grace", "Ana").status == "done"
            heard.until(("run", RUN))
        finally:
            listener.stop()


def test_the_channel_is_the_schemas_and_fits_postgresqls_limit():
    from core.stores.postgres.listen import channel

    assert channel("t_1") != channel("t_2")
    assert len(channel("x" * 63)) <= 63 and channel("x" * 63).startswith("resolver_queue_")


def test_a_store_copy_into_postgresql_sends_one_notification_to_read_the_queue_again(demo_home):
    """``resolver store copy`` writes its rows quietly (migration 13's ``resolver.quiet``) and
    then sends one ``{"kind": "queue", "run_id": null}``: the demo queue's runs, marks and events
    made one notification each before. A marker committed after the copy shows nothing else came
    (PostgreSQL delivers in commit order)."""
    import psycopg
    from core.ops.storecopy import copy_store
    from core.stores.postgres.listen import REREAD, QueueListener, channel

    runs = len(demo_home.store.page(None, limit=1000))
    assert runs > 5
    with fresh_schema() as url:
        Home(demo_home.root.parent / "empty", clock=FixedClock(MONDAY), store=url)  # the schema, made before listening
        heard = Heard()
        listener = QueueListener(url)
        listener.start(heard.change, heard.state)
        try:
            assert listener.listening(GUARD_S)
            report = copy_store(demo_home.root, url)
            assert report.ok, report.lines
            with psycopg.connect(url, autocommit=True) as conn:
                schema = conn.execute("SELECT current_schema()").fetchone()[0]
                conn.execute('SELECT pg_notify(%s, \'{"kind": "marker"}\')', (channel(schema),))
            changes = heard.until(("marker", None))
        finally:
            listener.stop()
        assert changes == [(REREAD, None), ("marker", None)]
        other = Home(demo_home.root.parent / "t", clock=FixedClock(MONDAY), store=url)  # and a later write is heard again
        heard, listener = _listen(other)
        try:
            run = other.store.page("waiting_approval", limit=1)[0].run_id
            other.mark("claim", run, "team_lead", "Tomás")
            heard.until(("claim", run), ("marks", run))
        finally:
            listener.stop()


def test_a_write_to_the_world_or_its_register_is_heard_once_per_statement_kind(tmp_path):
    """Migration 20: a colleague's manual refund (a write of the practice world by another
    home), a row of the register written by hand, and nothing while the store copy's quiet
    setting is on (the claim after it shows by order that the quiet write sent nothing)."""
    import psycopg

    with fresh_schema() as url:
        home = Home(tmp_path / "a", clock=FixedClock(MONDAY), store=url)
        home.run("T-65273")
        other = Home(tmp_path / "b", clock=FixedClock(MONDAY), store=url)
        heard, listener = _listen(home)
        try:
            other.manual_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
            n = len(heard.until(("world", None)))
            with psycopg.connect(url) as conn:  # one transaction, two statements on the register: one notification
                conn.execute("UPDATE operations SET service = service WHERE false")
                conn.execute("UPDATE register_head SET one = one")
            n = len(heard.until(("world", None), after=n))
            with psycopg.connect(url) as conn:
                conn.execute("SELECT set_config('resolver.quiet', 'on', true)")
                conn.execute("UPDATE customers SET customer_id = customer_id")
            home.mark("claim", RUN, "grace", "Ana")
            changes = heard.until(("claim", RUN), after=n)
        finally:
            listener.stop()
        assert ("world", None) not in changes[n:], changes[n:]
