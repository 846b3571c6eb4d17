"""The agent is untrusted: a proposal is checked against the ticket, the evidence and the world
before anyone may approve it (:mod:`core.engine.proposal_rules`).

The inputs come from public bug reports a trial turned into proposals for T-65273 (a double
charge of 119.00 CAD on order LK-507862 of customer C-1001):

- a negative line (claims systems where a negative discount line made a total fall below an
  approval limit): ``119.00`` and ``-100.00`` on PAY-507862-2 summed to 19.00, the request said
  "agent or above", and an agent's approval paid 119.00;
- another customer's order (helpdesks that refunded a foreign booking): 9.95 CAD of LK-793996
  (customer C-1003's), and an agent's approval paid it.

Each is replayed through a home recording (``recordings/T-65273.json`` in the data format
``resolver record`` writes, ``resolver run T-65273 --repeat 4``) and through a live route on the
local chat-completions stub; each ends with nothing paid and one sentence naming the rule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from core.api.home import Home
from core.cli import main
from core.engine.proposal_rules import RULES, ShippedFacts, TicketFacts, WorldFacts, problems, shape_problems, standing_problems
from core.ground.data import FinalTurn, PolicyData, ToolCallTurn, load_policy, load_recordings, task_ids
from core.ground.state import Evidence, ProposedAction, TaskState
from pydantic import TypeAdapter

from helpers import stub_route

ACTIONS = TypeAdapter(list[ProposedAction])
T65273 = TicketFacts(order_id="LK-507862", customer_id="C-1001")
T90103 = TicketFacts(order_id="LK-640436", customer_id="C-1002")


def refund(amount: str, payment: str = "PAY-507862-2", order: str = "LK-507862") -> dict[str, Any]:
    return {"type": "request_refund", "order_id": order, "amount": amount, "currency": "CAD", "reason_code": "RFD-DOUBLE",
            "payment_id": payment}  # fmt: skip


def reship(sku: str = "PLANTER", quantity: int = 1, order: str = "LK-640436") -> dict[str, Any]:
    return {"type": "reship_item", "order_id": order, "sku": sku, "quantity": quantity}


def label(sku: str = "PLANTER", order: str = "LK-640436") -> dict[str, Any]:
    return {"type": "create_return_label", "order_id": order, "sku": sku, "reason": "damaged", "return_shipping": "free"}


NEGATIVE_LINE = [refund("119.00"), refund("-100.00")]
FOREIGN_ORDER = [refund("9.95", "PAY-793996-1", "LK-793996")]


def broken(actions: list[dict[str, Any]], home: Home, ticket: TicketFacts = T65273, **kw: Any) -> list[str]:
    """The rules ``actions`` break against ``home``'s world now, as ``RULE:line``."""
    return [f"{b.rule}:{b.line}" for b in problems(ACTIONS.validate_python(actions), ticket, WorldFacts(home.world()), **kw)]


# -- each rule -----------------------------------------------------------------------------------


def test_the_seed_proposals_break_no_rule(home):
    assert broken([refund("119.00")], home) == []
    assert broken([reship(), label()], home, T90103) == []
    assert broken([refund("9.95", "PAY-793996-1", "LK-793996")], home, TicketFacts("LK-793996", "C-1003")) == []


def test_p2_a_negative_or_zero_amount_moves_nothing(home):
    assert broken(NEGATIVE_LINE, home) == ["P2:2"]
    assert broken([refund("0.00")], home) == ["P2:1"]
    found = problems(ACTIONS.validate_python(NEGATIVE_LINE), T65273, WorldFacts(home.world()))
    assert (
        found[0].text()
        == "P2 (amounts and quantities that move something): line 2 refunds -100.00 CAD; a refund's amount must be more than 0."
    )


def test_p2_and_p1_on_the_raw_actions_before_they_are_read():
    said = shape_problems([refund("-1"), reship(quantity=0), reship(quantity=1.5), {"type": "cancel_order"}, "refund"])  # type: ignore[list-item]
    assert [(b.rule, b.line) for b in said] == [("P2", 1), ("P2", 2), ("P2", 3), ("P1", 4), ("P1", 5)]
    assert "cancel_order" in said[3].sentence and "request_refund, reship_item, create_return_label" in said[3].sentence


