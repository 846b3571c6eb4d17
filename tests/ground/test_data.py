"""The practice world's data set: valid throughout, and the seeds' facts hold."""

from __future__ import annotations

from decimal import Decimal

import pytest
from core.contract.world import TOOL_ARGS
from core.engine.policy import proposal_role, who_may_approve
from core.ground.data import (
    FinalTurn,
    ToolCallTurn,
    load_policy,
    load_prices,
    load_recordings,
    load_task,
    load_world_data,
    task_ids,
)
from core.ground.state import ProposedAction, action_short
from core.models.pricing import cost_usd, show_usd
from pydantic import TypeAdapter

ACTIONS = TypeAdapter(list[ProposedAction])
WORLD = load_world_data()
ORDERS = {o.order_id: o for o in WORLD.orders}
PAYMENTS = {p.payment_id: p for p in WORLD.payments}
CUSTOMERS = {c.customer_id for c in WORLD.customers}
RULES = {r.rule_id for r in load_policy().rules}


def final(task_id: str, variant: str = "agent", model: str = "chat-small", repeat: int = 1) -> FinalTurn:
    run = next(r for r in load_recordings(task_id).runs if (r.variant, r.model, r.repeat) == (variant, model, repeat))
    return run.turns[-1]


def test_at_least_40_tickets_across_every_kind():
    kinds = {load_task(t).kind for t in task_ids()}
    assert len(task_ids()) >= 40
    assert {
        "damaged_item",
        "double_charge",
        "missing_item",
        "late_delivery",
        "wrong_item",
        "cancel_before_shipping",
        "address_change",
        "return_outside_window",
        "question",
        "chargeback_or_legal",
        "prompt_injection",
        "markup",
        "escape",
        "very_long",
        "not_english",
    } <= kinds


def test_untrusted_tickets_carry_what_the_app_must_survive():
    by_kind = {}
    for t in task_ids():
        by_kind.setdefault(load_task(t).kind, []).append(load_task(t).message)
    markup = " ".join(by_kind["markup"])
    assert "[/" in markup and "[bold red]URGENT" in markup and "[@click=app.quit]x[/]" in markup
    assert any("\x1b]0;" in m for m in by_kind["escape"])
    assert any(len(m) > 4000 for m in by_kind["very_long"])


@pytest.mark.parametrize("task_id", task_ids())
def test_every_ticket_is_valid_and_has_its_recordings(task_id):
    task = load_task(task_id)
    assert task.order_id in ORDERS and task.customer_id in CUSTOMERS
    assert ORDERS[task.order_id].customer_id == task.customer_id
    runs = {(r.variant, r.model, r.repeat): r for r in load_recordings(task_id).runs}
    assert {
        ("agent", "chat-small", 1),
        ("agent", "chat-small", 2),
        ("agent", "chat-small", 3),
        ("agent_structured", "chat-strong", 1),
    } <= set(runs)
    for run in runs.values():
        *calls, last = run.turns
        assert isinstance(last, FinalTurn) and all(isinstance(c, ToolCallTurn) for c in calls)
        for call in calls:
            assert set(call.args) == set(TOOL_ARGS[call.tool]), call
            value = next(iter(call.args.values()))
            assert value in ORDERS or value in CUSTOMERS or value in RULES, call
        assert last.rule in RULES
        actions = ACTIONS.validate_python(last.actions)
        assert bool(actions) == (last.outcome == "resolve")
        for action in actions:
            order = ORDERS[action.order_id]
            skus = {l.sku for l in order.lines}
            if action.type == "request_refund":
                pay = PAYMENTS[action.payment_id]
                assert pay.order_id == order.order_id and pay.status == "captured"
                assert Decimal("0") < action.amount <= pay.amount
            else:
                assert action.sku in skus


