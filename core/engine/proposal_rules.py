"""The proposal rules: what the agent may propose at all, before anyone may approve it.

The model is untrusted input, like customer text: its ``finish`` says which orders, payments,
items and amounts to touch, and nothing binds those to the ticket unless something checks them.
Every guard after the proposal (the digest, the role needed, the preconditions, the signed
approval, the executor's checks) binds a write to what a person read; none of them asks whether
the proposal had any business naming that order in the first place. These rules do, for every
proposal from every model (recorded, a home's recording, a live route), before the run is
``waiting_approval``: a proposal that breaks one is never offered for approval; the run is handed
to a person with one sentence per broken rule, and nothing is written.

Each rule is checked against three sources: the ticket (its order and customer, as the run was
started with them), the evidence the agent read, and the practice world's records (orders,
their lines, payments, what has been refunded). The rules, with where each comes from:

- **P1, an action the policy knows, written whole**: each action's kind has an approval limit in
  the policy (``data/policy.json``'s ``approval_limits``; a kind nobody may approve is not
  proposed), and the action has its kind's fields, each of its type (a refund without its
  payment is not a refund).
- **P2, amounts and quantities that move something**: a refund's amount is strictly positive
  and a reship's quantity a whole number of at least 1. A negative line is how claims systems
  let a total fall below an approval limit (119.00 and -100.00 on one payment summed to 19.00,
  which an agent may approve; the 119.00 was paid).
- **P3, the ticket's order**: every action names the ticket's order. With the policy's
  ``other_orders_of_customer`` set, another order is allowed when the evidence the agent read
  shows it belongs to the ticket's customer and the world agrees (helpdesks have refunded a
  foreign booking: a refund of another customer's order was proposed for T-65273).
- **P4, a payment of its order**: a refund's payment is one the world records for that order.
- **P5, within what the payment captured**: a refund is at most the payment's captured amount,
  and the payment is not already refunded in full (a refund of more than was charged is what
  policy rule W1 forbids).
- **P6, lines within one payment together**: the refunds on one payment, added up, are at most
  what that payment can still refund (its amount less what the world records as refunded), so
  two lines (or one line twice) never ask for more than one charge holds.
- **P7, items of the order**: a reship's or return label's item (SKU) is on the order, a reship's
  quantity (summed over the proposal's reships of that item) at most what was ordered (policy
  rules W3, W5, W6: the same SKU and quantity), and at most one return label per item.
- **P8, an outcome that agrees with its actions**: a ``reply`` or a ``hand_to_person`` lists no
  action (policy rules W2 and W10: a reply only, no action proposed). The model saying "reply
  only" beside a refund is ambiguous; the rules refuse rather than guess which it meant.
- **P0, a ticket whose facts agree**: the ticket's order exists in the world and belongs to the
  ticket's customer. Where they disagree the rules refuse every action rather than guess which
  of the two is right.

P6 reads what the world holds now (refunds made since), so it is checked when the proposal is
made; at a decision and before a write only the rules whose facts never change are checked again
(:func:`standing_problems`: P0 to P5 with the captured amount, P6 against the captured amount,
P7), because a refund made by hand over the weekend is the payment service's to refuse at the
write (seed 000), not a reason to hide the request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from pydantic import TypeAdapter, ValidationError

from core.contract.world import UnknownTool
from core.ground.data import PolicyData, load_policy, load_world_data
from core.ground.safetext import one_line
from core.ground.state import Evidence, ProposedAction, RefundAction, ReshipAction, ReturnLabelAction

PROPOSED_KINDS = ("request_refund", "reship_item", "create_return_label")
"""The kinds of action the agent may propose (the reply is added by the executor, never proposed)."""

RULES: dict[str, str] = {
    "P0": "the ticket's facts agree",
    "P1": "an action the policy knows, written whole",
    "P2": "amounts and quantities that move something",
    "P3": "the ticket's order",
    "P4": "a payment of its order",
    "P5": "within what the payment captured",
    "P6": "lines within one payment together",
    "P7": "items of the order",
    "P8": "an outcome that agrees with its actions",
}
"""Each proposal rule's ID and title (see the module's docstring for what each checks and why)."""

_SHOWN = 40
"""How many characters of a value the model wrote a sentence quotes (an ID, an amount, a kind)."""


@dataclass(frozen=True)
class Broken:
    """One broken proposal rule: ``rule`` (``P1`` ... ``P7``, ``P0``), ``line`` (the action's
    number in the proposal, from 1; 0 for the whole proposal) and ``sentence``, one sentence that
    says what the action asks and what the ticket, the evidence or the world hold instead."""

    rule: str
    line: int
    sentence: str

    def text(self) -> str:
        """``P3 (the ticket's order): line 1 refunds order LK-793996 ...``: the rule, its title
        and the sentence, on one line."""
        return f"{self.rule} ({RULES[self.rule]}): {self.sentence}"


@dataclass(frozen=True)
class PaymentFacts:
    """A payment as the world records it: ``amount`` captured (CAD), ``refunded`` so far (CAD),
    ``status`` (``captured`` or ``refunded``)."""

    payment_id: str
    amount: Decimal
    refunded: Decimal
    status: str


@dataclass(frozen=True)
class OrderFacts:
    """An order as the world records it: its customer, ``lines`` (SKU -> quantity ordered) and
    ``payments`` by ID."""

    order_id: str
    customer_id: str
    lines: Mapping[str, int]
    payments: Mapping[str, PaymentFacts] = field(default_factory=dict)


class Facts(Protocol):
    """Where the rules read the world's records: the order ``order_id`` with its lines and
    payments, or None when the world has no such order."""

    def order(self, order_id: str) -> OrderFacts | None:
        """The order, or None."""
        ...


def _cad(value: Any) -> Decimal:
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return Decimal("0")


class WorldFacts:
    """:class:`Facts` read through the practice world's read-only tools (``get_order`` and
    ``get_payments`` of :class:`core.contract.world.World`), each order read once per check.

    Args:
        world: any object with ``get_order(order_id) -> dict`` and ``get_payments(order_id) ->
            list[dict]`` as the world's tools return them (``{"error": ...}`` for no order).
    """

    def __init__(self, world: Any) -> None:
        self.world = world
        self._seen: dict[str, OrderFacts | None] = {}

    def order(self, order_id: str) -> OrderFacts | None:
        """The order as the world holds it now, or None (the world has no such order)."""
        if order_id not in self._seen:
            self._seen[order_id] = self._read(order_id)
        return self._seen[order_id]

    def _read(self, order_id: str) -> OrderFacts | None:
        try:
            got = self.world.get_order(order_id)
        except UnknownTool:  # an ID that is not one (a line break, a control character): no such order
            return None
        if not isinstance(got, dict) or "error" in got or "customer_id" not in got:
            return None
        lines: dict[str, int] = {}
        for line in got.get("lines") or []:
            lines[str(line.get("sku"))] = lines.get(str(line.get("sku")), 0) + int(line.get("quantity") or 0)
        payments = {
            str(p.get("payment_id")): PaymentFacts(
                payment_id=str(p.get("payment_id")),
                amount=_cad(p.get("amount")),
                refunded=_cad(p.get("refunded", "0")),
                status=str(p.get("status", "")),
            )
            for p in self.world.get_payments(order_id)
            if isinstance(p, dict)
        }
        return OrderFacts(order_id=order_id, customer_id=str(got["customer_id"]), lines=lines, payments=payments)


class ShippedFacts:
    """:class:`Facts` from the practice world as shipped (``data/world.json``): the facts no
    write changes (an order's customer, its lines, its payments' captured amounts). What has
    been refunded since is not known here (``refunded`` is 0, ``status`` as shipped), so use
    these only for :func:`standing_problems`."""

    def order(self, order_id: str) -> OrderFacts | None:
        """The order as shipped, or None."""
        return _shipped_orders().get(order_id)


def _shipped_orders() -> dict[str, OrderFacts]:
    world = load_world_data()
    payments: dict[str, dict[str, PaymentFacts]] = {}
    for p in world.payments:
        payments.setdefault(p.order_id, {})[p.payment_id] = PaymentFacts(p.payment_id, p.amount, Decimal("0.00"), p.status)
    out = {}
    for o in world.orders:
        lines: dict[str, int] = {}
        for line in o.lines:
            lines[line.sku] = lines.get(line.sku, 0) + line.quantity
        out[o.order_id] = OrderFacts(o.order_id, o.customer_id, lines, payments.get(o.order_id, {}))
    return out


@dataclass(frozen=True)
class TicketFacts:
    """What the run was started with, from its ticket: ``order_id`` and ``customer_id``
    (``TaskState.order_id`` and ``customer_id``)."""

    order_id: str
    customer_id: str


def _v(value: Any) -> str:
    """A value the model wrote, as a sentence quotes it: one line, at most :data:`_SHOWN`
    characters (an ID or amount from the model never takes the shape of a line of its own)."""
    text = one_line(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def outcome_problems(outcome: str, raw: Sequence[Any]) -> list[Broken]:
    """P8: a ``reply`` or ``hand_to_person`` outcome with actions (``raw``, the model's ``finish``
    as given) is refused with one sentence; a ``resolve`` is checked by the other rules."""
    if outcome == "resolve" or not raw:
        return []
    return [
        Broken(
            "P8",
            0,
            f"the outcome is {_v(outcome)}, which proposes no action, but the finish lists {len(raw)} action(s); "
            "the rules refuse rather than guess which was meant.",
        )
    ]


def shape_problems(raw: Sequence[Any], policy: PolicyData | None = None) -> list[Broken]:
    """The rules a proposal's raw actions (the model's ``finish``, JSON objects) break before
    they are read as actions: P1 for a kind that is not proposed or that the policy has no limit
    for, P2 for an amount or quantity that moves nothing. An action that passes these may still
    fail its schema (a missing field); the caller says so in its own sentence.

    Args:
        raw: the ``actions`` of the model's final turn, as given.
        policy: the policy (default: the shipped one).
    """
    policy = policy or load_policy()
    known = {limit.action for limit in policy.approval_limits}
    out: list[Broken] = []
    for n, action in enumerate(raw, 1):
        if not isinstance(action, dict):
            out.append(Broken("P1", n, f"line {n} is not an action (an object with a type) but {_v(type(action).__name__)}."))
            continue
        kind = action.get("type")
        if kind not in PROPOSED_KINDS or kind not in known:
            out.append(
                Broken(
                    "P1",
                    n,
                    f"line {n} is of kind {_v(kind)}, which the agent may not propose: the kinds the policy "
                    f"{policy.version} knows are {', '.join(k for k in PROPOSED_KINDS if k in known)}.",
                )
            )
            continue
        if kind == "request_refund" and "amount" in action:
            amount = _number(action.get("amount"))
            if amount is not None and amount <= 0:
                out.append(
                    Broken("P2", n, f"line {n} refunds {_v(action.get('amount'))} CAD; a refund's amount must be more than 0.")
                )
        if kind == "reship_item" and "quantity" in action:
            q = action.get("quantity")
            if isinstance(q, bool) or not isinstance(q, int) or q < 1:
                out.append(Broken("P2", n, f"line {n} reships {_v(q)} of an item; a quantity is a whole number of at least 1."))
    return out


def unreadable(raw: Sequence[Any]) -> list[Broken]:
    """P1 for each of the model's raw actions that does not read as an action of its kind (a
    field missing, extra or of the wrong type), one sentence each naming the first field wrong.
    Call after :func:`shape_problems` (which says an unknown kind apart)."""
    one: TypeAdapter[Any] = TypeAdapter(ProposedAction)
    out: list[Broken] = []
    for n, action in enumerate(raw, 1):
        try:
            one.validate_python(action)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"][1:]) or "the action"
            kind = action.get("type") if isinstance(action, dict) else None
            said = one_line(first["msg"])[:120].rstrip(".")  # pydantic's words, never the model's value
            out.append(Broken("P1", n, f"line {n} is not a whole {_v(kind)}: {_v(where)}: {said}."))
    return out


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def problems(
    actions: Sequence[ProposedAction],
    ticket: TicketFacts,
    facts: Facts,
    evidence: Iterable[Evidence] = (),
    policy: PolicyData | None = None,
    *,
    refunded_known: bool = True,
) -> list[Broken]:
    """Every proposal rule that ``actions`` break (see the module's docstring), in the order of
    the rules, then of the lines; empty when the proposal may be offered for approval.

    Args:
        actions: the proposal's actions, as read (:class:`~core.ground.state.ProposedAction`).
        ticket: the run's order and customer.
        facts: the world's records (:class:`WorldFacts` when proposing, :class:`ShippedFacts`
            for the facts that never change).
        evidence: what the agent read (P3 with ``other_orders_of_customer``: another order is
            the customer's only when the agent's ``get_order`` showed it so).
        policy: the policy (default: the shipped one).
        refunded_known: whether ``facts`` hold what was refunded since (P5's "already refunded
            in full" and P6 against what is left); False checks P6 against the captured amount.
    """
    policy = policy or load_policy()
    out: list[Broken] = []
    known = {limit.action for limit in policy.approval_limits}
    own = facts.order(ticket.order_id)
    if own is None:
        return [
            Broken(
                "P0",
                0,
                f"the ticket names order {_v(ticket.order_id)}, which the world does not hold; a person decides what it is about.",
            )
        ]
    if own.customer_id != ticket.customer_id:
        return [
            Broken(
                "P0",
                0,
                f"the ticket is from customer {_v(ticket.customer_id)} about order {_v(ticket.order_id)}, but the world records "
                f"that order as customer {_v(own.customer_id)}'s; the rules refuse rather than guess which is right.",
            )
        ]
    for n, a in enumerate(actions, 1):
        if a.type not in known:
            out.append(Broken("P1", n, f"line {n} is of kind {a.type}, for which the policy {policy.version} has no limit."))
        if isinstance(a, RefundAction) and a.amount <= 0:
            out.append(Broken("P2", n, f"line {n} refunds {a.amount} CAD; a refund's amount must be more than 0."))
    orders: dict[int, OrderFacts] = {}
    read = _orders_read(evidence)
    for n, a in enumerate(actions, 1):
        order = facts.order(a.order_id)
        if a.order_id != ticket.order_id:
            if not policy.other_orders_of_customer:
                owner = f" (customer {_v(order.customer_id)}'s)" if order is not None else ", which the world does not hold"
                out.append(
                    Broken(
                        "P3",
                        n,
                        f"line {n} ({a.type}) names order {_v(a.order_id)}{owner}, not the ticket's order {ticket.order_id}.",
                    )
                )
                continue
            if order is None or order.customer_id != ticket.customer_id or read.get(a.order_id) != ticket.customer_id:
                out.append(
                    Broken(
                        "P3",
                        n,
                        f"line {n} ({a.type}) names order {_v(a.order_id)}, which is neither the ticket's order "
                        f"{ticket.order_id} nor one the agent read as customer {ticket.customer_id}'s and the world agrees.",
                    )
                )
                continue
        if order is None:
            continue  # the ticket's own order is there (P0); a foreign one was refused above
        orders[n] = order
    out += _payments(actions, orders, refunded_known)
    out += _items(actions, orders)
    return sorted(out, key=lambda b: (b.rule, b.line))


def _orders_read(evidence: Iterable[Evidence]) -> dict[str, str]:
    """Order ID -> customer ID as the agent's ``get_order`` lookups showed them."""
    out: dict[str, str] = {}
    for ev in evidence:
        if ev.tool == "get_order" and isinstance(ev.result, dict) and "customer_id" in ev.result:
            out[str(ev.args.get("order_id"))] = str(ev.result["customer_id"])
    return out


def _payments(actions: Sequence[ProposedAction], orders: Mapping[int, OrderFacts], refunded_known: bool) -> list[Broken]:
    """P4, P5 and P6 over the refunds whose order passed P3."""
    out: list[Broken] = []
    asked: dict[tuple[str, str], Decimal] = {}
    lines_of: dict[tuple[str, str], list[int]] = {}
    for n, a in enumerate(actions, 1):
        if not isinstance(a, RefundAction) or n not in orders or a.amount <= 0:
            continue
        pay = orders[n].payments.get(a.payment_id)
        if pay is None:
            out.append(
                Broken("P4", n, f"line {n} refunds payment {_v(a.payment_id)}, which is not a payment of order {a.order_id}.")
            )
            continue
        if a.amount > pay.amount:
            out.append(
                Broken("P5", n, f"line {n} refunds {a.amount} CAD of payment {a.payment_id}, which captured {pay.amount} CAD.")
            )
            continue
        if refunded_known and (pay.status != "captured" or pay.refunded >= pay.amount):
            out.append(
                Broken(
                    "P5",
                    n,
                    f"line {n} refunds payment {a.payment_id}, which the world records as {pay.status} with "
                    f"{pay.refunded} CAD of {pay.amount} CAD refunded already.",
                )
            )
            continue
        key = (a.order_id, a.payment_id)
        asked[key] = asked.get(key, Decimal("0.00")) + a.amount
        lines_of.setdefault(key, []).append(n)
    for (order_id, payment_id), total in asked.items():
        pay = orders[lines_of[(order_id, payment_id)][0]].payments[payment_id]
        left = pay.amount - pay.refunded if refunded_known else pay.amount
        if total > left and len(lines_of[(order_id, payment_id)]) > 1:
            lines = ", ".join(str(n) for n in lines_of[(order_id, payment_id)])
            out.append(
                Broken(
                    "P6",
                    lines_of[(order_id, payment_id)][0],
                    f"lines {lines} together refund {total} CAD of payment {payment_id}, which can refund {left} CAD.",
                )
            )
        elif total > left:
            n = lines_of[(order_id, payment_id)][0]
            out.append(
                Broken("P6", n, f"line {n} refunds {total} CAD of payment {payment_id}, which can refund {left} CAD more.")
            )
    return out


def _items(actions: Sequence[ProposedAction], orders: Mapping[int, OrderFacts]) -> list[Broken]:
    """P7 over the reships and return labels whose order passed P3."""
    out: list[Broken] = []
    shipped: dict[tuple[str, str], int] = {}
    ship_lines: dict[tuple[str, str], list[int]] = {}
    labels: dict[tuple[str, str], list[int]] = {}
    for n, a in enumerate(actions, 1):
        if not isinstance(a, ReshipAction | ReturnLabelAction) or n not in orders:
            continue
        ordered = orders[n].lines.get(a.sku)
        if ordered is None:
            out.append(Broken("P7", n, f"line {n} ({a.type}) names item {_v(a.sku)}, which is not on order {a.order_id}."))
            continue
        key = (a.order_id, a.sku)
        if isinstance(a, ReshipAction):
            shipped[key] = shipped.get(key, 0) + a.quantity
            ship_lines.setdefault(key, []).append(n)
        else:
            labels.setdefault(key, []).append(n)
    for key, total in shipped.items():
        ordered = orders[ship_lines[key][0]].lines[key[1]]
        if total > ordered:
            where = ", ".join(str(n) for n in ship_lines[key])
            out.append(
                Broken(
                    "P7",
                    ship_lines[key][0],
                    f"line{'s' if len(ship_lines[key]) > 1 else ''} {where} reship{'' if len(ship_lines[key]) > 1 else 's'} "
                    f"{total} of {key[1]}, and order {key[0]} has {ordered}.",
                )
            )
    for key, ns in labels.items():
        if len(ns) > 1:
            out.append(
                Broken(
                    "P7",
                    ns[0],
                    f"lines {', '.join(str(n) for n in ns)} each make a return label for {key[1]} on {key[0]}; an item has one.",
                )
            )
    return out


def standing_problems(
    actions: Sequence[ProposedAction], ticket: TicketFacts, facts: Facts | None = None, policy: PolicyData | None = None
) -> list[Broken]:
    """The rules whose facts never change, checked again at a decision and before a write: every
    rule of :func:`problems` with ``refunded_known`` False (a refund since is the payment
    service's to refuse at the write). ``facts`` default to the world as shipped
    (:class:`ShippedFacts`), whose orders, lines and captured amounts no write changes."""
    return problems(actions, ticket, facts or ShippedFacts(), (), policy, refunded_known=False)


def refusal(broken: Sequence[Broken]) -> str:
    """The reason a refused proposal is handed to a person with: ``The agent's proposal was not
    offered for approval: it breaks 2 of the proposal rules.`` followed by one sentence per
    broken rule, each on its own line (:meth:`Broken.text`)."""
    rules = len({b.rule for b in broken})
    head = f"The agent's proposal was not offered for approval: it breaks {rules} of the proposal rules."
    return "\n".join([head, *(b.text() for b in broken)])