def test_p1_a_kind_the_policy_has_no_limit_for(home):
    policy = load_policy()
    narrow = policy.model_copy(update={"approval_limits": [x for x in policy.approval_limits if x.action != "reship_item"]})
    assert broken([reship()], home, T90103, policy=narrow) == ["P1:1"]
    assert [b.rule for b in shape_problems([reship()], narrow)] == ["P1"]


def test_p3_another_customers_order_is_never_the_tickets(home):
    assert broken(FOREIGN_ORDER, home) == ["P3:1"]
    sentence = problems(ACTIONS.validate_python(FOREIGN_ORDER), T65273, WorldFacts(home.world()))[0].sentence
    assert sentence == "line 1 (request_refund) names order LK-793996 (customer C-1003's), not the ticket's order LK-507862."
    assert broken([refund("1.00", "PAY-000000-1", "LK-000000")], home) == ["P3:1"]  # an order the world does not hold


def test_p3_with_the_policy_allowing_it_another_order_of_the_same_customer_read_by_the_agent(home):
    """C-1001, T-65273's customer, has a second order, LK-630000: with the policy's
    ``other_orders_of_customer`` it may be named when the agent's ``get_order`` showed it as
    C-1001's and the world agrees; never another customer's, whatever the evidence says."""
    policy = load_policy().model_copy(update={"other_orders_of_customer": True})
    world = home.world()
    actions = ACTIONS.validate_python([refund("20.00", "PAY-630000-1", "LK-630000")])
    seen = Evidence(step=1, tool="get_order", args={"order_id": "LK-630000"}, result=world.get_order("LK-630000"))
    facts = WorldFacts(world)
    assert problems(actions, T65273, facts, [seen], policy) == []
    assert [b.rule for b in problems(actions, T65273, facts, [], policy)] == ["P3"]  # not read by the agent
    assert [b.rule for b in problems(actions, T65273, facts, [seen])] == ["P3"]  # the shipped policy does not allow it
    foreign = ACTIONS.validate_python(FOREIGN_ORDER)
    lie = Evidence(step=1, tool="get_order", args={"order_id": "LK-793996"}, result={"customer_id": "C-1001"})
    assert [b.rule for b in problems(foreign, T65273, facts, [lie], policy)] == ["P3"]  # the world says C-1003's


def test_p4_a_payment_of_another_order(home):
    assert broken([refund("9.95", "PAY-793996-1")], home) == ["P4:1"]


def test_p5_never_more_than_the_payment_captured_nor_a_payment_refunded_in_full(home):
    assert broken([refund("119.01")], home) == ["P5:1"]
    home.manual_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    assert broken([refund("119.00")], home) == ["P5:1"]
    assert broken([refund("119.00", "PAY-507862-1")], home) == []  # the other charge is still captured
    # at a decision only the facts that never change are asked: the weekend's refund is the service's to refuse
    assert standing_problems(ACTIONS.validate_python([refund("119.00")]), T65273, WorldFacts(home.world())) == []


def test_p6_lines_on_one_payment_together(home):
    assert broken([refund("60.00"), refund("60.00")], home) == ["P6:1"]
    assert broken([refund("119.00"), refund("119.00")], home) == ["P6:1"]  # the same line twice
    assert broken([refund("60.00"), refund("59.00")], home) == []
    assert broken([refund("119.00"), refund("119.00", "PAY-507862-1")], home) == []  # two payments, each within its own
    home.manual_refund("manual-1", "LK-507862", "100.00", "RFD-DOUBLE", "PAY-507862-2")
    assert broken([refund("19.01")], home) == ["P6:1"]
    assert broken([refund("19.00")], home) == []
    sentence = problems(ACTIONS.validate_python([refund("60.00"), refund("60.00")]), T65273, ShippedFacts())[0].sentence
    assert sentence == "lines 1, 2 together refund 120.00 CAD of payment PAY-507862-2, which can refund 119.00 CAD."


