"""The queue's counts on PostgreSQL are kept rows (schema migration 7), so a count never scans the
runs: ``run_counts``, kept by triggers on ``runs`` in every writer's transaction, agree with a
``GROUP BY`` of the runs after every kind of write (a save that moves a status, a new run, a
delete, a run flagged corrupt, a reset, a bulk insert), and a store at schema 6 is counted when it
is upgraded. (The frozen schema-4 shop, upgraded through 6 and 7 and then approved, is in
``tests/stores/test_team_shop.py``.)"""

from __future__ import annotations

from itertools import pairwise

import pytest
from core.api.home import Home
from core.ground.clock import FixedClock
from core.stores.postgres.database import forget

from helpers import FRIDAY
from pg import fresh_schema, undo_migration_19
from pg_bulk import copy_runs


@pytest.fixture
def home(tmp_path):
    with fresh_schema() as url:
        yield Home(tmp_path / "home", clock=FixedClock(FRIDAY), store=url)


def grouped(home: Home) -> dict[str, int]:
    """What the counts were before migration 7: a GROUP BY over every run."""
    with home.store.db.read() as conn:
        rows = conn.execute("SELECT CASE WHEN state_ok THEN status ELSE 'corrupt' END, COUNT(*) FROM runs GROUP BY 1")
        return {s: int(n) for s, n in rows}


def test_the_kept_counts_follow_every_kind_of_write(home):
    waiting = home.run("T-65273")
    assert home.store.counts() == grouped(home) == {"waiting_approval": 1}
    done = home.run("T-90103", repeat=1)
    home.approve(done.run_id, "agent", "Amira")
    assert home.store.counts() == grouped(home) == {"waiting_approval": 1, "done": 1}
    home.store.overwrite_checkpoint(waiting.run_id, lambda text: "not json")
    assert home.store.counts() == grouped(home) == {"corrupt": 1, "done": 1}
    with home.store.db.read() as conn:
        copy_runs(conn, 500)
    assert home.store.counts() == grouped(home) and sum(home.store.counts().values()) == 500
    home.store.delete(done.run_id)
    assert home.store.counts() == grouped(home) and sum(home.store.counts().values()) == 499
    home.store.reset()
    assert home.store.counts() == grouped(home) == {}


def test_a_store_at_schema_6_is_counted_when_upgraded_and_its_waiting_run_still_approves(home):
    """A store as schema 6 left it (migration 7's table, triggers and functions dropped, its
    number removed: what a store written by the release before holds), with a waiting run, a
    done run and a corrupt one, opened again: migration 7 counts what is there."""
    waiting = home.run("T-65273")
    done = home.run("T-90103", repeat=1)
    home.approve(done.run_id, "agent", "Amira")
    broken = home.run("T-65273", repeat=2)
    home.store.overwrite_checkpoint(broken.run_id, lambda text: "not json")
    url = home.store.url
    with home.store.db.read() as conn, conn.transaction():
        undo_migration_19(conn)  # schema 6 had neither 7 nor what 19 changes of it
        for trigger in ("insert", "delete", "update", "truncate"):
            conn.execute(f"DROP TRIGGER runs_counted_{trigger} ON runs")
        for function in ("added", "removed", "moved", "cleared"):
            conn.execute(f"DROP FUNCTION resolver_run_counts_{function}()")
        conn.execute("DROP TABLE run_counts")
        conn.execute("DELETE FROM resolver_migrations WHERE version = 7")
    forget(url)
    again = Home(home.root, clock=FixedClock(FRIDAY), store=url)
    assert again.store.counts() == grouped(again) == {"waiting_approval": 1, "done": 1, "corrupt": 1}
    again.approve(waiting.run_id, "team_lead", "Tomas")
    assert again.store.counts() == grouped(again) == {"done": 2, "corrupt": 1}


def deltas(home: Home) -> int:
    with home.store.db.read() as conn:
        return int(conn.execute("SELECT count(*) FROM run_count_deltas").fetchone()[0])


