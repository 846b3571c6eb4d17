"""A refreshed request is a new ``request`` event: SQLite store format 6 and PostgreSQL migration
13 add the trigger on the refresh's audit row. A home of format 5
(``tests/fixtures/home_store_format_5``) and a team store of schema 11
(``tests/fixtures/team_store_schema_11``), both made by the release before with a run waiting, a
run interrupted after its first step and a claim, are upgraded when a home opens them: the claim
and the events stay, a refresh writes one request event, the interrupted run resumes and the
waiting run is approved."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import psycopg
from core.api.home import Home
from core.ground.clock import FixedClock
from core.stores.postgres.schema import ALL
from core.stores.sqlite.files import STORE_FORMAT

from pg import fresh_schema, restore_frozen

FIXTURES = Path(__file__).parent.parent / "fixtures"
FRIDAY = "2026-10-09T17:00:00-04:00"
WAITING = "T-65273-agent-chat-small-1"
INTERRUPTED = "T-65273-interrupted"


def _after_the_upgrade(home: Home) -> None:
    """What both back-ends must show once upgraded: the old events and claim, a refresh's request
    event, the interrupted run resumed and the waiting one approved."""
    assert [e["kind"] for e in home.store.queue_events(0)] == ["request", "claim"]
    assert home.store.run_marks()[WAITING]["claimed_by"] == "Grace"
    digest = home.refresh(WAITING, "team_lead", "Tomás").proposal.digest
    events = home.store.queue_events(0)
    assert [(e["kind"], e["name"], e["detail"]) for e in events[2:]] == [("request", "Tomás", digest)]
    resumed = home.resume(INTERRUPTED)
    assert (resumed.kind, resumed.state.status) == ("continued", "waiting_approval")
    done = home.approve(WAITING, "team_lead", "Tomás")
    assert done.status == "done" and all(op.status == "done" for op in done.operations)


def test_a_format_5_home_is_upgraded_to_6_and_its_waiting_run_is_refreshed_and_approved(tmp_path):
    root = tmp_path / "home"
    shutil.copytree(FIXTURES / "home_store_format_5", root, ignore=shutil.ignore_patterns("README.md"))
    for path in root.iterdir():
        path.chmod(0o600)
    with sqlite3.connect(root / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 5
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'queue_event_refresh'").fetchone()
    conn.close()
    home = Home(root, clock=FixedClock(FRIDAY))
    with sqlite3.connect(root / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_FORMAT == 7
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'queue_event_refresh'").fetchone()
    conn.close()
    _after_the_upgrade(home)


def test_a_schema_11_team_store_gets_migration_13_and_its_waiting_run_is_refreshed_and_approved(tmp_path):
    frozen = FIXTURES / "team_store_schema_11"
    had = {row["version"] for row in json.loads((frozen / "tables.json").read_text(encoding="utf-8"))["resolver_migrations"]}
    assert max(had) == 11 and 13 in ALL
    with fresh_schema() as url:
        restore_frozen(url, frozen, had, verbatim=True)
        home = Home(tmp_path / "home", clock=FixedClock(FRIDAY), store=url)
        with psycopg.connect(url) as conn:
            assert {r[0] for r in conn.execute("SELECT version FROM resolver_migrations")} == set(ALL)
        _after_the_upgrade(home)
