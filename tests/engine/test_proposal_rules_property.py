"""Nothing outside the proposal rules reaches ``waiting_approval``, whatever the model proposes.

Hypothesis generates a model's ``finish`` around the rules (signs, orders of the ticket, of the
customer and of others, payments of the order and of others, amounts at and around what was
captured, items on the order and off it, quantities, duplicate lines, sums), and the real runner
takes it through the real loop against the practice world, on SQLite and on a PostgreSQL team
store. An oracle written here from ``data/world.json`` (never the code under test) says whether
the proposal keeps every rule; the run waits for approval exactly when it does, and otherwise
is handed to a person with nothing planned.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from core.api.home import Home
from core.engine.runner import start_run
from core.ground.clock import FixedClock
from core.ground.data import FinalTurn, ToolCallTurn, TurnUsage
from core.ground.state import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import FRIDAY
from pg import fresh_schema

WORLD = json.loads((Path(__file__).resolve().parent.parent.parent / "data" / "world.json").read_text())
ORDERS = {o["order_id"]: o for o in WORLD["orders"]}
PAYMENTS = {p["payment_id"]: p for p in WORLD["payments"]}
SKUS = sorted({c["sku"] for c in WORLD["catalog"]})

TICKETS = {  # ticket -> (its order, its customer): one payment or two, one line or two, a quantity of 2
    "T-65273": ("LK-507862", "C-1001"),
    "T-41629": ("LK-599736", "C-1011"),
    "T-68913": ("LK-249865", "C-1026"),
    "T-90103": ("LK-640436", "C-1002"),
}
USAGE = TurnUsage(tokens_in=100, tokens_out=10)


class Scripted:
    """A model that answers a fixed list of turns by position (as the recorded model counts)."""

    def __init__(self, turns: list[ToolCallTurn | FinalTurn]) -> None:
        self.turns = turns

    def complete(self, messages: list[Message]) -> ToolCallTurn | FinalTurn:
        return self.turns[sum(1 for m in messages if m.role == "assistant")]


def _orders_of(customer: str) -> list[str]:
    return [o for o, v in ORDERS.items() if v["customer_id"] == customer]


@st.composite
def proposals(draw: Any, order: str, customer: str) -> list[dict[str, Any]]:
    """One to four actions around the rules for the ticket whose order is ``order``."""
    others = [o for o in _orders_of(customer) if o != order]
    foreign = ["LK-793996", "LK-531619", "LK-000000"]
    out = []
    for _ in range(draw(st.integers(1, 4))):
        on = draw(st.sampled_from([order] * 6 + others + foreign))
        kind = draw(st.sampled_from(["request_refund"] * 3 + ["reship_item", "create_return_label"]))
        if kind == "request_refund":
            pays = [p for p, v in PAYMENTS.items() if v["order_id"] == on]
            payment = draw(st.sampled_from([*pays, *pays, "PAY-793996-1", "PAY-000000-9"] if pays else ["PAY-793996-1"]))
            captured = Decimal(PAYMENTS[payment]["amount"]) if payment in PAYMENTS else Decimal("50.00")
            amount = draw(
                st.sampled_from(
                    [captured, captured / 2, captured + Decimal("0.01"), Decimal("0.00"), Decimal("-100.00"), Decimal("9.95")]
                )
            ).quantize(Decimal("0.01"))
            out.append({"type": kind, "order_id": on, "amount": str(amount), "currency": "CAD", "reason_code": "RFD",
                        "payment_id": payment})  # fmt: skip
        else:
            lines = [line["sku"] for line in ORDERS[on]["lines"]] if on in ORDERS else []
            sku = draw(st.sampled_from([*lines, *lines, *SKUS[:3]] if lines else SKUS[:3]))
            if kind == "reship_item":
                out.append({"type": kind, "order_id": on, "sku": sku, "quantity": draw(st.integers(1, 3))})
            else:
                out.append({"type": kind, "order_id": on, "sku": sku, "reason": "damaged", "return_shipping": "free"})
    return out


def keeps_the_rules(actions: list[dict[str, Any]], order: str) -> bool:
    """The oracle: every action on the ticket's order, a positive refund of one of its captured
    payments, the refunds of each payment within its amount together, items on the order,
    reships within what was ordered together, one label per item (a fresh practice world: nothing
    refunded yet)."""
    refunds: Counter[str] = Counter()
    shipped: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    ordered = {line["sku"]: line["quantity"] for line in ORDERS[order]["lines"]}
    for a in actions:
        if a["order_id"] != order:
            return False
        if a["type"] == "request_refund":
            pay = PAYMENTS.get(a["payment_id"])
            amount = Decimal(a["amount"])
            if pay is None or pay["order_id"] != order or pay["status"] != "captured" or amount <= 0:
                return False
            refunds[a["payment_id"]] += amount  # type: ignore[assignment]
        elif a["sku"] not in ordered:
            return False
        elif a["type"] == "reship_item":
            shipped[a["sku"]] += a["quantity"]
        else:
            labels[a["sku"]] += 1
    return (
        all(total <= Decimal(PAYMENTS[p]["amount"]) for p, total in refunds.items())
        and all(n <= ordered[s] for s, n in shipped.items())
        and all(n <= 1 for n in labels.values())
    )


def _check(home: Home, task: str, actions: list[dict[str, Any]]) -> None:
    order, _customer = TICKETS[task]
    turns: list[ToolCallTurn | FinalTurn] = [
        ToolCallTurn(tool="get_order", args={"order_id": order}, usage=USAGE),
        ToolCallTurn(tool="get_payments", args={"order_id": order}, usage=USAGE),
        FinalTurn(outcome="resolve", rule="W7", reason="generated", actions=actions, usage=USAGE),
    ]
    state = start_run(home.store, home.world_at, home.clock, task, pick=lambda s: Scripted(turns))
    saved = home.store.load(state.run_id)
    keeps = keeps_the_rules(actions, order)
    assert (saved.status == "waiting_approval") == keeps, (actions, saved.status, saved.proposal)
    if keeps:
        assert saved.proposal is not None and len(saved.proposal.actions) == len(actions)
    else:
        assert saved.status == "handed_to_person" and saved.operations == [] and saved.approval is None
        assert saved.proposal is not None and saved.proposal.actions == []
        assert [e for e in saved.events if e.kind == "rule_broken"], saved.events


def _property(home: Home, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
    @given(data=st.data())
    def check(data: Any) -> None:
        task = data.draw(st.sampled_from(sorted(TICKETS)))
        order, customer = TICKETS[task]
        _check(home, task, data.draw(proposals(order, customer)))

    check()


def test_nothing_outside_the_rules_waits_for_approval_on_sqlite(tmp_path):
    _property(Home(tmp_path / "h", clock=FixedClock(FRIDAY)), 300)


def test_nothing_outside_the_rules_waits_for_approval_on_a_team_store(tmp_path):
    with fresh_schema() as url:
        _property(Home(tmp_path / "h", clock=FixedClock(FRIDAY), store=url), 80)


@pytest.mark.parametrize("task", sorted(TICKETS))
def test_the_oracle_agrees_with_the_seed_proposals(task):
    """The oracle itself: one refund of the duplicate charge, the planter's reship and label."""
    order, _ = TICKETS[task]
    line = ORDERS[order]["lines"][0]["sku"]
    pay = next(p for p, v in PAYMENTS.items() if v["order_id"] == order)
    assert keeps_the_rules([{"type": "reship_item", "order_id": order, "sku": line, "quantity": 1}], order)
    assert keeps_the_rules([{"type": "request_refund", "order_id": order, "amount": "1.00", "payment_id": pay}], order)
    assert not keeps_the_rules([{"type": "request_refund", "order_id": order, "amount": "-1.00", "payment_id": pay}], order)
    assert not keeps_the_rules([{"type": "reship_item", "order_id": "LK-793996", "sku": line, "quantity": 1}], order)
