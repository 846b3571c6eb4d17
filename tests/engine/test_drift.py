"""Approve against the world as it is now (drift, preconditions, one effect per ticket, expiry,
refresh, the approved proposal kept). Each of these promises is a test."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from core.api.home import Home
from core.api.homekind import init_home
from core.engine.approval import approve, verify
from core.engine.preconditions import drift
from core.engine.rulebook import Approver
from core.ground.clock import FixedClock, parse_time
from core.ground.errors import ApprovalRefused
from core.ground.state import TaskState, cad

from helpers import FRIDAY, MONDAY, T65273_RUN, T90104_RUN, copy_frozen_home, core_command

T90103_RUN = "T-90103-agent-chat-small-1"


def _count(home: Home, table: str, where: str = "1", *args: str) -> int:
    with sqlite3.connect(home.world_path) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", args).fetchone()[0]


def _decisions(home: Home, run_id: str) -> list[tuple[str, str]]:
    return [(a["decision"], a["detail"]) for a in home.store.audit(run_id)]


def _weekend_call(home: Home) -> None:
    """The colleague's refund by hand on Saturday 11:04 (through the world: a shop home refuses
    the lesson's `manual-refund` command, not a refund made at the till)."""
    home.clock.set(parse_time("2026-10-10T11:04:00-04:00"))  # type: ignore[attr-defined]
    home.world("manual").request_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    home.clock.set(parse_time(MONDAY))  # type: ignore[attr-defined]


GRACE_PASSPHRASE = "grace-passphrase"


@pytest.fixture
def shop(tmp_path: Path) -> Home:
    """A shop home whose owner Grace made the approvers registry: decisions here are made by named
    approvers with their keys, never by a claimed ``--as`` role."""
    root = tmp_path / "shop"
    init_home(root, shop=True)
    home = Home(root, clock=FixedClock(FRIDAY))
    home.registry().init("Grace", GRACE_PASSPHRASE, home.clock.now())
    return home


# -- the weekend refund ---------------------------------------------------------------------------


def test_mondays_request_names_the_weekend_refund_field_by_field(home):
    state = home.run("T-65273")
    _weekend_call(home)
    d = drift(home.store.load(state.run_id), home.world())
    assert "get_payments: payment PAY-507862-2: refunded: 0.00 then 119.00" in d.differences
    assert any("RF-4CFEAE8E" in e and "manual-1" in e and "Saturday 11:04" in e for e in d.effects)
    detail = home.queue.run(state.run_id, Approver("grace", "Grace"))
    text = "\n".join(detail.body)
    assert "What changed since the agent looked:" in text and "RF-4CFEAE8E" in text
    assert detail.decision is not None
    from core.api.views import approve_dialog

    dialog = "\n".join(approve_dialog(detail.decision, Approver("grace", "Grace")))
    assert "manual-1" in dialog and "Evidence read 2d 16h ago" in dialog


def test_in_a_shop_home_graces_approve_makes_no_refund_call(shop):
    state = shop.run("T-65273")
    _weekend_call(shop)
    detail = shop.queue.run(state.run_id, Approver("grace", "Grace"))
    assert detail.offers["approve"] is not None and "RF-4CFEAE8E" in detail.offers["approve"]
    with pytest.raises(ApprovalRefused, match=r"RF-4CFEAE8E|manual-1"):
        shop.approve(state.run_id, "grace", "Grace", signer=shop.unlock("Grace", GRACE_PASSPHRASE))
    after = shop.store.load(state.run_id)
    assert after.status == "waiting_approval" and after.operations == [] and after.approval is None
    assert _count(shop, "refunds", "payment_id = ?", "PAY-507862-2") == 1
    assert _count(shop, "operations") == 1  # the phone call only: no call was made for the run
    assert [d for d, _ in _decisions(shop, state.run_id)] == ["refused:precondition"]


def test_in_a_practice_home_approve_goes_on_to_the_write_and_prints_the_lessons_refusal(home):
    state = home.run("T-65273")
    _weekend_call(home)
    done = home.approve(state.run_id, "grace", "Grace")
    assert done.status == "handed_to_person"
    assert done.operations[0].error == "PAY-507862-2 is not a captured charge of LK-507862"  # the invariant first
    assert done.operations[1].status == "planned"  # nothing more written
    assert _count(home, "refunds", "payment_id = ?", "PAY-507862-2") == 1
    assert _count(home, "replies") == 0


# -- one effect per ticket -------------------------------------------------------------------------


