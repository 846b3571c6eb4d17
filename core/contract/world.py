"""The practice world's contract: its read-only tools, write services and operations register.

:class:`World` is what the core calls on the Larkfield practice world, whatever holds it; the
first back-end keeps it in SQLite (:class:`core.stores.sqlite.world.SqliteWorld`,
``larkfield.sqlite``), the second in PostgreSQL (:class:`core.stores.postgres.world.PostgresWorld`),
both over :class:`core.stores.practice.PracticeWorld`; :func:`core.stores.open_world` opens the home's.

The world holds customers, catalog, orders, payments and shipments, what the write services did
(refunds, reshipments, return labels, replies) and the **operations register**: for each
operation ID, the service, its arguments and its result, numbered in commit order. The register
is what the executor reconciles with after a crash (seed 000, "What survives a crash").

Write services take an operation ID as their idempotency key: a second call with the same ID
changes nothing and returns the first result (the same ID for another call is refused). Each
checks its own invariants at the moment of the write and raises :class:`ServiceRefused` with the
service's sentence, for instance ``PAY-507862-2 is not a captured charge of LK-507862``; an
approved proposal's expected states are checked in the same transaction
(:class:`PreconditionFailed`). Simulated faults raise :class:`TransientServiceError` once each
and are recorded in the caller's ``faults_seen``.

Here too, with the contract: the tools' names and arguments, the services' errors, the register's
call shapes (:func:`planned_call`, :func:`same_call`, :func:`describe_call`) and the table of
write services (:data:`WRITE_SERVICES`), which every back-end shares.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from core.ground.clock import Clock
from core.ground.errors import ResolverError
from core.ground.state import Action, Precondition, RefundAction, ReplyAction, ReshipAction, ReturnLabelAction, cad

READ_TOOLS = ("get_order", "get_payments", "get_shipment", "get_customer", "get_policy")
"""The agent's read-only tools, each taking one ID argument and returning JSON evidence."""

TOOL_ARGS = {
    "get_order": ("order_id",),
    "get_payments": ("order_id",),
    "get_shipment": ("order_id",),
    "get_customer": ("customer_id",),
    "get_policy": ("rule_id",),
}
"""Each read-only tool's arguments, by name: every one is required, and no other is taken."""

MAX_ARG_CHARS = 100
"""The longest value a read-only tool's argument may have, in characters. The world's IDs are
at most 12 (``PAY-507862-2``); 100 leaves room for IDs of other shops while a model's essay or a
pasted document in an ID is refused before it reaches a query."""


def tool_args_problem(tool: str, args: Any) -> str | None:
    """Why ``args`` are not the arguments of the read-only tool ``tool`` (one clause, no final
    period), else None.

    The arguments are a JSON object holding exactly the tool's own (:data:`TOOL_ARGS`), each a
    string of 1 to :data:`MAX_ARG_CHARS` printable characters: no NUL or other control
    character, no line break, no lone surrogate. The tools look their argument up in SQL, and a
    value of another kind (a list, a number, null, an object) or text the database cannot hold
    would fail there and be blamed on the store; refused here, it is the model's mistake, said
    in a sentence it can read and correct. The clause never repeats a value, and names the
    model's own keys only as ASCII, cut to 40 characters.
    """
    if not isinstance(tool, str) or tool not in TOOL_ARGS:
        return f"No tool {_shown(tool)}; the tools are {', '.join(READ_TOOLS)}"
    names = TOOL_ARGS[tool]
    if not isinstance(args, dict):
        return f"{tool} takes an object of arguments ({', '.join(names)}), not {_kind(args)}"
    if set(args) != set(names):
        given = ", ".join(_shown(k, quote=False) for k in sorted(map(str, args))[:5]) or "nothing"
        return f"{tool} takes {', '.join(names)}, not {given}"
    for name in names:
        value = args[name]
        if not isinstance(value, str):
            return f"{tool} takes {name} as text, not {_kind(value)}"
        if not value:
            return f"{tool} takes {name} as text of 1 to {MAX_ARG_CHARS} characters, not an empty string"
        if len(value) > MAX_ARG_CHARS:
            return f"{tool} takes {name} as text of 1 to {MAX_ARG_CHARS} characters, not {len(value)}"
        odd = next((ch for ch in value if not ch.isprintable()), None)
        if odd is not None:
            return f"{tool} takes {name} as one line of printable text, not text holding U+{ord(odd):04X}"
    return None


