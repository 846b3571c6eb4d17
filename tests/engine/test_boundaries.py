"""Nothing paid twice on a boundary, nothing kept from an old state.

- Reconcile trusts what the register records, not only the operation ID: an entry whose
  kind, order, amount, payment or recipient differ from the planned write is not this operation.
- "Since" is decided by the world's own order of events (the register's number, in commit
  order), never by the clock's resolution; for evidence saved before, the same second counts.
- An execution has started only once a service call was attempted; a pending operation
  with no call lapses with its approval.

Every test counts what the practice world holds (refunds, reshipments, replies), real SQLite.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from core.api.home import Home
from core.engine.executor import SimulatedCrash
from core.engine.preconditions import drift
from core.ground.clock import FixedClock, parse_time

from helpers import FRIDAY, T65273_RUN, T90104_RUN, run_process

FROZEN_BEFORE_SEQ = Path(__file__).parent.parent / "fixtures" / "home_before_register_seq"
"""A home saved by main before the register numbered its operations (frozen: see its README)."""


def _count(root: Path, table: str, where: str = "1", *args: str) -> int:
    with sqlite3.connect(root / "larkfield.sqlite") as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", args).fetchone()[0]


def _crashed_before_write(home: Home) -> str:
    """T-90104 approved by an agent, stopped just before its refund: the pending operation's ID."""
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    with pytest.raises(SimulatedCrash):
        home.approve(state.run_id, "agent", "Amira", interrupt="before-write")
    op = home.store.load(T90104_RUN).operations[0]
    assert (op.status, op.calls) == ("pending", 0)
    return op.operation_id


# -- reconcile trusts an ID, not what was written
# ----------------------------------------------------


def test_a_manual_refund_under_the_pending_operations_id_is_not_that_operation(proc):
    """A refund by hand under the pending operation's ID, as a person types it, each command a new
    process."""
    assert proc("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong").returncode == 0
    crashed = proc("approve", T90104_RUN, "--as", "agent", "--interrupt", "before-write")
    assert crashed.returncode == 3, crashed.stderr
    shown = json.loads(proc("show", T90104_RUN, "--json").stdout)
    found = re.search(r"request_refund LK-793996: pending \(operation ([0-9a-f]{16}), 0 call\(s\)\)", shown["operations"][0])
    assert found, shown["operations"]
    op_id = found.group(1)
    assert proc("manual-refund", op_id, "LK-793996", "1.00", "RFD-GOODWILL", "PAY-793996-1").returncode == 0
    resumed = proc("resume", T90104_RUN)
    assert _count(proc.home, "refunds") == 1 and _count(proc.home, "replies") == 0  # nothing more written
    assert resumed.returncode == 5, (resumed.stdout, resumed.stderr)  # handed to a person
    assert "Status: handed_to_person" in resumed.stdout
    said = resumed.stdout
    assert "request_refund 1.00 CAD of PAY-793996-1 on LK-793996 (RFD-GOODWILL)" in said  # what the register holds
    assert "request_refund 9.95 CAD of PAY-793996-1 on LK-793996 (RFD-LATE)" in said  # what was approved
    assert "Traceback" not in resumed.stderr
    root = proc.home
    assert [r[0] for r in sqlite3.connect(root / "larkfield.sqlite").execute("SELECT amount FROM refunds")] == ["1.00"]
    assert _count(root, "replies") == 0  # nothing more written
    assert proc("resume", T90104_RUN).returncode in (0, 5)  # and never later
    assert _count(root, "refunds") == 1 and _count(root, "replies") == 0