def test_two_runs_of_t90104_approved_make_one_refund_and_one_reply(home):
    a = home.run("T-90104", "agent_structured", "chat-strong", 1)
    b = home.run("T-90104", "agent_structured", "chat-strong", 1)  # --repeat 1 twice
    assert home.approve(a.run_id, "agent", "Amira").status == "done"
    with pytest.raises(ApprovalRefused) as refused:
        home.approve(b.run_id, "agent", "Amira")
    assert f"{a.run_id} already refunded 9.95 on LK-793996 (RF-" in str(refused.value)
    assert _count(home, "refunds", "order_id = ?", "LK-793996") == 1
    assert _count(home, "replies", "order_id = ?", "LK-793996") == 1
    assert _decisions(home, b.run_id)[0][0] == "refused:duplicate"


def test_one_effect_per_ticket_holds_after_the_first_run_is_pruned(home):
    """A new user's finding: `prune` (or `reset --run`) deleted the done run, a new run of the
    ticket reused its readable ID, and its approval paid a second 9.95. The world's own records
    now keep the rule; nothing is written."""
    first = home.run("T-90104", "agent_structured", "chat-strong", 1)
    assert home.approve(first.run_id, "agent", "Amira").status == "done"
    home.delete(first.run_id)  # what prune does to a finished run
    again = home.run("T-90104", "agent_structured", "chat-strong", 1)
    assert again.run_id == first.run_id and again.run_uid != first.run_uid
    with pytest.raises(ApprovalRefused, match=rf"{first.run_id} already refunded on LK-793996 \(RF-"):
        home.approve(again.run_id, "agent", "Amira")
    assert _count(home, "refunds", "order_id = ?", "LK-793996") == 1
    assert home.store.load(again.run_id).status == "waiting_approval"


def test_a_run_of_the_ticket_that_is_executing_blocks_another(home):
    from core.engine.executor import SimulatedCrash

    a = home.run("T-90104", "agent_structured", "chat-strong", 1)
    b = home.run("T-90104", "agent_structured", "chat-strong", 1)  # --repeat 1 twice
    with pytest.raises(SimulatedCrash):
        home.approve(a.run_id, "agent", "Amira", interrupt="before-write")
    with pytest.raises(ApprovalRefused, match=f"{a.run_id} of the same ticket is executing"):
        home.approve(b.run_id, "agent", "Amira")


def test_t90103_runs_1_and_2_approved_make_one_reship(home):
    one = home.run("T-90103", repeat=1)
    two = home.run("T-90103", repeat=2)
    assert home.approve(one.run_id, "agent", "Amira").status == "done"
    with pytest.raises(ApprovalRefused, match="already reshipped"):
        home.approve(two.run_id, "agent", "Amira")
    assert _count(home, "reshipments", "order_id = ?", "LK-640436") == 1


def test_t90103_run_1_alone_is_done_its_own_reship_never_stops_its_own_label(home):
    one = home.run("T-90103", repeat=1)
    done = home.approve(one.run_id, "agent", "Amira")
    assert done.status == "done" and [op.status for op in done.operations] == ["done", "done", "done"]
    assert (_count(home, "reshipments"), _count(home, "return_labels"), _count(home, "replies")) == (1, 1, 1)


def test_a_write_whose_expected_state_changed_is_refused_with_what_changed(home):
    a = home.run("T-90104", "agent_structured", "chat-strong", 1)
    approve(home.store, home.approval_key(), a.run_id, "agent", "Amira", clock=home.clock)  # approved, not executed
    home.clock.advance(timedelta(minutes=5))
    home.world("manual").request_refund("manual-7", "LK-793996", "1.00", "GOODWILL", "PAY-793996-1")
    done = home.execute(a.run_id)
    assert done.status == "handed_to_person"
    assert "expected state does not hold: payment PAY-793996-1 changed" in (done.operations[0].error or "")
    assert _count(home, "refunds") == 1 and _count(home, "replies") == 0
    assert [d for d, _ in _decisions(home, a.run_id)] == ["approve", "refused:precondition"]


# -- expiry ------------------------------------------------------------------------------------------


def test_a_proposal_30_days_old_writes_nothing(home):
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    home.clock.advance(timedelta(days=30))
    with pytest.raises(ApprovalRefused, match=r"evidence .* is 30d 0h old.*resolver refresh"):
        home.approve(state.run_id, "agent", "Amira")
    assert _count(home, "operations") == 0
    assert _decisions(home, state.run_id)[0][0] == "refused:expiry"


def test_the_lessons_friday_to_monday_stays_approvable(home):
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    home.clock.set(parse_time(MONDAY) + timedelta(hours=3))
    assert home.approve(state.run_id, "agent", "Amira").status == "done"


