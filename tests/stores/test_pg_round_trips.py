"""A save and a load on PostgreSQL wait on the server as few times as the work needs, since each
wait is a network round trip paid on every step: counted from libpq's own trace of the messages
sent and received (``PQtrace``), a round trip being the client's messages followed by the server's
answer. A step's save is one statement in autocommit (one round trip); a decision's is one
pipelined transaction (the header, its rows, the audit row chained under the head's lock and the
``COMMIT``: one, whoever wrote the audit's newest row); a load is one statement. LangGraph's
``PostgresSaver.put`` takes two to three. The rare path, rows stored that are not the ones the
saving object saw, still rewrites them all in one transaction."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from itertools import pairwise

import pytest
from core.api.home import Home
from core.contract.store import RunExists
from core.ground.clock import FixedClock
from core.ground.errors import StaleCheckpoint
from core.stores.postgres.trace import round_trips as trace_round_trips

from helpers import FRIDAY
from pg import fresh_schema


@pytest.fixture
def home(tmp_path):
    with fresh_schema() as url:
        yield Home(tmp_path / "home", clock=FixedClock(FRIDAY), store=url)


@pytest.fixture
def new_store_of():
    """Another store object on the same schema (another machine's), with its own memory."""
    from core.api.queue import queue_columns
    from core.stores.postgres.store import PostgresStore

    def make(home: Home) -> PostgresStore:
        return PostgresStore(home.store.url, FixedClock(FRIDAY), summarize=queue_columns)

    return make


def round_trips(home: Home, work: Callable[[], object]) -> int:
    """How many times the client sent messages and then read the server's answer while ``work``
    ran on this thread's one pooled connection (:func:`core.stores.postgres.trace.round_trips`,
    the benchmark's count too)."""
    with home.store.db.read() as conn:
        return trace_round_trips(conn, work)


def _step(state) -> None:
    state.log("note", "one more step", n=len(state.events))


DECISION = {"decision": "note", "role": "agent", "name": "Amira", "digest": "d", "at": FRIDAY}


def test_a_steps_save_is_one_round_trip_and_a_load_one(home):
    state = home.run("T-65273")
    loaded = home.store.load(state.run_id)
    _step(loaded)
    assert round_trips(home, lambda: home.store.save(loaded)) == 1
    assert round_trips(home, lambda: home.store.load(state.run_id)) == 1
    assert home.store.load(state.run_id).model_dump() == loaded.model_dump()


def test_a_decisions_save_is_one_round_trip_every_time(home, new_store_of):
    """A decision's header, its rows, its audit row and the commit go in one round trip, the
    first decision of a store object as the next, and after another object (another machine)
    appended: the audit's tip is read under the head's lock by the database, never remembered."""
    state = home.run("T-65273")
    other = new_store_of(home)
    loaded = home.store.load(state.run_id)
    _step(loaded)
    assert round_trips(home, lambda: home.store.save(loaded, audit=DECISION)) == 1
    _step(loaded)
    assert round_trips(home, lambda: home.store.save(loaded, audit=DECISION)) == 1
    theirs = other.load(state.run_id)
    _step(theirs)
    other.save(theirs, audit=DECISION)
    loaded = home.store.load(state.run_id)
    _step(loaded)
    assert round_trips(home, lambda: home.store.save(loaded, audit=DECISION)) == 1
    assert [r["decision"] for r in home.store.audit(state.run_id)] == ["note"] * 4
    assert home.store.load(state.run_id).model_dump() == loaded.model_dump()


def test_decisions_of_two_store_objects_chain_to_each_others_rows(home, new_store_of):
    """Two store objects (two machines) deciding in turn: every audit row is chained to the
    one before it, whichever object wrote that one, so the chain stays whole."""
    from core.contract.audit import row_hash

    state = home.run("T-65273")
    other = new_store_of(home)
    a = home.store.load(state.run_id)
    _step(a)
    home.store.save(a, audit=DECISION)
    b = other.load(state.run_id)
    _step(b)
    other.save(b, audit=DECISION)
    a = home.store.load(state.run_id)
    _step(a)
    home.store.save(a, audit=DECISION)
    rows = home.store.audit_rows()
    assert [r["id"] for r in rows] == [1, 2, 3]
    assert rows[0]["prev"] == "0" * 64
    for before, row in pairwise(rows):
        assert row["prev"] == row_hash(before)


def test_a_decision_signed_over_a_tip_that_moved_is_refused_and_writes_nothing(home):
    """The audit's ``prev`` a decision was signed over is checked under the head's lock: once
    another row was appended, the save is refused with AuditMoved and neither the header nor
    the rows nor an audit row is written."""
    from core.contract.audit import AuditMoved

    state = home.run("T-65273")
    loaded = home.store.load(state.run_id)
    _step(loaded)
    home.store.save(loaded, audit=DECISION)
    before = home.store.load(state.run_id).model_dump()
    _step(loaded)
    with pytest.raises(AuditMoved, match="decide again"):
        home.store.save(loaded, audit={**DECISION, "prev": "f" * 64})
    assert home.store.load(state.run_id).model_dump() == before
    assert len(home.store.audit(state.run_id)) == 1


def test_a_new_runs_save_and_a_lease_renewal_are_one_round_trip_each(home):
    state = home.run("T-65273")
    copy = state.model_copy(update={"run_id": "r-new", "version": 0}, deep=True)
    assert round_trips(home, lambda: home.store.save(copy, lease_owner="me:1", lease_ttl_s=30)) == 1
    assert home.store.summary("r-new").lease_owner == "me:1"
    assert round_trips(home, lambda: home.store.renew_lease("r-new", "me:1", 60)) == 1


@contextmanager
def _stranger_rows(home: Home, run_id: str, first_n: int):
    """Entries rows written by someone else under the keys the next save would use."""
    with home.store.db.read() as conn:
        conn.execute(
            "INSERT INTO entries (run_id, n, list, seq, body) SELECT %s, g, 'events', g, '{}' FROM generate_series(%s::int, %s::int) g",
            (run_id, first_n, first_n + 2),
        )
    yield


@pytest.mark.parametrize("audit", [None, DECISION], ids=["step", "decision"])
def test_rows_stored_that_the_object_did_not_see_are_all_written_again(home, audit):
    state = home.run("T-65273")
    loaded = home.store.load(state.run_id)
    with home.store.db.read() as conn:
        stored = conn.execute("SELECT COUNT(*) FROM entries WHERE run_id = %s", (state.run_id,)).fetchone()[0]
    _step(loaded)
    with _stranger_rows(home, state.run_id, stored + 1):
        home.store.save(loaded, audit=audit)
    assert home.store.load(state.run_id).model_dump() == loaded.model_dump()
    with home.store.db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM entries WHERE run_id = %s", (state.run_id,)).fetchone()[0] == stored + 1


@pytest.mark.parametrize("audit", [None, DECISION], ids=["step", "decision"])
def test_a_refused_save_writes_nothing_neither_rows_nor_audit(home, audit):
    state = home.run("T-65273")
    first, second = home.store.load(state.run_id), home.store.load(state.run_id)
    _step(first)
    home.store.save(first)
    _step(second)
    _step(second)
    with pytest.raises(StaleCheckpoint):
        home.store.save(second, audit=audit)
    assert home.store.load(state.run_id).model_dump() == first.model_dump()
    assert home.store.audit(state.run_id) == []
    copy = state.model_copy(update={"version": 0}, deep=True)
    with pytest.raises(RunExists):
        home.store.save(copy, audit=audit)
    assert home.store.load(state.run_id).model_dump() == first.model_dump()