@pytest.mark.parametrize(
    "foreign",
    [
        pytest.param(("refund", "LK-793996", "9.95", "RFD-LATE", "PAY-507862-1"), id="another-payment"),
        pytest.param(("refund", "LK-507862", "9.95", "RFD-LATE", "PAY-507862-1"), id="another-order"),
        pytest.param(("refund", "LK-793996", "5.00", "RFD-LATE", "PAY-793996-1"), id="another-amount"),
        pytest.param(("reply", "LK-793996", "C-1003", "", ""), id="another-kind"),
    ],
)
def test_a_register_entry_that_differs_in_any_field_hands_the_run_to_a_person(home, foreign):
    op_id = _crashed_before_write(home)
    kind, order, a, b, c = foreign
    world = home.world("someone")
    if kind == "refund":
        try:
            world.request_refund(op_id, order, a, b, c)
        except Exception:  # the service refused the odd refund: write the entry as a raw row
            with sqlite3.connect(home.world_path) as conn:
                conn.execute(
                    "INSERT INTO operations (operation_id, service, args, result, at, actor, seq) "
                    "VALUES (?, 'request_refund', ?, '{}', ?, 'someone', (SELECT COALESCE(MAX(seq), 0) + 1 FROM operations))",
                    (op_id, json.dumps({"order_id": order, "amount": a, "reason_code": b, "payment_id": c}), FRIDAY),
                )
    else:
        world.send_reply(op_id, order, a, "Hello")
    refunds, replies = _count(home.root, "refunds"), _count(home.root, "replies")
    state = home.resume(T90104_RUN).state
    assert (_count(home.root, "refunds"), _count(home.root, "replies")) == (refunds, replies)
    assert _count(home.root, "refunds", "payment_id = 'PAY-793996-1' AND amount = '9.95'") == 0
    assert state.status == "handed_to_person"
    assert state.operations[0].status == "failed" and "is not this operation" in (state.operations[0].error or "")


def test_a_reply_entry_to_another_recipient_under_the_replys_id_is_not_sent_again(home):
    """The reply's ID used by hand for another customer: the executor never marks the reply sent
    from it, and sends nothing more."""
    _crashed_before_write(home)
    reply_id = home.store.load(T90104_RUN).operations[1].operation_id
    home.world("someone").send_reply(reply_id, "LK-793996", "C-1001", "Hello")
    state = home.resume(T90104_RUN).state
    assert state.status == "handed_to_person"
    assert _count(home.root, "replies") == 1 and _count(home.root, "replies", "customer_id = 'C-1003'") == 0
    assert state.operations[1].status == "failed"


def test_the_same_write_under_the_same_id_is_still_reconciled_once(home):
    """The crash just after the write: the register's entry is this operation, no second call."""
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    with pytest.raises(SimulatedCrash):
        home.approve(state.run_id, "agent", "Amira", interrupt="after-write")
    done = home.resume(T90104_RUN).state
    assert done.status == "done" and done.operations[0].calls == 1
    assert (_count(home.root, "refunds"), _count(home.root, "replies")) == (1, 1)


# -- "since" decided on whole seconds
# ------------------------------------------------------------------


def test_a_refund_by_hand_in_the_same_second_as_the_evidence_counts_as_since(home):
    """The clock stands at Friday 17:00:00: the agent reads T-65273's payments and, in the same
    second, a person refunds the order's other charge by hand. Only "since" can stop the agent's
    refund of PAY-507862-2."""
    home.run("T-65273")
    assert home.clock.now() == parse_time(FRIDAY)
    home.manual_refund("phone-call-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-1")
    state = home.store.load(T65273_RUN)
    assert state.proposal is not None and state.proposal.evidence_at == parse_time(FRIDAY)
    shown = drift(state, home.world()).effects
    decided = home.approve(T65273_RUN, "grace", "Grace")
    assert _count(home.root, "refunds", "order_id = 'LK-507862'") == 1  # the phone call's, only
    assert _count(home.root, "replies") == 0
    assert decided.status == "handed_to_person"
    assert "another refund of LK-507862 was made since the evidence was read" in (decided.operations[0].error or "")
    assert all(ev.seq == 0 for ev in state.evidence)  # the register's number as it was read
    assert any("RF-7ABFCB81" in e for e in shown)  # the request showed it before the approval


