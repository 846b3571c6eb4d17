"""A lesson repeated after ``resolver reset`` lapses again (found in a new users' trial).

The lesson's run of T-65273 at the same simulated time gets the same run ID and proposal digest
every time. A lapse is written once per run and digest (a unique index), and ``reset`` used to
keep the lapse rows of the runs it deleted, so the repeated lesson's run counted the earlier
run's lapse as its own and never showed as lapsed. A deleted run's lapses now go with it
(SQLite: in the delete's transaction; PostgreSQL: migration 16's trigger on ``runs``), and a
lapse is written only for a run saved and waiting."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from core.api.home import Home
from core.engine.watch import sweep_lapses
from core.ground.clock import FixedClock
from core.ground.data import load_policy
from core.stores.postgres import schema
from core.stores.postgres.database import forget

from pg import fresh_schema, team_store

FRIDAY = "2026-10-09T17:00:00-04:00"
RUN = "T-65273-agent-chat-small-1"
WEEK = timedelta(seconds=load_policy().evidence_max_age_s)


def _lapses(home: Home) -> list[tuple[str, str]]:
    return [(e["run_id"], e["detail"]) for e in home.store.queue_events(0) if e["kind"] == "lapse"]


def _lapsed_once(home: Home, waiting: int = 1) -> str:
    """Run the lesson's T-65273, then read the waiting queue a week and a day later (as the app
    and ``resolver runs`` do): the lapses of the ``waiting`` runs are written. Returns the digest."""
    digest = home.run("T-65273").proposal.digest  # type: ignore[union-attr]
    later = home.clock.now() + WEEK + timedelta(days=1)
    assert sweep_lapses(home.store, later, load_policy(), home.store.page("waiting_approval")) == waiting
    return digest


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("how", ["reset", "reset --run", "prune"])
def test_the_lesson_repeated_after_a_reset_lapses_again(tmp_path, backend, how):
    with team_store(backend) as url:
        home = Home(tmp_path / "home", clock=FixedClock(FRIDAY), store=url)
        first = _lapsed_once(home)
        assert _lapses(home) == [(RUN, first)]
        if how == "reset":
            home.reset()
        elif how == "reset --run":
            home.delete(RUN, audited=True)
        else:  # prune deletes through home.delete too; here the finished run is gone the same way
            home.store.delete(RUN)
        assert _lapses(home) == []  # gone with the run; the request event stays
        assert [e["kind"] for e in home.store.queue_events(0)] == ["request"]
        again = _lapsed_once(home)
        assert again == first  # the same run ID and digest: the case that never lapsed
        assert _lapses(home) == [(RUN, first)]
        assert [e["kind"] for e in home.store.queue_events(0)] == ["request", "request", "lapse"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_lapse_found_for_a_run_deleted_meanwhile_is_not_written(tmp_path, backend):
    """A sweep loads a run, someone deletes it, the sweep writes its lapse: the row would outlive
    the run and be counted as the next run of that ID's."""
    with team_store(backend) as url:
        home = Home(tmp_path / "home", clock=FixedClock(FRIDAY), store=url)
        state = home.run("T-65273")
        home.delete(RUN)
        assert home.store.record_lapse(RUN, state.proposal.digest, FRIDAY, "team_lead") is False  # type: ignore[union-attr]
        assert _lapses(home) == []
        home.run("T-65273")
        assert home.store.record_lapse(RUN, state.proposal.digest, FRIDAY, "team_lead") is True  # type: ignore[union-attr]
        assert home.store.record_lapse(RUN, state.proposal.digest, FRIDAY, "team_lead") is False  # type: ignore[union-attr]


def test_a_schema_15_team_store_gets_migration_16_and_its_waiting_run_is_approved(tmp_path, monkeypatch):
    """The release before (migrations up to 15) left the first lesson's lapse behind its reset,
    with another run waiting over the upgrade: migration 16 drops the lapse of the deleted run,
    the waiting run resumes and is approved, and the lesson run again lapses."""
    other = "T-90104-agent_structured-chat-strong-1"
    with fresh_schema() as url:
        before = tuple(m for m in schema.MIGRATIONS if m[0] <= 15)
        with monkeypatch.context() as m:
            m.setattr(schema, "MIGRATIONS", before)
            m.setattr(schema, "ALL", frozenset(v for v, _, _ in before))
            m.setattr(schema, "LATEST", 15)
            home = Home(tmp_path / "old", clock=FixedClock(FRIDAY), store=url)
            digest = _lapsed_once(home)
            home.reset()
            assert _lapses(home) == [(RUN, digest)]  # the bug: the deleted run's lapse stayed
            assert home.run("T-90104", variant="agent_structured", model="chat-strong").run_id == other
            forget(url)
        home = Home(tmp_path / "new", clock=FixedClock(FRIDAY), store=url)
        with psycopg.connect(url) as conn:
            assert {r[0] for r in conn.execute("SELECT version FROM resolver_migrations")} == set(schema.ALL)
            config = conn.execute(
                "SELECT proconfig FROM pg_proc WHERE proname = 'resolver_queue_event_forget' "
                "AND pronamespace = current_schema()::regnamespace"
            ).fetchone()
        assert config is not None and config[0][0].startswith("search_path=")
        assert _lapses(home) == []
        assert _lapsed_once(home, waiting=2) == digest  # the lesson again: its own lapse this time
        assert (RUN, digest) in _lapses(home) and len(_lapses(home)) == 2
        resumed = home.resume(other)
        assert (resumed.kind, resumed.state.status) == ("request", "waiting_approval")
        done = home.approve(other, "agent")
        assert done.status == "done" and all(op.status == "done" for op in done.operations)
        home.reset()
        assert _lapses(home) == []