def _kind(value: Any) -> str:
    """What a JSON value is, for a sentence: ``a list``, ``a number``, ``null`` ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _shown(text: Any, quote: bool = True) -> str:
    """A name the model gave, safe in a sentence: ASCII only (``ascii()``, which escapes control
    characters and lone surrogates), cut to 40 characters."""
    value = str(text)
    shown = ascii(value[:40] + ("..." if len(value) > 40 else ""))
    return shown if quote else shown[1:-1]


class ServiceRefused(ResolverError):
    """A write service refused because its invariant does not hold (not retried)."""


class PreconditionFailed(ServiceRefused):
    """The service's own invariants hold, but the world is not as the approver saw it: an
    expected state (a precondition of the approved proposal) does not hold."""


class TransientServiceError(ResolverError):
    """A write service timed out or was unavailable; the executor may retry."""


class UnknownTool(ResolverError):
    """The agent asked for a tool that does not exist or with the wrong arguments
    (:func:`tool_args_problem`): the run goes on, the sentence becomes the call's result, which
    the model reads at its next step and may correct."""


def derived_id(prefix: str, operation_id: str) -> str:
    """An ID derived from the operation ID: ``RF-`` + 8 upper hex digits of its SHA-256.

    ``derived_id("RF", "manual-1")`` is ``RF-4CFEAE8E``, the seed's weekend refund.
    """
    return f"{prefix}-{hashlib.sha256(operation_id.encode('utf-8')).hexdigest()[:8].upper()}"


class WorldMissing(ResolverError):
    """``larkfield.sqlite`` is missing, empty or not a file in a home that has runs or an audit
    register: rebuilding it would lose the operations register, and a resume would write again."""


def _refund_args(order_id: str, amount: Decimal, reason_code: str, payment_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "amount": str(amount), "reason_code": reason_code, "payment_id": payment_id}


def _reship_args(order_id: str, sku: str, quantity: int) -> dict[str, Any]:
    return {"order_id": order_id, "sku": sku, "quantity": quantity}


def _label_args(order_id: str, sku: str, reason: str, return_shipping: str) -> dict[str, Any]:
    return {"order_id": order_id, "sku": sku, "reason": reason, "return_shipping": return_shipping}


def _reply_args(order_id: str, customer_id: str, text: str) -> dict[str, Any]:
    return {"order_id": order_id, "customer_id": customer_id, "chars": len(text)}


Call = tuple[str, dict[str, Any]]
"""A write as the operations register records it: ``(service, args)``."""


def planned_call(action: Action) -> Call:
    """What the register records when the write service of ``action`` performs it: the service's
    name and its arguments, exactly as the world's register stores them (a refund's amount as CAD
    with two decimals, a reply's recipient and length).

    Raises: ResolverError for an action type that has no service."""
    if isinstance(action, RefundAction):
        return "request_refund", _refund_args(action.order_id, cad(action.amount), action.reason_code, action.payment_id)
    if isinstance(action, ReshipAction):
        return "reship_item", _reship_args(action.order_id, action.sku, action.quantity)
    if isinstance(action, ReturnLabelAction):
        return "create_return_label", _label_args(action.order_id, action.sku, action.reason, action.return_shipping)
    if isinstance(action, ReplyAction):
        return "send_reply", _reply_args(action.order_id, action.customer_id, action.text)
    raise ResolverError(f"No write service for {action.type!r}; the services are {', '.join(WRITE_SERVICES)}.")


def same_call(recorded: Call, planned: Call) -> bool:
    """Whether a register entry ``recorded`` is the call ``planned``: the same service with the
    same arguments (kind, order, amount, payment, item, recipient ...), compared as JSON."""
    return (recorded[0], json.loads(json.dumps(recorded[1], default=str))) == (
        planned[0],
        json.loads(json.dumps(planned[1], default=str)),
    )


def describe_call(call: Call) -> str:
    """One line for a register entry or a planned write: ``request_refund 9.95 CAD of
    PAY-793996-1 on LK-793996 (RFD-LATE)``; an unknown service shows its arguments as JSON."""
    service, a = call
    if service == "request_refund":
        return f"request_refund {a.get('amount')} CAD of {a.get('payment_id')} on {a.get('order_id')} ({a.get('reason_code')})"
    if service == "reship_item":
        return f"reship_item {a.get('sku')} x {a.get('quantity')} on {a.get('order_id')}"
    if service == "create_return_label":
        return f"create_return_label {a.get('sku')} on {a.get('order_id')} ({a.get('reason')})"
    if service == "send_reply":
        return f"send_reply to {a.get('customer_id')} about {a.get('order_id')} ({a.get('chars')} characters)"
    return f"{service} {json.dumps(a, sort_keys=True, default=str)}"


Service = Callable[["World", str, Any, Sequence[Precondition], Collection[str]], dict[str, Any]]


def _refund(
    world: World, operation_id: str, a: RefundAction, expect: Sequence[Precondition], own: Collection[str]
) -> dict[str, Any]:
    return world.request_refund(operation_id, a.order_id, a.amount, a.reason_code, a.payment_id, expect=expect, own=own)


def _reship(
    world: World, operation_id: str, a: ReshipAction, expect: Sequence[Precondition], own: Collection[str]
) -> dict[str, Any]:
    return world.reship_item(operation_id, a.order_id, a.sku, a.quantity, expect=expect, own=own)


def _label(
    world: World, operation_id: str, a: ReturnLabelAction, expect: Sequence[Precondition], own: Collection[str]
) -> dict[str, Any]:
    return world.create_return_label(operation_id, a.order_id, a.sku, a.reason, a.return_shipping, expect=expect, own=own)


def _reply(
    world: World, operation_id: str, a: ReplyAction, expect: Sequence[Precondition], own: Collection[str]
) -> dict[str, Any]:
    return world.send_reply(operation_id, a.order_id, a.customer_id, a.text, expect=expect, own=own)


WRITE_SERVICES: dict[str, Service] = {
    "request_refund": _refund,
    "reship_item": _reship,
    "create_return_label": _label,
    "send_reply": _reply,
}
"""Action type -> the write service that performs it: the executor's only way into the world."""