def test_a_refund_by_hand_just_before_the_evidence_in_the_same_second_does_not_count(home):
    """The other side of the boundary: written before the agent read the payments (same
    second), the refund is in the evidence itself; approving pays the other charge once."""
    home.manual_refund("phone-call-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-1")
    home.run("T-65273")
    state = home.store.load(T65273_RUN)
    assert all(ev.seq == 1 for ev in state.evidence)
    assert drift(state, home.world()).effects == []
    assert home.approve(T65273_RUN, "grace", "Grace").status == "done"
    assert _count(home.root, "refunds", "order_id = 'LK-507862'") == 2  # one per charge


def test_a_reship_by_hand_in_the_same_second_counts_as_since(home):
    """The whole kind: every "none since" (here a reshipment of the same item)."""
    home.run("T-90103", repeat=1)
    home.world("someone").reship_item("by-hand-1", "LK-640436", "PLANTER", 1)
    state = home.approve("T-90103-agent-chat-small-1", "agent", "Amira")
    assert _count(home.root, "reshipments") == 1 and _count(home.root, "return_labels") == 0
    assert state.status == "handed_to_person"


def test_the_register_numbers_entries_in_commit_order(home):
    world = home.world("someone")
    assert world.register_seq() == 0
    world.request_refund("a", "LK-507862", "1.00", "RFD-DOUBLE", "PAY-507862-1")
    world.send_reply("b", "LK-507862", "C-1001", "Hello")
    with sqlite3.connect(home.world_path) as conn:
        assert conn.execute("SELECT operation_id, seq FROM operations ORDER BY seq").fetchall() == [("a", 1), ("b", 2)]
    assert world.register_seq() == 2


def _frozen_before_seq(tmp_path: Path, at: str) -> Home:
    root = tmp_path / "home"
    shutil.copytree(FROZEN_BEFORE_SEQ, root)
    (root / "approval.key").chmod(0o600)
    for f in root.iterdir():
        f.chmod(0o600)
    return Home(root, clock=FixedClock(at))


def test_evidence_saved_before_the_change_counts_the_same_second_as_since(tmp_path):
    """A proposal saved by main before the register numbered its operations (since as a time) waits
    over the upgrade; the phone call in its evidence's second hands it to a person."""
    home = _frozen_before_seq(tmp_path, "2026-10-09T17:00:10-04:00")
    with sqlite3.connect(home.world_path) as conn:  # the register got its numbers, in its order
        assert conn.execute("SELECT operation_id, seq FROM operations").fetchall() == [("phone-call-1", 1)]
    state = home.store.load(T65273_RUN)
    assert state.proposal is not None and [p.since_seq for p in state.proposal.preconditions] == [None, None, None]
    assert state.proposal.digest == state.proposal.digest  # unchanged payload: the old digest still approves
    decided = home.approve(T65273_RUN, "grace", "Grace")
    assert _count(home.root, "refunds", "order_id = 'LK-507862'") == 1
    assert decided.status == "handed_to_person"


def test_a_refreshed_old_proposal_gets_register_numbers(tmp_path):
    home = _frozen_before_seq(tmp_path, "2026-10-09T17:00:10-04:00")
    home.refresh(T65273_RUN)
    state = home.store.load(T65273_RUN)
    assert state.proposal is not None
    assert {p.since_seq for p in state.proposal.preconditions if p.kind == "none_since"} == {1}
    assert home.approve(T65273_RUN, "grace", "Grace").status == "done"  # the world as read again
    assert _count(home.root, "refunds", "order_id = 'LK-507862'") == 2


# -- an approval "started" that never called anything
# --------------------------------------------------


def test_a_crash_before_the_write_resumed_30_days_later_lapses(proc):
    assert proc("clock", "set", FRIDAY).returncode == 0
    proc("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")
    assert proc("approve", T90104_RUN, "--as", "agent", "--interrupt", "before-write").returncode == 3
    assert proc("clock", "set", "2026-11-08T17:00:00-05:00").returncode == 0
    resumed = proc("resume", T90104_RUN)
    assert (_count(proc.home, "refunds"), _count(proc.home, "replies"), _count(proc.home, "operations")) == (0, 0, 0)
    assert resumed.returncode == 0, resumed.stderr
    assert "executing -> waiting approval" in resumed.stdout and "lapsed" in resumed.stdout
    audit = json.loads(proc("audit", T90104_RUN, "--json").stdout)
    last = audit[-1] if isinstance(audit, list) else audit["rows"][-1]
    assert last["decision"] == "refused:expiry" and "no service called" in last["detail"]
    assert json.loads(proc("show", T90104_RUN, "--json").stdout)["status"] == "waiting_approval"


