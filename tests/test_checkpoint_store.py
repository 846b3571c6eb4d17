"""The checkpoint store: the whole state survives the process, and bad rows fail loudly."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from core.clock import FixedClock
from core.data import load_task
from core.errors import CorruptCheckpoint, RunNotFound, StaleCheckpoint, UnsupportedSchemaVersion
from core.runner import new_state
from core.state import SCHEMA_VERSION, TaskState

from helpers import store_at

FIXTURES = Path(__file__).parent / "fixtures"


def _raw_update(path: Path, run_id: str, state_json: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET state = ? WHERE run_id = ?", (state_json, run_id))


def test_the_whole_state_round_trips_through_a_new_store_object(home, tmp_path):
    state = home.run("T-65273")
    state.plan = ["look up the order", "propose"]
    state.faults_seen = ["request_refund:timeout:1"]
    home.store.save(state)
    back = store_at(home.store.path).load(state.run_id)
    assert back.model_dump() == state.model_dump()
    assert back.usage.tokens_in == 7155
    assert home.store.latest("T-65273").run_id == state.run_id


def test_save_stamps_updated_at_from_the_clock_and_lists_by_summary(home, clock):
    home.run("T-90103", repeat=1)
    clock.sleep(3600)
    home.run("T-65273")
    rows = home.store.page("waiting_approval")
    assert [r.run_id for r in rows] == ["T-90103-agent-chat-small-1", "T-65273-agent-chat-small-1"]  # oldest first
    top = rows[1]
    assert (top.customer, top.total_amount, top.required_role, top.order_id) == (
        "Maya Thompson",
        "119.00",
        "team_lead",
        "LK-507862",
    )
    assert home.store.page(search="LK-507862")[0].run_id == top.run_id
    assert home.store.counts() == {"waiting_approval": 2}


def test_two_writers_holding_the_same_version_one_saves_one_is_told(home):
    state = home.run("T-65273")
    first = home.store.load(state.run_id)
    second = home.store.load(state.run_id)
    first.plan = ["mine"]
    home.store.save(first)
    second.plan = ["theirs"]
    with pytest.raises(StaleCheckpoint, match="changed since this copy was read"):
        home.store.save(second)
    assert home.store.load(state.run_id).plan == ["mine"]


def test_a_corrupt_row_and_an_unknown_schema_give_their_own_errors_while_others_list(home):
    good = home.run("T-65273")
    bad = home.run("T-90103", repeat=1)
    future = home.run("T-90104", "agent_structured", "chat-strong", 1)
    _raw_update(home.store.path, bad.run_id, '{"run_id": "T-90103-agent-chat-small-1", "status": ')
    raw = json.loads(future.model_dump_json())
    raw["schema_version"] = 99
    _raw_update(home.store.path, future.run_id, json.dumps(raw))

    with pytest.raises(CorruptCheckpoint, match="is corrupt"):
        home.store.load(bad.run_id)
    with pytest.raises(UnsupportedSchemaVersion, match="schema version 99"):
        home.store.load(future.run_id)
    rows = {r.run_id: r for r in home.store.page()}
    assert set(rows) == {good.run_id, bad.run_id, future.run_id}
    assert rows[bad.run_id].state_ok is False and rows[good.run_id].state_ok is True
    assert home.store.load(good.run_id).status == "waiting_approval"


def test_a_row_that_is_json_but_not_a_task_state_is_corrupt(home):
    state = home.run("T-65273")
    _raw_update(home.store.path, state.run_id, json.dumps({"schema_version": SCHEMA_VERSION, "run_id": state.run_id}))
    with pytest.raises(CorruptCheckpoint, match="does not match the TaskState schema"):
        home.store.load(state.run_id)


def test_an_unknown_run_says_how_to_list_runs(home):
    with pytest.raises(RunNotFound, match=r"No run nope\. Run `resolver runs`"):
        home.store.load("nope")


def test_the_frozen_v1_checkpoint_still_loads(home):
    raw = (FIXTURES / "task_state_v1.json").read_text(encoding="utf-8")
    assert json.loads(raw)["schema_version"] == 1
    with sqlite3.connect(home.store.path) as conn:
        conn.execute(
            "INSERT INTO runs (run_id, task_id, status, updated_at, version, state) VALUES (?, ?, ?, ?, ?, ?)",
            ("T-90103-agent-chat-small-1", "T-90103", "waiting_approval", "2026-10-09T17:00:00-04:00", 1, raw),
        )
    state = home.store.load("T-90103-agent-chat-small-1")
    assert state.schema_version == SCHEMA_VERSION
    assert state.reply_channel == "email"
    assert len(state.proposal.actions) == 2
    home.store.save(state)  # saved again as the current version
    assert (
        json.loads(sqlite3.connect(home.store.path).execute("SELECT state FROM runs").fetchone()[0])["schema_version"]
        == SCHEMA_VERSION
    )


def test_events_are_appended_in_the_save_transaction(home):
    state = home.run("T-65273")
    kinds = [e["kind"] for e in home.store.events(state.run_id)]
    assert kinds == ["created", "tool_call", "tool_call", "outcome"]
    assert [e["seq"] for e in home.store.events(state.run_id)] == [1, 2, 3, 4]


def test_the_audit_table_refuses_updates_and_deletes(home):
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    home.approve(state.run_id, "agent", "Amira")
    assert [a["decision"] for a in home.store.audit(state.run_id)] == ["approve"]
    with sqlite3.connect(home.store.path) as conn:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE audit SET role = 'grace'")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM audit")


def test_new_state_round_trips_with_a_log(tmp_path):
    clock = FixedClock("2026-10-09T17:00:00-04:00")
    store = store_at(tmp_path / "runs.sqlite", clock)
    s = new_state(load_task("T-90103"), "agent", "chat-small", "r-1", clock)
    s.log("note", "hello", x=1)
    store.save(s)
    back = store_at(tmp_path / "runs.sqlite").load("r-1")
    assert back.model_dump() == s.model_dump()
    assert isinstance(back, TaskState) and back.created_at.utcoffset() is not None
