"""PostgreSQL migration 8: ``entries.checksum``. A practice team store of schema version 6
(``tests/fixtures/team_store_schema_6``, made by the release before) is upgraded when a home opens
it: its rows keep no checksum and are validated in full when read, its run waiting over the upgrade
is approved, its interrupted run resumes, and what is written after carries checksums."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from core.api.home import Home
from core.ground.clock import FixedClock
from core.stores.common import entry_checksum
from core.stores.postgres.schema import ALL

from pg import fresh_schema, restore_frozen

FROZEN = Path(__file__).parent.parent / "fixtures" / "team_store_schema_6"
FRIDAY = "2026-10-09T17:00:00-04:00"


@pytest.fixture
def url():
    with fresh_schema() as made:
        yield made


def _restore(url: str) -> None:
    """Make the frozen store's tables by the migrations it had applied and load its rows."""
    tables = json.loads((FROZEN / "tables.json").read_text(encoding="utf-8"))
    had = {row["version"] for row in tables["resolver_migrations"]}
    assert had == {1, 2, 3, 4, 6}
    restore_frozen(url, FROZEN, had)


def _entries(url: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT run_id, n, body, extra, checksum FROM entries ORDER BY run_id, n").fetchall()


def test_a_schema_6_team_store_gets_checksums_and_its_runs_resume_and_are_approved(url, tmp_path):
    _restore(url)
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY), store=url)
    with psycopg.connect(url) as conn:
        assert {r[0] for r in conn.execute("SELECT version FROM resolver_migrations")} == set(ALL)
    before = _entries(url)
    assert len(before) == 20 and all(r[4] is None for r in before)
    waiting = "T-65273-agent-chat-small-1"
    view, whole = home.store.load_view(waiting), home.store.load(waiting)
    assert view.proposal is not None and whole.proposal is not None
    assert view.proposal.digest == whole.proposal.digest
    resumed = home.resume("T-65273-interrupted")
    assert (resumed.kind, resumed.state.status) == ("continued", "waiting_approval")
    done = home.approve(waiting, "team_lead", "Grace")
    assert done.status == "done" and all(op.status == "done" for op in done.operations)
    after = _entries(url)
    new = [r for r in after if r[4] is not None]
    assert new and all(r[4] == entry_checksum(r[2], r[3]) for r in new)
    assert Home(tmp_path / "other", clock=FixedClock(FRIDAY), store=url).store.load(waiting).model_dump() == done.model_dump()