def test_t65273_is_the_double_charge_of_seed_000():
    task = load_task("T-65273")
    assert (task.kind, task.order_id) == ("double_charge", "LK-507862")
    assert ORDERS["LK-507862"].total == Decimal("119.00")
    assert PAYMENTS["PAY-507862-2"].amount == Decimal("119.00") and PAYMENTS["PAY-507862-2"].status == "captured"
    run = next(r for r in load_recordings("T-65273").runs if r.repeat == 1 and r.variant == "agent")
    assert [t.tool for t in run.turns[:-1]] == ["get_order", "get_payments"]
    last = final("T-65273")
    assert last.rule == "W7"
    actions = ACTIONS.validate_python(last.actions)
    assert [action_short(a) for a in actions] == ["request_refund LK-507862 119.00 CAD RFD-DOUBLE payment PAY-507862-2"]
    assert sum(t.usage.tokens_in for t in run.turns) == 7155
    assert sum(t.usage.tokens_out for t in run.turns) == 192
    assert show_usd(cost_usd("chat-small", 7155, 192)) == "US$0.00081"
    assert who_may_approve(proposal_role(actions)) == "team lead or above"


def test_t90103_repeat_1_reships_and_labels_repeat_2_forgets_the_label():
    one = [action_short(a) for a in ACTIONS.validate_python(final("T-90103", repeat=1).actions)]
    two = [action_short(a) for a in ACTIONS.validate_python(final("T-90103", repeat=2).actions)]
    assert load_task("T-90103").order_id == "LK-640436"
    assert final("T-90103", repeat=1).rule == "W5"
    assert one == [
        "reship_item LK-640436 PLANTER x 1",
        "create_return_label LK-640436 PLANTER reason damaged (return shipping: free)",
    ]
    assert two == ["reship_item LK-640436 PLANTER x 1"]


def test_t90104_refund_of_9_95_an_agent_may_approve():
    last = final("T-90104", "agent_structured", "chat-strong", 1)
    actions = ACTIONS.validate_python(last.actions)
    assert [(a.type, a.order_id, a.amount) for a in actions] == [("request_refund", "LK-793996", Decimal("9.95"))]
    assert proposal_role(actions) == "agent"


def test_exactly_11_tickets_get_a_different_proposal_in_their_chat_small_runs():
    differing = []
    for task_id in task_ids():
        outcomes = {
            (f.outcome, tuple(action_short(a) for a in ACTIONS.validate_python(f.actions)))
            for f in (final(task_id, repeat=n) for n in (1, 2, 3))
        }
        if len(outcomes) > 1:
            differing.append(task_id)
    assert len(differing) == 11
    assert "T-90103" in differing and "T-65273" not in differing


def test_price_table_and_policy_roles():
    prices = load_prices()
    assert prices["chat-small"].usd_per_million_in == Decimal("0.10")
    assert prices["chat-small"].usd_per_million_out == Decimal("0.50")
    assert {r.rule_id for r in load_policy().rules} >= {f"W{n}" for n in range(1, 11)}


def test_faults_cover_a_timeout_once_and_a_service_failing_twice():
    faults = {(f.service, f.kind, f.times) for t in task_ids() for f in load_task(t).faults}
    assert ("request_refund", "timeout", 1) in faults
    assert ("create_return_label", "unavailable", 2) in faults


def test_a_refund_split_into_lines_needs_the_role_of_their_sum():
    """Found in a trial of role separation: ten refunds of 23.80, each within an agent's 25.00,
    were approved by an agent and paid 238.00. A limit is for what one approval moves: the lines of
    one kind are summed (five lines of 23.80 are 119.00, a team lead's; ten are 238.00, still a
    team lead's under 250.00; eleven are 261.80, grace's)."""
    line = {"type": "request_refund", "order_id": "LK-507862", "amount": "23.80", "reason_code": "RFD-DOUBLE",
            "payment_id": "PAY-507862-2"}  # fmt: skip
    assert proposal_role(ACTIONS.validate_python([line])) == "agent"
    assert proposal_role(ACTIONS.validate_python([line] * 5)) == "team_lead"
    assert proposal_role(ACTIONS.validate_python([line] * 10)) == "team_lead"
    assert proposal_role(ACTIONS.validate_python([line] * 11)) == "grace"
    label = {"type": "create_return_label", "order_id": "LK-640436", "sku": "PLANTER", "reason": "damaged",
             "return_shipping": "free"}  # fmt: skip
    assert proposal_role(ACTIONS.validate_python([line, label, label])) == "agent"  # other kinds are not added in
