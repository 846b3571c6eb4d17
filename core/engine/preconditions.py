"""Preconditions and drift: approve against the world as it is now.

:func:`derive` turns a run's evidence into the :class:`~core.ground.state.Precondition` list of its
proposal (part of the canonical proposal and its digest). :func:`drift` re-runs the read-only
lookups behind the evidence against the world now (no model call) and reports each difference
field by field, every effect on the order since the evidence was read (whoever made it) and the
preconditions that already fail. :func:`look` is the read itself, as data
(:class:`~core.ground.state.WorldSeen`): an approval carries the one its approver saw, and the approval
is refused when the lookups return something else by the time it is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from core.contract.world import World
from core.ground.clock import iso
from core.ground.safetext import one_line
from core.ground.state import EFFECT_OF_ACTION, Lookup, Precondition, Proposal, TaskState, WorldSeen, cad


def _payment_seen(state: TaskState, order_id: str, payment_id: str) -> dict[str, Any] | None:
    """The payment as the latest ``get_payments`` evidence of ``order_id`` showed it."""
    for ev in reversed(state.evidence):
        if ev.tool == "get_payments" and ev.args.get("order_id") == order_id and isinstance(ev.result, list):
            for pay in ev.result:
                if isinstance(pay, dict) and pay.get("payment_id") == payment_id:
                    return pay
    return None


def evidence_seq(state: TaskState) -> int | None:
    """The operations register's number when the run's evidence was first read: the lowest
    ``seq`` of its evidence, so every write numbered above it came after some of the
    evidence was read. None when any evidence was saved before the register numbered its writes (no number), or there
    is none: "since" is then decided by time, the same second counting as since."""
    seqs = [ev.seq for ev in state.evidence]
    if not seqs or any(s is None for s in seqs):
        return None
    return min(s for s in seqs if s is not None)


def derive(state: TaskState, proposal: Proposal, evidence_at: datetime) -> list[Precondition]:
    """The preconditions of each planned operation of ``proposal`` (actions, then the reply):

    - a refund: the payment as the evidence showed it (status and amount refunded), when the
      agent looked it up; and no other refund of the order since the evidence was read;
    - a reship: no other reship of that item since; a return label: no other label of that item;
    - the reply: no other reply on the order since.

    "Since" is the register's number of the evidence (:func:`evidence_seq`), with
    ``evidence_at`` kept beside it for the people reading the request.
    """
    seq = evidence_seq(state)
    out: list[Precondition] = []
    for i, action in enumerate(proposal.actions):
        effect = EFFECT_OF_ACTION[action.type]
        if action.type == "request_refund":
            pay = _payment_seen(state, action.order_id, action.payment_id)
            if pay is not None:
                out.append(
                    Precondition(
                        index=i,
                        kind="payment",
                        order_id=action.order_id,
                        payment_id=action.payment_id,
                        status=str(pay.get("status", "")),
                        refunded=cad(pay.get("refunded", "0")),
                    )
                )
            out.append(
                Precondition(
                    index=i, kind="none_since", order_id=action.order_id, effect=effect, since=evidence_at, since_seq=seq
                )
            )
        else:
            sku = getattr(action, "sku", "")
            out.append(
                Precondition(
                    index=i,
                    kind="none_since",
                    order_id=action.order_id,
                    effect=effect,
                    sku=sku,
                    since=evidence_at,
                    since_seq=seq,
                )
            )
    if proposal.reply_draft.strip():
        out.append(
            Precondition(
                index=len(proposal.actions),
                kind="none_since",
                order_id=state.order_id,
                effect="reply",
                since=evidence_at,
                since_seq=seq,
            )
        )
    return out


def bind(state: TaskState, proposal: Proposal, evidence_at: datetime, version: int = 1) -> Proposal:
    """``proposal`` bound to the world as read: recipient, evidence time, preconditions, version."""
    bound = proposal.model_copy(update={"recipient": state.customer_id, "evidence_at": evidence_at, "version": version})
    return bound.model_copy(update={"preconditions": derive(state, bound, evidence_at)})


# -- drift ---------------------------------------------------------------------------------------

_KEYS = ("payment_id", "shipment_id", "sku", "refund_id", "customer_id", "order_id")


def _label(item: Any) -> str | None:
    if isinstance(item, dict):
        for k in _KEYS:
            if k in item:
                return f"{k.removesuffix('_id')} {item[k]}"
    return None


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        name = _label(value) if prefix.endswith("]") or not prefix else None
        base = name or prefix
        for k, v in value.items():
            _flatten(v, f"{base}: {k}" if base else str(k), out)
    elif isinstance(value, list):
        for n, item in enumerate(value):
            name = _label(item)
            if name:
                _flatten(item, name if not prefix else f"{prefix} {name}", out)
            else:
                _flatten(item, f"{prefix}[{n}]", out)
    else:
        out[prefix] = value


def field_differences(before: Any, after: Any) -> list[str]:
    """Field-by-field differences of two JSON results: ``payment PAY-507862-2: refunded 0.00
    then 119.00``; a field that appeared or went away says so."""
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    _flatten(json.loads(json.dumps(before, default=str)), "", a)
    _flatten(json.loads(json.dumps(after, default=str)), "", b)
    lines = []
    for key in sorted(set(a) | set(b), key=lambda k: (k not in a, list(a).index(k) if k in a else 0, k)):
        if key not in b:
            lines.append(f"{key}: {a[key]} then gone")
        elif key not in a:
            lines.append(f"{key}: new, {b[key]}")
        elif a[key] != b[key]:
            lines.append(f"{key}: {a[key]} then {b[key]}")
    return lines


@dataclass
class Drift:
    """What changed since the agent looked: ``differences`` (field by field, per lookup),
    ``effects`` (every write on the orders the proposal names since the evidence was read,
    whoever made it, not the run's own), ``failing`` (the sentences of the preconditions that do
    not hold now), ``unread`` (what the world holds now for the records the agent never read)."""

    differences: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    """The orders and payments an action names that the agent never read, each with what the
    world holds for it now (:func:`unread`)."""

    @property
    def changed(self) -> bool:
        """True when anything differs, an effect was made or a precondition fails (an unread
        record is not a change: it is said apart)."""
        return bool(self.differences or self.effects or self.failing)


def _when(at: str) -> str:
    try:
        return datetime.fromisoformat(at).strftime("%A %H:%M")
    except ValueError:
        return at


def _json(value: Any) -> Any:
    """``value`` as plain JSON (amounts and times as the strings the services give)."""
    return json.loads(json.dumps(value, default=str))


@dataclass(frozen=True)
class Unread:
    """A record an action names that the agent never read: ``tool`` (``get_order`` for an
    order, ``get_payments`` for a payment of it), the ``order_id``, the ``payment_id`` (a
    payment's), and ``line``, the action's number in the proposal (from 1)."""

    tool: str
    order_id: str
    payment_id: str
    line: int

    def text(self) -> str:
        """``payment PAY-793996-1 of order LK-793996 (action 1)`` or ``order LK-507862 (action 1)``."""
        what = f"payment {self.payment_id} of order {self.order_id}" if self.payment_id else f"order {self.order_id}"
        return f"{what} (action {self.line})"


def unread(state: TaskState) -> list[Unread]:
    """Every order and payment the proposal's actions name that the agent's evidence never
    showed: an order without a ``get_order`` of it, a refund's payment absent from every
    ``get_payments`` result of its order. The request names each (a person approving it is told
    what the agent did not look at), and :func:`look` reads each now, so "What changed since the
    agent looked" covers every order and payment an action names, not only those read."""
    p = state.proposal
    if p is None:
        return []
    orders_read = {str(ev.args.get("order_id")) for ev in state.evidence if ev.tool == "get_order"}
    out: list[Unread] = []
    for n, action in enumerate(p.actions, 1):
        if action.order_id not in orders_read:
            out.append(Unread("get_order", action.order_id, "", n))
        if action.type == "request_refund" and _payment_seen(state, action.order_id, action.payment_id) is None:
            out.append(Unread("get_payments", action.order_id, action.payment_id, n))
    return out


def _extra_lookups(state: TaskState) -> list[tuple[str, dict[str, Any]]]:
    """The lookups :func:`look` adds after the evidence's: one per tool and order of
    :func:`unread`, in the order first named."""
    read = {(ev.tool, json.dumps(ev.args, sort_keys=True)) for ev in state.evidence}
    out: list[tuple[str, dict[str, Any]]] = []
    for u in unread(state):
        key = (u.tool, json.dumps({"order_id": u.order_id}, sort_keys=True))
        if key not in read and (u.tool, {"order_id": u.order_id}) not in out:
            out.append((u.tool, {"order_id": u.order_id}))
    return out


def orders_named(state: TaskState) -> list[str]:
    """The ticket's order, then every other order the proposal's actions name, once each."""
    names = [state.order_id] if state.order_id else []
    for action in state.proposal.actions if state.proposal else []:
        if action.order_id not in names:
            names.append(action.order_id)
    return names


def look(state: TaskState, world: World) -> WorldSeen:
    """Run the read-only lookups behind ``state``'s evidence against ``world`` now (no model
    call): each lookup's result (or why it cannot run again) and every effect on the order since
    the evidence was read by an operation other than the run's own (the data an
    approval is bound to; :func:`drift` compares it with the evidence)."""
    lookups = []
    for tool, args in [*((ev.tool, ev.args) for ev in state.evidence), *_extra_lookups(state)]:
        try:
            lookups.append(Lookup(tool=tool, args=dict(args), result=_json(world.call_tool(tool, dict(args)))))
        except Exception as exc:  # a tool that cannot run again is itself a difference
            lookups.append(Lookup(tool=tool, args=dict(args), error=str(exc)))
    effects: list[dict[str, Any]] = []
    p = state.proposal
    if p is not None:
        own = {op.operation_id for op in state.operations}
        since = p.evidence_at or state.updated_at
        seq = evidence_seq(state) if p.evidence_at is not None else None  # by the register's order
        for order in orders_named(state):  # every order an action names, not only the ticket's
            effects += [_json(e) for e in world.effects_on(order, since, exclude=own, since_seq=seq)]
        if len(orders_named(state)) > 1:
            effects.sort(key=lambda e: (e.get("seq") is None, e.get("seq") or 0, str(e.get("at", ""))))  # commit order
    return WorldSeen(at=world.clock.now(), lookups=lookups, effects=effects)


def drift(state: TaskState, world: World, seen: WorldSeen | None = None) -> Drift:
    """What changed since the agent looked: the lookups behind ``state``'s evidence as ``seen``
    (default: :func:`look` now; no model call) compared with the evidence field by field, the
    effects on the order since the evidence was read, and the preconditions that fail now."""
    seen = seen if seen is not None else look(state, world)
    out = Drift()
    for ev, now in zip(state.evidence, seen.lookups, strict=False):
        if now.error:
            out.differences.append(f"{ev.tool} {json.dumps(ev.args)}: cannot be read again ({now.error})")
            continue
        out.differences += [f"{ev.tool}: {d}" for d in field_differences(ev.result, now.result)]
    extra = {(x.tool, str(x.args.get("order_id"))): x for x in seen.lookups[len(state.evidence) :]}
    for u in unread(state):
        out.unread.append(f"{u.text()}: {_now_text(u, extra.get((u.tool, u.order_id)))}")
    p = state.proposal
    if p is None:
        return out
    for e in seen.effects:
        out.effects.append(f"{e['line']} by operation {e['operation_id']} ({e['actor']}) on {_when(e['at'])}")
    own = {op.operation_id for op in state.operations}
    for pre in p.preconditions:
        problem = world.precondition_problem(pre, own)
        if problem:
            out.failing.append(problem)
    return out


def _now_text(u: Unread, now: Lookup | None) -> str:
    """What the world holds now for an unread record, as :meth:`Drift.unread` says it."""
    if now is None:
        return "not read now either"
    if now.error:
        return f"cannot be read ({now.error})"
    result = now.result
    if u.payment_id:
        pay = next((x for x in result or [] if isinstance(x, dict) and x.get("payment_id") == u.payment_id), None)
        if pay is None:
            return f"the world holds no such payment of order {u.order_id} now"
        return f"{pay.get('status')}, {pay.get('amount')} CAD, {pay.get('refunded', '0.00')} CAD refunded, now"
    if not isinstance(result, dict) or "error" in result:
        return "the world holds no such order now"
    return f"customer {result.get('customer_id')}, {result.get('status')}, total {result.get('total')} CAD, now"


def age_seconds(since: datetime | None, now: datetime) -> float | None:
    """Seconds from ``since`` to ``now`` (None when unknown)."""
    return None if since is None else (now - since).total_seconds()


def first_read(state: TaskState) -> datetime:
    """When the run's first read-only lookup was made (its ``tool_call`` event), else its last
    save: the time its evidence dates from (the oldest part of it)."""
    for ev in state.events:
        if ev.kind == "tool_call":
            return ev.at
    return state.updated_at


def evidence_time(state: TaskState) -> datetime:
    """When the evidence of the run's proposal was read: the proposal's ``evidence_at``, or for
    a proposal saved without ``evidence_at`` the time of its first lookup (:func:`first_read`)."""
    if state.proposal is not None and state.proposal.evidence_at is not None:
        return state.proposal.evidence_at
    return first_read(state)


__all__ = [
    "Drift",
    "Unread",
    "age_seconds",
    "bind",
    "derive",
    "drift",
    "evidence_seq",
    "evidence_time",
    "field_differences",
    "first_read",
    "iso",
    "look",
    "orders_named",
    "unread",
]


def drift_lines(differences: list[str], effects: list[str], failing: list[str], unread: Iterable[str] = ()) -> list[str]:
    """The request's section "What changed since the agent looked": each difference of the
    lookups run again now, field by field; every effect on the orders the actions name since the
    evidence was read, whoever made it; the preconditions that fail now; and each order or
    payment an action names that the agent never read, with what the world holds for it now
    (``unread``: :attr:`core.engine.preconditions.Drift.unread`), so the section never says "nothing"
    about a record nobody looked at."""
    unread = list(unread)
    lines = ["What changed since the agent looked:"]
    if not (differences or effects or failing):
        lines.append("  nothing: the lookups give the same results now.")
    lines += [f"  {one_line(d)}" for d in differences]
    if effects:
        lines += ["  Effects on the order since the evidence was read:", *(f"    {one_line(e)}" for e in effects)]
    if failing:
        lines += ["  Preconditions that fail now:", *(f"    {one_line(f)}" for f in failing)]
    if unread:
        lines += ["  Named by an action but never read by the agent:", *(f"    {one_line(u)}" for u in unread)]
    return lines
