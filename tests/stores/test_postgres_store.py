"""The PostgreSQL back-end's own rules, beside the conformance suite it passes: errors as one
sentence, the versioned migrations, leases on the database's clock, a lock held too long."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from core.api.queue import queue_columns
from core.contract.store import UnsupportedStoreFormat
from core.engine.runner import new_state
from core.ground.clock import FixedClock, parse_time
from core.ground.data import load_task
from core.ground.errors import ResolverError, StoreBusy

from pg import fresh_schema, server_url, with_schema

FRIDAY = "2026-10-09T17:00:00-04:00"


@pytest.fixture
def url():
    with fresh_schema() as made:
        yield made


def _open(url: str, clock: FixedClock | None = None):
    from core.stores import postgres

    return postgres.open_store(url, clock or FixedClock(FRIDAY), summarize=queue_columns)


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("postgresql://127.0.0.1:1/test", r"^Cannot reach the PostgreSQL database test on 127\.0\.0\.1:1: .*\.$"),
        (
            "postgresql://127.0.0.1:5432/no_such_database_here",
            r"^Cannot reach the PostgreSQL database no_such_database_here .*\.$",
        ),
    ],
)
def test_a_store_that_cannot_be_reached_is_one_sentence(where, says):
    server_url()  # the second case needs a server that answers
    with pytest.raises(ResolverError, match=says) as caught:
        _open(where)
    assert "\n" not in str(caught.value)


def test_a_search_path_naming_no_schema_is_one_sentence():
    with pytest.raises(ResolverError, match=r"has no schema to hold a store .*options=-csearch_path=name\.$"):
        _open(with_schema(server_url(), "no_such_schema_here"))


def test_the_schema_is_made_by_versioned_migrations_once(url):
    import psycopg
    from core.stores.postgres.schema import MIGRATIONS

    _open(url)
    _open(url)  # a second open in the process, then another process's open, apply nothing
    with psycopg.connect(url) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM resolver_migrations ORDER BY version")]
    assert (
        versions == [version for version, _, _ in MIGRATIONS] == [1, 2, 3, 4, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
    )  # 5 and 9 are unused


def test_a_migration_numbered_below_one_applied_is_applied_when_missing(url):
    """Two changes made at once number their migrations 5 and 6: a schema that got 6 first still
    gets 5 (here: 4 taken away and its table dropped), never skipped for being below the highest."""
    import psycopg
    from core.stores.postgres.database import forget

    _open(url)
    forget(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE store_meta")
        conn.execute("DELETE FROM resolver_migrations WHERE version = 4")
    _open(url)
    with psycopg.connect(url) as conn:
        assert [r[0] for r in conn.execute("SELECT version FROM resolver_migrations ORDER BY version")] == [
            1, 2, 3, 4, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
        ]  # fmt: skip
        assert conn.execute("SELECT to_regclass('store_meta')").fetchone()[0] is not None


def test_a_newer_resolvers_schema_is_refused(url):
    import psycopg
    from core.stores.postgres.database import forget

    _open(url)
    forget(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO resolver_migrations (version, description) VALUES (99, 'from the future')")
    with pytest.raises(UnsupportedStoreFormat, match="schema version 99, written by a newer resolver"):
        _open(url)


def test_leases_use_the_databases_clock_not_the_homes(url):
    """Two machines whose clocks disagree agree on a lease: its end is the database's now + ttl."""
    store = _open(url, FixedClock(FRIDAY))  # the trainer's clock, weeks away from the server's
    state = new_state(load_task("T-65273"), "agent", "chat-small", "r-1", store.clock)
    store.save(state)
    lease = store.acquire_lease("r-1", "me@here:1:x", 60)
    real = datetime.now(UTC)
    assert abs(lease.expires - (real + timedelta(seconds=60))) < timedelta(seconds=30)
    assert parse_time(store.summary("r-1").lease_expires) == lease.expires.replace(microsecond=0)
    assert store.load("r-1").updated_at == parse_time(FRIDAY)  # the checkpoint keeps the home's clock


def test_a_lock_held_too_long_is_store_busy(url, monkeypatch):
    """The wait is the pool's own timeout, patched where the pool reads it (patched on the module
    that once re-exported it, it changed nothing and the test waited the product's 5 s)."""
    import psycopg
    from core.stores.postgres import pool

    monkeypatch.setattr(pool, "LOCK_TIMEOUT_S", 0.3)
    store = _open(url)
    store.save(new_state(load_task("T-65273"), "agent", "chat-small", "r-1", store.clock))
    with psycopg.connect(url) as other:
        other.execute("SELECT 1 FROM runs WHERE run_id = 'r-1' FOR UPDATE")
        with pytest.raises(StoreBusy, match=r"stayed locked by another writer for 0\.\d s .*; try again\.$"):
            store.acquire_lease("r-1", "me@here:1:x", 60)