def test_p7_items_and_quantities_of_the_order(home):
    assert broken([reship("MUG-SET")], home, T90103) == ["P7:1"]
    assert broken([label("MUG-SET")], home, T90103) == ["P7:1"]
    assert broken([reship(quantity=2)], home, T90103) == ["P7:1"]
    assert broken([reship(), reship()], home, T90103) == ["P7:1"]  # summed over the proposal
    assert broken([label(), label()], home, T90103) == ["P7:1"]


def test_p8_a_reply_or_a_hand_over_that_lists_actions_is_refused_rather_than_guessed():
    from core.engine.proposal_rules import outcome_problems

    assert [b.rule for b in outcome_problems("reply", [refund("119.00")])] == ["P8"]
    assert [b.rule for b in outcome_problems("hand_to_person", [refund("119.00")])] == ["P8"]
    assert outcome_problems("reply", []) == [] and outcome_problems("resolve", [refund("119.00")]) == []


def test_p1_an_action_without_its_fields_is_one_sentence_per_line():
    from core.engine.proposal_rules import unreadable

    said = unreadable(
        [{**refund("1.00"), "payment_id": None}, {"type": "reship_item", "order_id": "LK-640436", "sku": "PLANTER"}]
    )
    assert [(b.rule, b.line) for b in said] == [("P1", 1), ("P1", 2)]
    assert said[0].sentence.startswith("line 1 is not a whole request_refund: payment_id: ")
    assert said[1].sentence == "line 2 is not a whole reship_item: quantity: Field required."


@pytest.mark.parametrize(
    ("finish", "rule"),
    [
        ({"outcome": "reply", "actions": [refund("119.00")]}, "P8"),
        ({"outcome": "resolve", "actions": [{**refund("119.00"), "reason_code": 7}]}, "P1"),
        ({"outcome": "resolve", "actions": [reship("LINEN-THROW", 10**17, "LK-507862")]}, "P7"),
    ],
)
def test_a_finish_that_cannot_be_offered_is_handed_to_a_person_and_saved(home, stub, finish, rule):
    """A reply that lists a refund, an action without its fields, a reship of 10**17 items (the
    queue's amount would not fit its column): each is handed to a person with its rule, and the
    run is saved (no store error from the model's numbers)."""
    final = stub.turns[-1]
    assert isinstance(final, FinalTurn)
    stub.turns[-1] = final.model_copy(update=finish)
    state = home.run("T-65273", live=stub_route(stub))
    saved = home.store.load(state.run_id)
    assert saved.status == "handed_to_person" and saved.proposal is not None and saved.proposal.actions == []
    assert [e.data["rule"] for e in saved.events if e.kind == "rule_broken"] == [rule]


def test_p0_a_ticket_whose_facts_disagree_refuses_every_action_rather_than_guess(home):
    assert broken([refund("119.00")], home, TicketFacts("LK-507862", "C-1003")) == ["P0:0"]
    assert broken([refund("119.00")], home, TicketFacts("LK-000001", "C-1001")) == ["P0:0"]


def test_every_rule_has_a_title_and_every_sentence_is_one_line_of_safe_text(home):
    hostile = "LK-1\n  Who may approve: agent or above\x1b[31m"
    said = problems(
        ACTIONS.validate_python([refund("5.00", hostile, hostile), reship(hostile, 1, "LK-640436")]),
        T90103,
        WorldFacts(home.world()),
    )
    assert said and all(b.rule in RULES for b in said)
    for b in said:
        assert "\n" not in b.text() and "\x1b" not in b.text() and len(b.text()) < 400


# -- the inputs, through a home recording and a live route ---------------------------------------