class World(Protocol):
    """The practice world of one home (see the module's docstring).

    Attributes:
        path: where the world lives (SQLite: ``larkfield.sqlite``), for sentences.
        clock: stamps the writes.
        faults_seen: the run's list of simulated faults already met; appended to in place.
        actor: who writes (a run ID, or ``manual`` for the weekend phone call).
    """

    path: Path
    clock: Clock
    faults_seen: list[str]
    actor: str

    def reset(self) -> None:
        """Rebuild the world from ``data/`` (every write since is forgotten): :func:`reset_world`."""
        ...

    def call_tool(self, tool: str, args: dict[str, Any]) -> Any:
        """Run one read-only tool and return its JSON-ready evidence.

        ``tool`` and ``args`` are the model's, as it gave them (any JSON value may be there), and
        they are checked before any query (:func:`tool_args_problem`): a value the model chose
        never reaches the database as anything but a string it may hold, so it is never blamed
        on the store.

        Raises:
            UnknownTool: no such tool, or arguments that are not the tool's own (one sentence).
        """
        ...

    def read_tool(self, tool: str, args: dict[str, Any]) -> tuple[Any, int]:
        """Run one read-only tool (:meth:`call_tool`) and return ``(result, seq)``: ``seq`` is the
        operations register's number (:meth:`register_seq`) read in the same read transaction as
        the result, so every write numbered above it was committed after the evidence was read,
        and every write at or below it is in the result ("since" decided by the
        world's own order of events, never by the clock's resolution).

        Raises:
            UnknownTool: as :meth:`call_tool`.
        """
        ...

    def register_seq(self) -> int:
        """The number of the newest entry of the operations register (0 when empty). Numbers are
        given in commit order, inside each write's transaction: 1, 2, 3 ..."""
        ...

    def get_order(self, order_id: str) -> dict[str, Any]:
        """The order with its lines (CAD as strings), or ``{"error": ...}``."""
        ...

    def get_payments(self, order_id: str) -> list[dict[str, Any]]:
        """Every payment of the order: amount, refunded so far, status (captured|refunded)."""
        ...

    def get_shipment(self, order_id: str) -> list[dict[str, Any]]:
        """The order's shipments with carrier, tracking and dates."""
        ...

    def get_customer(self, customer_id: str) -> dict[str, Any]:
        """The customer, or ``{"error": ...}``."""
        ...

    def get_policy(self, rule_id: str) -> dict[str, Any]:
        """The text of policy rule ``rule_id`` (W1...Wn)."""
        ...

    def lookup_operation(self, operation_id: str) -> dict[str, Any] | None:
        """The register's entry for ``operation_id`` (service, args, result, at, actor), or None."""
        ...

    def request_refund(
        self,
        operation_id: str,
        order_id: str,
        amount: Decimal | str | float,
        reason_code: str,
        payment_id: str,
        *,
        expect: Sequence[Precondition] = (),
        own: Collection[str] = (),
    ) -> dict[str, Any]:
        """Refund ``amount`` CAD of a captured payment of ``order_id``.

        Returns ``{"refund_id": "RF-XXXXXXXX", "amount": "119.00", ...}``; the refund ID derives
        from the operation ID. Raises ServiceRefused when the payment is not a captured charge of
        the order or the amount exceeds what is left; TransientServiceError for a simulated fault.
        """
        ...

    def reship_item(
        self,
        operation_id: str,
        order_id: str,
        sku: str,
        quantity: int,
        *,
        expect: Sequence[Precondition] = (),
        own: Collection[str] = (),
    ) -> dict[str, Any]:
        """Send ``quantity`` of ``sku`` again. Refuses an item not on the order, or more than ordered."""
        ...

    def create_return_label(
        self,
        operation_id: str,
        order_id: str,
        sku: str,
        reason: str,
        return_shipping: str = "free",
        *,
        expect: Sequence[Precondition] = (),
        own: Collection[str] = (),
    ) -> dict[str, Any]:
        """Create the one return label an item may have. Refuses a second label or a foreign item."""
        ...

    def send_reply(
        self,
        operation_id: str,
        order_id: str,
        customer_id: str,
        text: str,
        *,
        expect: Sequence[Precondition] = (),
        own: Collection[str] = (),
    ) -> dict[str, Any]:
        """Send the reply to the customer. Refuses an empty reply or an unknown customer."""
        ...

    def call_service(
        self, operation_id: str, action: Action, *, expect: Sequence[Precondition] = (), own: Collection[str] = ()
    ) -> dict[str, Any]:
        """Call the write service that ``action`` names, with ``operation_id`` as its idempotency
        key (the table :data:`WRITE_SERVICES` maps each action type to its service) and
        ``expect`` as the expected state: the service checks its own invariants first, then each
        precondition, in the write's transaction; ``own`` are the run's own operation IDs, which
        never count against it. A call whose operation ID is already in the register returns
        its first result before any check (the run's own write never trips its preconditions).

        Raises: ServiceRefused (PreconditionFailed when only the expected state differs),
        TransientServiceError (from the service); ResolverError for an action type that has no
        service.
        """
        ...

    def precondition_problem(self, pre: Precondition, own: Collection[str] = ()) -> str | None:
        """Why ``pre`` does not hold in the world now (one sentence), or None."""
        ...

    def effects_on(
        self, order_id: str, since: datetime | None, exclude: Collection[str] = (), since_seq: int | None = None
    ) -> list[dict[str, Any]]:
        """Every write on ``order_id`` since the evidence was read (refunds, reships, labels,
        replies), whoever made it, except the operations in ``exclude``: ``{"kind", "id",
        "line", "at", "operation_id", "actor"}``, in commit order. "Since" as in
        :meth:`_effects`: above register number ``since_seq`` when given, else at or after
        ``since``, else every write."""
        ...

    def changes(self) -> list[dict[str, Any]]:
        """Every write since the world was built, in the order of the operations register:
        ``{"kind", "id", "line", "at", "operation_id", ...}``."""
        ...

    def refunds_of(self, order_id: str) -> list[dict[str, Any]]:
        """The refunds made on one order."""
        ...

    def register_count(self, operation_id: str) -> int:
        """How many register rows ``operation_id`` has (0 or 1: it is the primary key)."""
        ...

    def forget_replies(self, operations: list[str]) -> int:
        """Empty the text of the replies made by ``operations`` (a pruned run's), so that it is
        overwritten, not left in free pages or a log; the reply rows and the register stay.
        Returns how many replies were emptied."""
        ...