def test_without_the_postgres_extra_the_store_says_how_to_install_it():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from core.ground.errors import ResolverError\n"
        "from core.stores import postgres\n"
        "try:\n"
        "    postgres.open_store('postgresql:///test', summarize=None)\n"
        "except ResolverError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    from core import install_hint

    assert out == f"A PostgreSQL store needs psycopg and psycopg-pool, which are not installed: {install_hint('postgres')}."
    assert "pip install -e '.[postgres]'" in out and "resolver[" not in out


def test_a_dropped_audit_guard_is_made_again_and_reported(url):
    import psycopg
    from core.engine.auditchain import verify_audit

    _open(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TRIGGER audit_no_delete ON audit")
    store = _open(url)
    assert store.repaired_triggers == ["audit_no_delete"] and "audit_no_delete" in store.repairs[0]
    assert verify_audit(store).ok
    with psycopg.connect(url, autocommit=True) as conn, pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        conn.execute("INSERT INTO audit (id, run_id) VALUES (1, 'x'); DELETE FROM audit")


def test_the_friday_to_monday_story_and_the_crash_story_on_postgres(url, tmp_path, monkeypatch, capsys):
    """The two stories of docs/index.md through the command line with ``RESOLVER_STORE`` naming the team
    store, every part of the home in PostgreSQL, printing the seed's numbers."""
    from core.cli import main

    monkeypatch.setenv("RESOLVER_STORE", url)
    home = str(tmp_path / "home")

    def run(*argv: str) -> tuple[int, str]:
        try:
            code = main([*argv, "--home", home])
        except SystemExit as exc:
            code = int(exc.code or 0)
        return code, capsys.readouterr().out

    run("reset", "--all")
    run("clock", "set", "2026-10-09T17:00:00-04:00")
    code, out = run("run", "T-65273")
    assert code == 0 and "3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081" in out
    run("clock", "set", "2026-10-12T09:00:00-04:00")
    code, out = run("manual-refund", "manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    assert "RF-4CFEAE8E" in out
    code, out = run("approve", "T-65273-agent-chat-small-1", "--as", "grace", "--name", "Grace")
    assert code == 5 and "PAY-507862-2 is not a captured charge of LK-507862" in out and "Status: handed_to_person" in out
    run("reset", "--all")
    run("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")
    code, _ = run("approve", "T-90104-agent_structured-chat-strong-1", "--as", "agent", "--interrupt", "before-write")
    assert code == 3
    code, out = run("resume", "T-90104-agent_structured-chat-strong-1")
    assert code == 0 and "request_refund LK-793996: done (operation" in out and "Status: done" in out
    code, out = run("resume", "T-90104-agent_structured-chat-strong-1")
    assert "Nothing to resume: the run is done." in out


def test_a_server_that_went_away_is_unreachable_not_busy_and_answers_again_when_back(url):
    """The server cut off (every connection closed, the port refusing): the read that meets a
    dead connection is ConnectionLost, the next one, which waits for a connection that cannot be
    made, is StoreUnreachable naming why (it said the store "had no free connection", as if busy),
    and once the server is back a read works again on new connections."""
    from core.ground.errors import ConnectionLost, StoreUnreachable
    from core.stores.postgres.database import forget
    from core.stores.postgres.pool import Database

    from pg import Cut, through

    relay = Cut(url)
    _open(url)
    forget(url)
    db = Database(through(url, relay))
    try:
        with db.read() as conn:
            assert conn.execute("SELECT 1").fetchone()[0] == 1
        relay.cut()
        with pytest.raises(ConnectionLost), db.read() as conn:
            conn.execute("SELECT 1")
        with pytest.raises(StoreUnreachable, match=r"^Cannot reach the PostgreSQL database .*: .*\.$") as said, db.read() as conn:
            conn.execute("SELECT 1")
        assert "free connection" not in str(said.value) and "\n" not in str(said.value)
        relay.join()
        with db.read() as conn:
            assert conn.execute("SELECT 1").fetchone()[0] == 1
    finally:
        db.close()
