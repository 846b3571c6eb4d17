"""A run whose checkpoint is flagged corrupt is counted apart, never as waiting, by triggers on the
counts table (no scan of the runs at read time)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from core.ground.errors import CorruptCheckpoint

from helpers import store_at

FIXTURE = Path(__file__).parent.parent / "fixtures" / "home_0_1_0"
T65273 = "T-65273-agent-chat-small-1"


def _corrupt(path: Path, run_id: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET state = '{\"broken' WHERE run_id = ?", (run_id,))


def test_a_corrupt_run_counts_as_corrupt_not_waiting(demo_home):
    before = demo_home.store.counts()
    assert "corrupt" not in before
    _corrupt(demo_home.store.path, T65273)
    after = store_at(demo_home.store.path).counts()
    assert after["waiting_approval"] == before["waiting_approval"] - 1
    assert after["corrupt"] == 1
    assert sum(after.values()) == sum(before.values())


def test_a_failed_load_flags_it_and_a_good_save_counts_it_again(demo_home):
    store = demo_home.store
    state = store.load(T65273)
    waiting = store.counts()["waiting_approval"]
    with sqlite3.connect(store.path) as conn:  # valid JSON that is not a checkpoint: only a load can tell
        conn.execute("UPDATE runs SET state = '[1]' WHERE run_id = ?", (T65273,))
    assert store.counts()["waiting_approval"] == waiting  # not yet known to be corrupt
    with pytest.raises(CorruptCheckpoint):
        store.load(T65273)
    assert store.counts()["waiting_approval"] == waiting - 1 and store.counts()["corrupt"] == 1
    store.save(state)  # the run saved whole again: counted under its status
    counts = store.counts()
    assert counts["waiting_approval"] == waiting and "corrupt" not in counts


def test_deleting_a_corrupt_run_forgets_it(demo_home):
    _corrupt(demo_home.store.path, T65273)
    store = store_at(demo_home.store.path)
    total = sum(store.counts().values())
    store.delete(T65273)
    counts = store.counts()
    assert "corrupt" not in counts and sum(counts.values()) == total - 1


def test_a_store_made_before_the_corrupt_counts_gets_them_without_a_repair_note(demo_home):
    _corrupt(demo_home.store.path, T65273)
    with sqlite3.connect(demo_home.store.path) as conn:
        for name in ("runs_corrupt_insert", "runs_corrupt_delete", "runs_corrupt_update"):
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DELETE FROM run_counts WHERE status LIKE 'corrupt:%'")
    store = store_at(demo_home.store.path)
    assert store.repairs == []
    assert store.counts()["corrupt"] == 1


def test_the_0_1_0_home_migrates_with_its_corrupt_rows_apart(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(FIXTURE, home)
    store = store_at(home / "runs.sqlite")
    with sqlite3.connect(home / "runs.sqlite") as conn:
        by_status = dict(conn.execute("SELECT status, COUNT(*) FROM runs WHERE state_ok = 1 GROUP BY status"))
        corrupt = conn.execute("SELECT COUNT(*) FROM runs WHERE state_ok = 0").fetchone()[0]
    expected = {**by_status, **({"corrupt": corrupt} if corrupt else {})}
    assert store.counts() == expected


def test_a_page_up_to_a_role_keeps_the_proposals_that_role_may_approve(demo_home):
    queue = demo_home.queue
    waiting = queue.page("waiting_approval", limit=500).rows
    agent = queue.page("waiting_approval", limit=500, max_role="agent").rows
    assert agent and {r.required_role for r in agent} == {"agent"}
    assert [r.run_id for r in agent] == [r.run_id for r in waiting if r.required_role == "agent"]
    first = queue.page("waiting_approval", limit=1, max_role="grace")
    second = queue.page("waiting_approval", limit=1, max_role="grace", after=first.next)
    assert [r.run_id for r in first.rows + second.rows] == [r.run_id for r in waiting[:2]]