def test_the_triggers_only_append_and_a_reader_folds_past_the_limit(home):
    """Migration 19: a write that moves a status inserts delta rows and updates no
    ``run_counts`` row (so no writer waits on another's counts); a read past
    :data:`~core.stores.postgres.schema.FOLD_AT` deltas folds them, and the counts stay exact."""
    from core.stores.postgres.schema import FOLD_AT

    with home.store.db.read() as conn:
        before = conn.execute("SELECT count(*), COALESCE(sum(n), 0) FROM run_counts").fetchone()
    waiting = home.run("T-65273")
    home.reject(waiting.run_id, "team_lead", "not this one", "Tomas")
    with home.store.db.read() as conn:
        assert conn.execute("SELECT count(*), COALESCE(sum(n), 0) FROM run_counts").fetchone() == before
    assert deltas(home) >= 3  # the insert's, then the rejection's two (waiting -1, handed +1)
    assert home.store.counts() == grouped(home) == {"handed_to_person": 1}
    with home.store.db.read() as conn:
        copy_runs(conn, 10)
        for _ in range(FOLD_AT // 2 + 1):  # each moves one run there and back: two deltas per update
            conn.execute("UPDATE runs SET state_ok = NOT state_ok WHERE run_id = (SELECT min(run_id) FROM runs)")
    assert deltas(home) > FOLD_AT
    expected = grouped(home)
    assert home.store.counts() == expected  # read, then folded
    assert deltas(home) == 0
    assert home.store.counts() == expected == grouped(home)


def test_a_store_at_schema_18_takes_migration_19_and_its_waiting_run_approves(home):
    """A store as the release before left it (counts added to in place, no deltas, no
    ``resolver_append``), with a waiting run: opened again, migration 19 is applied, the counts
    are unchanged, and the run is approved, chained to the audit written before."""
    from core.contract.audit import row_hash

    waiting = home.run("T-65273")
    done = home.run("T-90103", repeat=1)
    home.approve(done.run_id, "agent", "Amira")
    url = home.store.url
    with home.store.db.read() as conn, conn.transaction():
        undo_migration_19(conn)
    forget(url)
    again = Home(home.root, clock=FixedClock(FRIDAY), store=url)
    with again.store.db.read() as conn:
        assert 19 in {r[0] for r in conn.execute("SELECT version FROM resolver_migrations")}
    assert again.store.counts() == grouped(again) == {"waiting_approval": 1, "done": 1}
    again.approve(waiting.run_id, "team_lead", "Tomas")
    assert again.store.load(waiting.run_id).status == "done"
    assert again.store.counts() == grouped(again) == {"done": 2}
    rows = again.store.audit_rows()
    for before, row in pairwise(rows):
        assert row["prev"] == row_hash(before)


def test_a_frozen_schema_18_team_store_takes_migration_19_and_its_waiting_run_is_paid_once(tmp_path):
    """The release before's store (``tests/fixtures/team_store_schema_18``), with a run waiting
    over the upgrade: migration 19 is applied, the counts kept in shards before it are the same
    after, the run is approved and paid once, and the chain goes on from the row written before."""
    import json
    from pathlib import Path

    import psycopg
    from core.engine.auditchain import verify_audit
    from core.stores.postgres.schema import ALL

    from pg import restore_frozen

    frozen = Path(__file__).parent.parent / "fixtures" / "team_store_schema_18"
    had = {row["version"] for row in json.loads((frozen / "tables.json").read_text(encoding="utf-8"))["resolver_migrations"]}
    assert max(had) == 18 and 19 in ALL
    with fresh_schema() as url:
        restore_frozen(url, frozen, had, verbatim=True)
        home = Home(tmp_path / "home", clock=FixedClock(FRIDAY), store=url)
        with psycopg.connect(url) as conn:
            assert {r[0] for r in conn.execute("SELECT version FROM resolver_migrations")} == set(ALL)
        assert home.store.counts() == grouped(home) == {"waiting_approval": 1, "handed_to_person": 1}
        waiting = home.resume("T-65273-agent-chat-small-1")
        done = home.approve(waiting.state.run_id, "team_lead", "Tomás", seen=home.queue.look(waiting.state))
        assert done.status == "done" and all(op.status == "done" for op in done.operations)
        assert home.store.counts() == grouped(home) == {"done": 1, "handed_to_person": 1}
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*), max(amount) FROM refunds").fetchone() == (1, "119.00")
        assert [r["decision"] for r in home.store.audit_rows()] == ["reject", "approve"]
        assert verify_audit(home.store).problems == []
