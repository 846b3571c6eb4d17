"""The run's unique identity: readable run IDs come back after a reset, run_uids never do;
operation IDs, signatures and audit rows are bound to the run_uid; runs saved by release 0.1.0 keep
their operation IDs and approvals (the frozen home in tests/fixtures/home_0_1_0)."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from core.api.home import Home
from core.engine.approval import plan_operations, verify
from core.ground.clock import FixedClock
from core.ground.errors import ApprovalRefused
from core.ground.identity import RandomRunUids, SeededRunUids, current, new_run_uid, using
from core.ground.state import SCHEMA_VERSION, migrate, operation_id

from helpers import MONDAY, T65273_RUN, T90104_RUN, copy_frozen_home

UID = re.compile(r"^[0-9a-f]{32}$")


def _world_rows(home: Home, table: str, where: str = "1", *args: str) -> int:
    with sqlite3.connect(home.world_path) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", args).fetchone()[0]


def test_a_run_reuses_its_readable_id_after_reset_all_but_never_its_run_uid(home):
    first = home.run("T-65273")
    home.reset(everything=True)
    again = home.run("T-65273")
    assert first.run_id == again.run_id == T65273_RUN
    assert UID.match(first.run_uid) and UID.match(again.run_uid)
    assert first.run_uid != again.run_uid
    assert home.store.load(T65273_RUN).run_uid == again.run_uid  # saved with the run
    assert home.store.events(T65273_RUN)[0]["data"]["run_uid"] == again.run_uid


def test_the_seeded_source_repeats_and_using_puts_the_previous_one_back():
    before = current()
    with using(SeededRunUids("test")) as source:
        a = [new_run_uid() for _ in range(3)]
        assert current() is source
    with using(SeededRunUids("test")):
        assert [new_run_uid() for _ in range(3)] == a
    assert len(set(a)) == 3 and all(UID.match(u) for u in a)
    assert current() is before and isinstance(before, RandomRunUids)
    with using(SeededRunUids("other")):
        assert new_run_uid() not in a


def test_seeded_runs_give_the_same_operation_ids_every_time(tmp_path):
    ids = []
    for n in (1, 2):
        with using(SeededRunUids("same")):
            home = Home(tmp_path / f"h{n}", clock=FixedClock(MONDAY))
            state = home.run("T-90104", "agent_structured", "chat-strong", 1)
            ids.append([op.operation_id for op in home.approve(state.run_id, "agent", "Amira").operations])
    assert ids[0] == ids[1]


def test_operation_ids_derive_from_the_run_uid_not_the_readable_id(home):
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    done = home.approve(state.run_id, "agent", "Amira")
    assert [op.operation_id for op in done.operations] == [
        operation_id(done.run_uid, op.index, op.action) for op in done.operations
    ]
    assert done.operations[0].operation_id != operation_id(done.run_id, 0, done.operations[0].action)


def test_an_old_decision_never_verifies_on_a_new_run_that_reuses_the_readable_id(home):
    old = home.run("T-90104", "agent_structured", "chat-strong", 1)
    old = home.approve(old.run_id, "agent", "Amira")
    assert old.status == "done" and verify(old, home.approval_key()) is None
    home.reset()  # the runs go, the practice world (and its register) stays
    new = home.run("T-90104", "agent_structured", "chat-strong", 1)
    assert new.run_id == old.run_id == T90104_RUN
    refunds = _world_rows(home, "refunds")

    # Someone copies Friday's approval and operations into the new run of the same ID.
    new.approval, new.operations, new.status = old.approval, old.operations, "executing"
    new.proposal = old.proposal  # and its proposal, bound to Friday's evidence time
    assert verify(new, home.approval_key()) is not None
    assert "signature does not verify" in (verify(new, home.approval_key()) or "")
    home.store.save(new)
    after = home.execute(new.run_id)
    assert after.status == "handed_to_person"
    assert "signature does not verify" in after.events[-1].message
    assert _world_rows(home, "refunds") == refunds  # nothing paid

    # The new run plans operation IDs of its own, so the register's old entries are never
    # mistaken for its writes; and approving it for real is refused before any write, because the
    # world records that a run of the ticket already refunded (one effect per ticket).
    home.reset()
    fresh = home.run("T-90104", "agent_structured", "chat-strong", 1)
    assert {op.operation_id for op in plan_operations(fresh)}.isdisjoint(op.operation_id for op in old.operations)
    with pytest.raises(ApprovalRefused, match="already refunded on LK-793996"):
        home.approve(fresh.run_id, "agent", "Amira")
    assert _world_rows(home, "refunds") == refunds


def test_every_decision_hands_the_store_its_run_uid_for_the_audit(home, monkeypatch):
    audits: list[dict] = []
    save = home.store.save

    def spy(state, *, audit=None, **lease):
        if audit is not None:
            audits.append(audit)
        return save(state, audit=audit, **lease)

    monkeypatch.setattr(home.store, "save", spy)
    a = home.run("T-90104", "agent_structured", "chat-strong", 1)
    home.approve(a.run_id, "agent", "Amira")
    b = home.run("T-10222", repeat=1)
    home.reject(b.run_id, "team_lead", "Not this way.", "Tomás")
    assert [(x["decision"], x["run_uid"]) for x in audits] == [
        ("approve", home.store.load(a.run_id).run_uid),
        ("reject", home.store.load(b.run_id).run_uid),
    ]


def test_a_v2_checkpoint_migrates_to_v3_with_its_run_id_as_run_uid():
    raw = {"schema_version": 2, "run_id": "T-1-agent-chat-small-1"}
    up = migrate(raw)
    assert up["schema_version"] == SCHEMA_VERSION == 7
    assert up["run_uid"] == "T-1-agent-chat-small-1"
    assert raw == {"schema_version": 2, "run_id": "T-1-agent-chat-small-1"}  # the input is left alone


def test_a_v3_checkpoint_without_run_uid_is_refused_as_corrupt(home):
    from core.ground.errors import CorruptCheckpoint

    state = home.run("T-65273")
    with sqlite3.connect(home.store.path) as conn:
        raw = json.loads(conn.execute("SELECT state FROM runs").fetchone()[0])
        raw.pop("run_uid")
        conn.execute("UPDATE runs SET state = ?", (json.dumps(raw),))
    with pytest.raises(CorruptCheckpoint, match="run_uid"):
        home.store.load(state.run_id)


# -- the frozen home of release 0.1.0 -------------------------------------------------------------


@pytest.fixture
def frozen(tmp_path) -> Home:
    """A copy of the 0.1.0 home (never the fixture itself), on Monday morning."""
    return Home(copy_frozen_home(tmp_path / "home_0_1_0"), clock=FixedClock(MONDAY))


def test_every_run_of_0_1_0_loads_with_its_run_id_as_run_uid(frozen):
    runs = {r.run_id for r in frozen.store.page()}
    assert runs == {T65273_RUN, "T-90103-agent-chat-small-1", T90104_RUN, "T-90104-agent_structured-chat-strong-2"}
    for run_id in runs:
        state = frozen.store.load(run_id)
        assert (state.schema_version, state.run_uid) == (SCHEMA_VERSION, run_id)


def test_the_0_1_0_approvals_still_verify_with_their_stored_operation_ids(frozen):
    for run_id, op_id in ((T90104_RUN, "550ac48b8b6eeead"), ("T-90104-agent_structured-chat-strong-2", "60f02750db887a88")):
        state = frozen.store.load(run_id)
        assert state.operations[0].operation_id == op_id
        assert verify(state, frozen.approval_key()) is None


def test_the_0_1_0_run_that_crashed_before_its_write_lapses_on_monday(frozen):
    """Its refund was saved pending with no call and nothing in the register, so on Monday its
    Friday approval has lapsed: back to waiting, the reason audited, nothing paid."""
    assert frozen.world().lookup_operation("550ac48b8b6eeead") is None
    lapsed = frozen.resume(T90104_RUN)
    assert lapsed.state.status == "waiting_approval" and lapsed.state.approval is None
    assert frozen.store.audit(T90104_RUN)[-1]["decision"] == "refused:expiry"
    assert _world_rows(frozen, "refunds", "operation_id = ?", "550ac48b8b6eeead") == 0


def test_the_0_1_0_run_that_crashed_before_its_write_pays_once_with_its_own_operation_id(tmp_path):
    # resumed within its approval's validity (approved Friday 17:00:01)
    frozen = Home(copy_frozen_home(tmp_path / "home_0_1_0"), clock=FixedClock("2026-10-09T17:30:00-04:00"))
    assert frozen.world().lookup_operation("550ac48b8b6eeead") is None
    done = frozen.resume(T90104_RUN)
    assert (done.kind, done.state.status) == ("executed", "done")
    op = done.state.operations[0]
    assert (op.operation_id, op.status, op.calls) == ("550ac48b8b6eeead", "done", 1)
    assert _world_rows(frozen, "refunds", "operation_id = ?", "550ac48b8b6eeead") == 1
    assert frozen.resume(T90104_RUN).kind == "final"  # and never again
    assert _world_rows(frozen, "refunds", "operation_id = ?", "550ac48b8b6eeead") == 1


def test_the_0_1_0_run_that_crashed_after_its_write_is_reconciled_and_never_pays_twice(frozen):
    run_id = "T-90104-agent_structured-chat-strong-2"
    refunds = _world_rows(frozen, "refunds")
    assert frozen.world().lookup_operation("60f02750db887a88")["result"]["refund_id"] == "RF-002D0EF2"
    done = frozen.resume(run_id)
    assert done.state.status == "done"
    op = done.state.operations[0]
    assert (op.operation_id, op.status, op.result["refund_id"]) == ("60f02750db887a88", "done", "RF-002D0EF2")
    assert _world_rows(frozen, "refunds") == refunds  # found in the register, not called again
    assert any(e.kind == "reconciled" for e in done.state.events)


def test_a_0_1_0_waiting_run_is_approved_with_ids_from_its_readable_id(frozen):
    state = frozen.approve(T65273_RUN, "grace", "Grace")
    assert state.status == "done"
    assert state.run_uid == T65273_RUN
    assert state.operations[0].operation_id == operation_id(T65273_RUN, 0, state.operations[0].action)