def test_an_approval_that_lapsed_before_its_execution_started_writes_nothing_on_resume(home):
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    approve(home.store, home.approval_key(), state.run_id, "agent", "Amira", clock=home.clock)  # then the process died
    home.clock.advance(timedelta(hours=2))
    resumed = home.resume(state.run_id)
    assert resumed.state.status == "waiting_approval" and resumed.state.approval is None
    assert _count(home, "operations") == 0
    decision, detail = _decisions(home, state.run_id)[-1]
    assert decision == "refused:expiry" and "lapsed" in detail
    assert home.approve(state.run_id, "agent", "Amira").status == "done"  # a fresh decision


def test_an_execution_started_before_the_limit_finishes_after_it(home):
    """Started means a service call was attempted: the crash just after the refund's call finishes
    hours later; the crash just before it (no call) lapses, in tests/engine/test_boundaries.py."""
    from core.engine.executor import SimulatedCrash

    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    with pytest.raises(SimulatedCrash):
        home.approve(state.run_id, "agent", "Amira", interrupt="after-write")
    home.clock.advance(timedelta(hours=5))
    done = home.resume(state.run_id).state
    assert done.status == "done" and _count(home, "refunds") == 1 and _count(home, "replies") == 1


def test_a_pending_write_is_reconciled_before_its_preconditions_are_checked(home):
    from core.engine.executor import SimulatedCrash

    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    with pytest.raises(SimulatedCrash):
        home.approve(state.run_id, "agent", "Amira", interrupt="after-write")
    done = home.resume(state.run_id).state  # its own refund changed the payment: it must not trip it
    assert done.status == "done" and _count(home, "refunds") == 1
    assert any(e.kind == "reconciled" for e in done.events)


def test_killed_between_approve_and_execute_then_the_world_changes_nothing_is_written(home):
    state = home.run("T-65273")
    approve(home.store, home.approval_key(), state.run_id, "grace", "Grace", clock=home.clock)  # the process dies here
    home.world("manual").request_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    done = home.resume(state.run_id).state
    assert done.status == "handed_to_person"
    assert _count(home, "refunds") == 1 and _count(home, "replies") == 0
    assert "not a captured charge" in (done.operations[0].error or "")
    assert done.events[-1].kind == "handed_to_person"


# -- the digest covers every field an operation reads -----------------------------------------------


def test_the_digest_changes_when_a_precondition_changes(home):
    state = home.run("T-65273")
    p = state.proposal
    assert p is not None and p.preconditions
    edited = p.model_copy(
        update={"preconditions": [p.preconditions[0].model_copy(update={"refunded": cad("1.00")}), *p.preconditions[1:]]}
    )
    assert edited.digest != p.digest
    assert p.model_copy(update={"recipient": "C-9999"}).digest != p.digest


EDITS = {
    "amount": lambda s: setattr(s.proposal.actions[0], "amount", cad("19.95")),
    "payment": lambda s: setattr(s.proposal.actions[0], "payment_id", "PAY-793996-9"),
    "reply text": lambda s: setattr(s.proposal, "reply_draft", s.proposal.reply_draft + " P.S."),
    "recipient": lambda s: setattr(s.proposal, "recipient", "C-1001"),
}


@pytest.mark.parametrize("field", sorted(EDITS))
def test_an_edit_after_approval_executes_nothing_and_shows_approved_next_to_current(home, field):
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    state = approve(home.store, home.approval_key(), state.run_id, "agent", "Amira", clock=home.clock)
    EDITS[field](state)
    home.store.save(state)
    done = home.execute(state.run_id)
    assert done.status == "handed_to_person" and _count(home, "operations") == 0
    assert done.approval is not None and done.approval.proposal is not None
    body = "\n".join(home.queue.run(state.run_id, Approver("agent", "Amira")).body)
    assert "Approved next to current" in body


def test_an_edit_of_the_state_customer_and_the_planned_reply_together_sends_nothing(home):
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    state = approve(home.store, home.approval_key(), state.run_id, "agent", "Amira", clock=home.clock)
    state.customer_id = "C-1001"
    state.operations[-1].action.customer_id = "C-1001"  # type: ignore[union-attr]
    home.store.save(state)
    assert verify(state, home.approval_key()) == "the operations are not the ones the approved proposal plans"
    assert home.execute(state.run_id).status == "handed_to_person" and _count(home, "replies") == 0


def test_an_edit_of_an_item_after_approval_executes_nothing(home):
    state = home.run("T-90103", repeat=1)
    state = approve(home.store, home.approval_key(), state.run_id, "agent", "Amira", clock=home.clock)
    state.proposal.actions[0].sku = "OTHER"  # type: ignore[union-attr]
    home.store.save(state)
    assert home.execute(state.run_id).status == "handed_to_person" and _count(home, "operations") == 0