def test_a_crash_before_the_write_resumed_within_the_approvals_validity_pays_once(proc):
    assert proc("clock", "set", FRIDAY).returncode == 0
    proc("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")
    assert proc("approve", T90104_RUN, "--as", "agent", "--interrupt", "before-write").returncode == 3
    assert proc("clock", "set", "2026-10-09T17:50:00-04:00").returncode == 0
    resumed = proc("resume", T90104_RUN)
    assert resumed.returncode == 0, resumed.stderr
    assert re.search(r"request_refund LK-793996: done \(operation [0-9a-f]{16}, 1 call\(s\)\)", resumed.stdout)
    assert (_count(proc.home, "refunds"), _count(proc.home, "replies")) == (1, 1)


def test_an_attempted_call_is_a_start_even_when_the_service_failed_transiently(home):
    """A call attempted (counted before it is made) starts the execution: after it the clock no
    longer cuts it off, and the remaining write is still guarded by its preconditions."""
    _crashed_before_write(home)
    state = home.store.load(T90104_RUN)
    state.operations[0].calls = 1  # the attempt counted just before a call that ended the process
    home.store.save(state)
    home.clock.advance(timedelta(days=30))  # type: ignore[attr-defined]
    done = home.resume(T90104_RUN).state
    assert done.status == "done" and (_count(home.root, "refunds"), _count(home.root, "replies")) == (1, 1)


def test_the_frozen_pending_operation_with_no_call_lapses_after_the_upgrade(tmp_path):
    home = _frozen_before_seq(tmp_path, "2026-11-08T17:00:00-05:00")
    state = home.resume(T90104_RUN).state
    assert _count(home.root, "refunds", "order_id = 'LK-793996'") == 0
    assert state.status == "waiting_approval" and state.approval is None
    assert home.store.audit(T90104_RUN)[-1]["decision"] == "refused:expiry"


def test_the_frozen_pending_operation_resumed_within_its_validity_pays_once(tmp_path):
    home = _frozen_before_seq(tmp_path, "2026-10-09T17:30:00-04:00")
    assert home.resume(T90104_RUN).state.status == "done"
    assert _count(home.root, "refunds", "order_id = 'LK-793996'") == 1


def test_the_frozen_world_is_migrated_by_a_new_process(tmp_path):
    root = _frozen_before_seq(tmp_path, FRIDAY).root
    out = run_process(root, "changes")
    assert out.returncode == 0 and "RF-7ABFCB81" in out.stdout


def test_a_loser_whose_world_moved_because_the_winner_wrote_is_told_who_won(tmp_path, monkeypatch):
    """A finding of the PostgreSQL race rounds: of 700 approvers who lost a race, one was told "The
    world changed while you read" because the winner's refund was already written when it ran the
    lookups again. It is a lost race: the sentence says who won."""
    from core.api.home import Home
    from core.engine import preconditions
    from core.ground.errors import ApprovalRefused

    home = Home(tmp_path / "home")
    run = home.run("T-65273").run_id
    seen = home.queue.look(home.store.load(run))
    real = preconditions.look
    won: list[str] = []

    def look(state, world):
        if not won:  # the loser runs its lookups again: the winner has just approved and paid
            won.append("racing")
            won.append(home.approve(run, "grace", "Grace").status)
        return real(state, world)

    monkeypatch.setattr(preconditions, "look", look)
    with pytest.raises(ApprovalRefused, match="was already approved by Grace"):
        home.approve(run, "team_lead", "Tomás", seen=seen)
    assert won == ["racing", "done"]
    assert [r["decision"] for r in home.store.audit(run)] == ["approve"]  # no refused:world row for a lost race