def _recording_with(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """T-65273's chat-small recording 1 with its final turn's actions replaced, in the data format."""
    run = next(r for r in load_recordings("T-65273").runs if (r.variant, r.model, r.repeat) == ("agent", "chat-small", 1))
    turns = []
    for t in run.turns:
        body = t.model_dump(mode="json", exclude={"call_id", "arguments"} if isinstance(t, ToolCallTurn) else set())
        body["usage"] = {"tokens_in": t.usage.tokens_in, "tokens_out": t.usage.tokens_out}
        turns.append(body)
    turns[-1]["actions"] = actions
    return turns


def _home_recording(root: Path, *runs: list[dict[str, Any]]) -> None:
    (root / "recordings").mkdir(parents=True, exist_ok=True)
    body = {"task_id": "T-65273", "runs": [
        {"variant": "agent", "model": "chat-small", "repeat": 4 + n, "turns": _recording_with(a)} for n, a in enumerate(runs)
    ]}  # fmt: skip
    (root / "recordings" / "T-65273.json").write_text(json.dumps(body))


@pytest.mark.parametrize(("actions", "rule", "words"), [(NEGATIVE_LINE, "P2", "line 2 refunds -100.00 CAD"),
                                                       (FOREIGN_ORDER, "P3", "names order LK-793996 (customer C-1003's)")])  # fmt: skip
def test_a_home_recording_that_breaks_a_rule_is_handed_to_a_person_and_nothing_is_paid(tmp_path, capsys, actions, rule, words):
    root = tmp_path / "home"
    Home(root)
    _home_recording(root, actions)
    assert main(["run", "T-65273", "--repeat", "4", "--home", str(root)]) == 0
    out = capsys.readouterr().out
    assert "Outcome: hand_to_person (rule W7)" in out and "Status: handed_to_person" in out
    said = [line for line in out.splitlines() if line.startswith(f"  {rule} (")]
    assert len(said) == 1 and words in said[0], out
    assert "Approval needed" not in out and "Who may approve" not in out and "Next:" not in out
    run = "T-65273-agent-chat-small-1"
    assert main(["approve", run, "--as", "agent", "--home", str(root)]) == 4  # not waiting: nothing to decide
    assert main(["approve", run, "--as", "grace", "--home", str(root)]) == 4
    capsys.readouterr()
    assert main(["changes", "--json", "--home", str(root)]) == 0
    assert json.loads(capsys.readouterr().out) == []  # nothing written
    assert main(["trace", run, "--home", str(root)]) == 0
    trace = capsys.readouterr().out
    assert trace.count("rule_broken") == 1 and rule in trace and "proposal_refused" in trace
    assert main(["show", run, "--home", str(root)]) == 0
    shown = capsys.readouterr().out
    assert f"  {rule} (" in shown and "Handed to a person: the agent's proposal was not offered for approval" in shown
    state = Home(root).store.load(run)
    assert state.status == "handed_to_person" and state.proposal is not None and state.proposal.actions == []
    assert state.operations == [] and state.approval is None


@pytest.mark.parametrize(("actions", "rule"), [(NEGATIVE_LINE, "P2"), (FOREIGN_ORDER, "P3")])
def test_a_live_route_whose_finish_breaks_a_rule_is_handed_to_a_person(home, stub, actions, rule):
    final = stub.turns[-1]
    assert isinstance(final, FinalTurn)
    stub.turns[-1] = final.model_copy(update={"actions": actions})
    state = home.run("T-65273", live=stub_route(stub))
    assert (state.status, stub.calls, state.usage.model_calls) == ("handed_to_person", 3, 3)
    rules = [e.data["rule"] for e in state.events if e.kind == "rule_broken"]
    assert rules == [rule]
    assert home.queue.counts().get("waiting_approval", 0) == 0
    from core.ground.errors import ApprovalRefused

    with pytest.raises(ApprovalRefused, match="not waiting_approval"):
        home.approve(state.run_id, "grace", "Grace")
    assert home.world().changes() == []


# -- a proposal already waiting (saved before the rules, or written by hand) ---------------------


def _waiting_with(home: Home, actions: list[dict[str, Any]]) -> TaskState:
    """T-65273 run to waiting, then its proposal's actions rewritten in the store (as a proposal
    saved by an earlier release, or written into the store by hand, would be)."""
    state = home.run("T-65273")
    assert state.status == "waiting_approval" and state.proposal is not None
    from core.engine.preconditions import bind, first_read

    forged = state.proposal.model_copy(update={"actions": ACTIONS.validate_python(actions)})
    state.proposal = bind(state, forged, first_read(state))
    home.store.save(state)
    return home.store.load(state.run_id)


@pytest.mark.parametrize(
    ("actions", "rule"), [(NEGATIVE_LINE, "P2"), ([refund("119.00"), refund("119.00")], "P6"), (FOREIGN_ORDER, "P3")]
)
def test_a_waiting_proposal_that_breaks_a_rule_is_never_approved(home, actions, rule):
    from core.api.views import Approver
    from core.ground.errors import ApprovalRefused

    state = _waiting_with(home, actions)
    with pytest.raises(ApprovalRefused, match=f"breaks the proposal rules, so it may not be approved: {rule} "):
        home.approve(state.run_id, "grace", "Grace")
    assert home.world().changes() == []
    rows = [r for r in home.queue.audit(state.run_id) if r["decision"] == "refused:rules"]
    assert len(rows) == 1 and rule in rows[0]["detail"]
    assert home.store.load(state.run_id).status == "waiting_approval"  # a person may still reject it
    detail = home.queue.run(state.run_id, Approver("grace"))
    assert detail.offers["approve"] is not None and rule in str(detail.offers["approve"])
    assert detail.offers["reject"] is None


def test_the_executor_refuses_an_executing_run_whose_proposal_breaks_a_rule(home):
    """An approval from before the rules, of a foreign order's refund, is not carried out: the
    executor asks the rules before the first write and hands the run to a person."""
    from core.engine.approval import approve

    state = _waiting_with(home, [refund("119.00")])
    approve(home.store, home.approval_key(), state.run_id, "grace", "Grace", clock=home.clock)
    executing = home.store.load(state.run_id)
    assert executing.status == "executing"
    # the proposal and its operations rewritten after the approval, as a store written by hand would hold them
    from core.engine.approval import plan_operations, sign

    executing.proposal = executing.proposal.model_copy(update={"actions": ACTIONS.validate_python(FOREIGN_ORDER)})  # type: ignore[union-attr]
    a = executing.approval
    assert a is not None
    digest = executing.proposal.digest  # type: ignore[union-attr]
    fingerprint = a.world.fingerprint if a.world else None
    signature = sign(home.approval_key(), executing.run_uid, digest, a.role, a.name, a.at, fingerprint)
    executing.approval = a.model_copy(update={"digest": digest, "signature": signature})
    executing.operations = plan_operations(executing)
    home.store.save(executing)
    done = home.execute(state.run_id)
    assert done.status == "handed_to_person"
    assert any(
        "breaks the proposal rules" in e.message and "P3" in e.message for e in done.events if e.kind == "handed_to_person"
    )
    assert home.world().changes() == []


# -- the shipped data ------------------------------------------------------------------------------


def test_every_shipped_recording_still_proposes_what_it_proposed(tmp_path, clock):
    """Every recorded run of every ticket, run through the product: the shipped data breaks no
    rule, so each proposes exactly its recording's final actions and ends as it did before the
    rules (waiting for a resolve with actions, done for a reply, handed for a hand-over)."""
    home = Home(tmp_path / "h", clock=clock)
    seen = 0
    for task in task_ids():
        for rec in load_recordings(task).runs:
            final = rec.turns[-1]
            assert isinstance(final, FinalTurn)
            state = home.run(task, rec.variant, rec.model, rec.repeat, max_steps=len(rec.turns))
            assert not [e for e in state.events if e.kind in ("rule_broken", "proposal_refused")], (state.run_id, state.proposal)
            assert state.proposal is not None
            assert [a.model_dump(mode="json") for a in state.proposal.actions] == ACTIONS.dump_python(
                ACTIONS.validate_python(final.actions), mode="json"
            ), state.run_id
            want = {
                "resolve": "waiting_approval" if final.actions else "done",
                "reply": "done",
                "hand_to_person": "handed_to_person",
            }
            assert state.status == want[final.outcome], state.run_id
            seen += 1
    assert seen == 184


def test_the_shipped_policy_does_not_allow_other_orders():
    assert load_policy().other_orders_of_customer is False
    assert "other_orders_of_customer" in PolicyData.model_fields