# -- refresh -------------------------------------------------------------------------------------------


def test_refresh_makes_a_new_version_with_a_new_digest_and_the_actions_as_recorded(home):
    state = home.run("T-65273")
    _weekend_call(home)
    fresh = home.refresh(state.run_id)
    assert fresh.proposal is not None and state.proposal is not None
    assert fresh.proposal.version == 2 and fresh.proposal.digest != state.proposal.digest
    assert fresh.proposal.actions == state.proposal.actions
    assert fresh.usage.model_calls == state.usage.model_calls  # no model call
    pay = next(c for c in fresh.proposal.preconditions if c.kind == "payment")
    assert (pay.status, pay.refunded) == ("refunded", cad("119.00"))
    assert not drift(fresh, home.world()).failing
    with pytest.raises(ApprovalRefused, match="digest"):
        home.approve(state.run_id, "grace", "Grace", digest=state.proposal.digest)  # the old digest is void
    # approving the refreshed proposal: the payment service still refuses the refund
    assert (
        home.approve(state.run_id, "grace", "Grace").operations[0].error == "PAY-507862-2 is not a captured charge of LK-507862"
    )


def test_refresh_on_the_command_line(cli):
    cli("clock", "set", FRIDAY)
    cli("run", "T-65273")
    code, out, _ = cli("refresh", T65273_RUN)
    assert code == 0 and "proposal version 2" in out


# -- the frozen home of release 0.1.0 -------------------------------------------------------------------


def test_a_waiting_run_of_0_1_0_is_approvable_after_the_upgrade(tmp_path):
    home = Home(copy_frozen_home(tmp_path / "h"), clock=FixedClock(MONDAY))
    state: TaskState = home.store.load(T90103_RUN)
    assert state.proposal is not None and state.proposal.evidence_at is None and not state.proposal.preconditions
    done = home.approve(T90103_RUN, "agent", "Amira")
    assert done.status == "done"
    assert done.approval is not None and done.approval.proposal == state.proposal


def test_a_v3_checkpoint_loads_unbound():
    import json

    from core.ground.state import SCHEMA_VERSION, migrate

    raw = json.loads((Path(__file__).parent.parent / "fixtures" / "task_state_v3.json").read_text())
    assert raw["schema_version"] == 3
    state = TaskState.model_validate(migrate(raw))
    assert state.schema_version == SCHEMA_VERSION == 7
    assert state.proposal is not None and state.proposal.preconditions == [] and state.proposal.recipient == ""
    # its digest is the one schema 3 computed: the same payload
    assert set(state.proposal.digest_payload()) == {"actions", "rule", "reply_draft"}


def test_t90104_run_ids_are_the_conftest_ones(home):
    assert home.run("T-90104", "agent_structured", "chat-strong", 1).run_id == T90104_RUN


@pytest.mark.parametrize(
    "now", ["2026-10-12T09:00:00-04:00", "2026-10-15T10:00:00-04:00", "2026-10-16T16:00:00-04:00", "2026-10-17T12:00:00-04:00"]
)
def test_the_demo_queue_is_made_relative_to_the_homes_clock_and_never_opens_expired(now):
    from core.ground.data import load_policy
    from core.trainer.demo import friday_before

    at = parse_time(now)
    start = friday_before(at)
    assert timedelta(hours=16) < at - start <= timedelta(days=4)
    assert (at - start).total_seconds() + 3600 < load_policy().evidence_max_age_s
    if now == MONDAY:
        assert start == parse_time("2026-10-09T16:30:00-04:00")  # the snapshots' Friday


def test_sigkill_between_approve_and_execute_then_a_world_change_then_resume_writes_nothing(tmp_path):
    import os
    import signal
    import subprocess

    root = tmp_path / "h"

    def resolver(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*core_command(env), *args, "--home", str(root)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env},
        )

    assert resolver("clock", "set", FRIDAY).returncode == 0
    assert resolver("run", "T-65273").returncode == 0
    killed = resolver("approve", T65273_RUN, "--as", "grace", "--name", "Grace", RESOLVER_KILL_AT="save:1")
    assert killed.returncode == -signal.SIGKILL
    home = Home(root)
    assert home.store.load(T65273_RUN).status == "executing" and _count(home, "operations") == 0
    assert resolver("manual-refund", "manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2").returncode == 0
    resumed = resolver("resume", T65273_RUN)
    assert "Status: handed_to_person" in resumed.stdout
    state = home.store.load(T65273_RUN)
    assert state.status == "handed_to_person" and "not a captured charge" in (state.operations[0].error or "")
    assert _count(home, "refunds") == 1 and _count(home, "replies") == 0
