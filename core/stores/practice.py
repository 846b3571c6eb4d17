"""The practice world's tools and write services, over any SQL back-end.

:class:`PracticeWorld` is the back-end-neutral half of :class:`core.contract.world.World`: the read-only
tools, the write services with their invariants and idempotency keys, the expected-state checks,
"what changed" and the operations register's reads. It speaks SQL with ``?``
placeholders through three context managers a back-end supplies: :meth:`~PracticeWorld._connect`
(reads), :meth:`~PracticeWorld._immediate` (a write transaction that serializes the world's
writers, so an entry's register number is taken in commit order) and
:meth:`~PracticeWorld._snapshot` (one read snapshot for a tool's result and the register's
number). Rows are read by column name and by position (``sqlite3.Row``, or the PostgreSQL
back-end's row of the same shape).

:func:`world_rows` gives the rows the world is built from (``data/world.json``), and
:data:`EFFECT_TABLES_COLUMNS` the tables of what the services did, so both back-ends build the same world.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from core.contract.world import (
    WRITE_SERVICES,
    PreconditionFailed,
    ServiceRefused,
    TransientServiceError,
    UnknownTool,
    _label_args,
    _refund_args,
    _reply_args,
    _reship_args,
    derived_id,
    same_call,
    tool_args_problem,
)
from core.ground.clock import Clock, SystemClock, iso
from core.ground.data import Fault, WorldData, load_policy
from core.ground.errors import ResolverError
from core.ground.state import EFFECT_TABLES, Action, Precondition, cad

SERVICE_DELAY_ENV = "RESOLVER_SERVICE_DELAY_S"
"""Test hook: every write service of a new process waits this many seconds (real time) before it
writes, as a slow payment provider would; read once at import."""

try:
    _service_delay_s = max(0.0, float(os.environ.get(SERVICE_DELAY_ENV) or 0))
except ValueError:
    _service_delay_s = 0.0


class Cursor(Protocol):
    """What a statement returns: rows by position and by column name."""

    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection that runs SQL with ``?`` placeholders (``sqlite3.Connection``, or the
    PostgreSQL back-end's adapter)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...


EFFECT_TABLES_COLUMNS: dict[str, tuple[tuple[str, type], ...]] = {
    "refunds": (
        ("refund_id", str),
        ("operation_id", str),
        ("order_id", str),
        ("at", str),
        ("actor", str),
        ("payment_id", str),
        ("amount", str),
        ("reason_code", str),
    ),
    "reshipments": (
        ("reship_id", str),
        ("operation_id", str),
        ("order_id", str),
        ("at", str),
        ("actor", str),
        ("sku", str),
        ("quantity", int),
    ),
    "return_labels": (
        ("label_id", str),
        ("operation_id", str),
        ("order_id", str),
        ("at", str),
        ("actor", str),
        ("sku", str),
        ("reason", str),
        ("return_shipping", str),
    ),
    "replies": (
        ("reply_id", str),
        ("operation_id", str),
        ("order_id", str),
        ("at", str),
        ("actor", str),
        ("customer_id", str),
        ("text", str),
    ),
    "operations": (
        ("operation_id", str),
        ("service", str),
        ("args", str),
        ("result", str),
        ("at", str),
        ("actor", str),
        ("seq", int),
    ),
}
"""The tables the write services fill (and the operations register), empty when the world is
built: name -> ``(column, Python type)`` in order, the first column the primary key. The world
also has a unique index on ``return_labels (order_id, sku)`` and on ``operations (seq)``."""


def world_rows(data: WorldData) -> dict[str, tuple[list[dict[str, Any]], str | tuple[str, ...]]]:
    """The rows the practice world is built from: table -> ``(rows, primary key)`` for
    ``customers``, ``catalog``, ``orders``, ``order_lines``, ``payments`` and ``shipments``, CAD as
    decimal strings, a payment's ``refunded`` so far (all of it when ``refunded``). Indexes:
    ``payments (order_id)`` and ``shipments (order_id)``."""
    return {
        "customers": ([c.model_dump() for c in data.customers], "customer_id"),
        "catalog": ([{**i.model_dump(), "price": str(i.price)} for i in data.catalog], "sku"),
        "orders": (
            [
                {
                    "order_id": o.order_id,
                    "customer_id": o.customer_id,
                    "placed_at": o.placed_at,
                    "status": o.status,
                    "ship_to": o.ship_to,
                    "shipping": str(o.shipping),
                    "total": str(o.total),
                }
                for o in data.orders
            ],
            "order_id",
        ),
        "order_lines": (
            [
                {"order_id": o.order_id, "sku": l.sku, "quantity": l.quantity, "unit_price": str(l.unit_price)}
                for o in data.orders
                for l in o.lines
            ],
            ("order_id", "sku"),
        ),
        "payments": (
            [
                {**p.model_dump(), "amount": str(p.amount), "refunded": str(p.amount) if p.status == "refunded" else "0.00"}
                for p in data.payments
            ],
            "payment_id",
        ),
        "shipments": ([s.model_dump() for s in data.shipments], "shipment_id"),
    }


class PracticeWorld:
    """The back-end-neutral practice world (see the module's docstring).

    Args:
        path: where the world lives, for sentences.
        clock: stamps the writes.
        faults: simulated faults of this ticket (``data/tickets``), met once each.
        faults_seen: the run's list of faults already met; appended to in place.
        actor: who writes (a run ID, or ``manual`` for the weekend phone call).
    """

    _TIEBREAK = "t.rowid"
    """The order of two effect rows with the same register number (none should exist)."""

    def __init__(
        self,
        path: Path | str,
        clock: Clock | None = None,
        faults: Iterable[Fault] = (),
        faults_seen: list[str] | None = None,
        actor: str = "manual",
    ) -> None:
        self.path = Path(path)
        self.clock = clock or SystemClock()
        self.faults = list(faults)
        self.faults_seen = faults_seen if faults_seen is not None else []
        self.actor = actor
        self._open()

    def _open(self) -> None:
        """Open the back-end's database (called last by the constructor)."""

    def _connect(self) -> AbstractContextManager[Any]:
        """A connection for reads."""
        raise NotImplementedError

    def _immediate(self) -> AbstractContextManager[Any]:
        """A write transaction, committed at the end, rolled back on any exception; one writer
        of the world at a time, so register numbers follow commit order."""
        raise NotImplementedError

    def _snapshot(self) -> AbstractContextManager[Any]:
        """One read snapshot: every statement inside sees the same committed state."""
        raise NotImplementedError

    def reset(self) -> None:
        """Rebuild the world from ``data/`` (every write since is forgotten)."""
        raise NotImplementedError

    def forget_replies(self, operations: list[str]) -> int:
        """Empty the text of the replies made by ``operations``; returns how many."""
        raise NotImplementedError

    # -- read-only tools ------------------------------------------------------------------------

    def call_tool(self, tool: str, args: dict[str, Any]) -> Any:
        """Run one read-only tool and return its JSON-ready evidence.

        ``tool`` and ``args`` are the model's as it gave them (a live answer, or a recording's
        turn: any JSON value may be there). They are checked before any SQL
        (:func:`core.contract.world.tool_args_problem`: exactly the tool's own arguments, each a string of
        1 to 100 printable characters), so a list, a number, null, a huge string or one holding
        NUL never reaches a query, where SQLite's or PostgreSQL's error would blame the store for
        the model's value.

        Raises:
            UnknownTool: no such tool, or arguments that are not the tool's own (one sentence,
                which the runner gives the model as the call's result).
        """
        _check(tool, args)
        return getattr(self, tool)(**args)

    def read_tool(self, tool: str, args: dict[str, Any]) -> tuple[Any, int]:
        """:meth:`core.contract.world.World.read_tool`: the tool's result and the register's number, read in
        one snapshot (:meth:`_snapshot`). Raises UnknownTool (:meth:`call_tool`), before the
        snapshot is opened."""
        _check(tool, args)
        with self._snapshot() as conn:
            result = self.call_tool(tool, args)
            seq = _max_seq(conn)
        return result, seq

    def register_seq(self) -> int:
        """The number of the newest entry of the operations register (0 when empty). Numbers are
        given in commit order, inside each write's transaction: 1, 2, 3 ..."""
        with self._connect() as conn:
            return _max_seq(conn)

    def get_order(self, order_id: str) -> dict[str, Any]:
        """The order with its lines (CAD as strings), or ``{"error": ...}``.

        Raises UnknownTool, before any query, for an ``order_id`` that is not a tool's argument
        (:func:`core.contract.world.tool_args_problem`: the model's value, never the store's fault)."""
        _check("get_order", {"order_id": order_id})
        with self._connect() as conn:
            order = conn.execute("SELECT * FROM orders WHERE order_id = ?", (order_id,)).fetchone()
            if order is None:
                return {"error": f"No order {order_id}"}
            lines = conn.execute(
                "SELECT l.sku, c.name, l.quantity, l.unit_price FROM order_lines l JOIN catalog c USING (sku) "
                "WHERE l.order_id = ? ORDER BY l.sku",
                (order_id,),
            ).fetchall()
        return {**dict(order), "currency": "CAD", "lines": [dict(l) for l in lines]}

    def get_payments(self, order_id: str) -> list[dict[str, Any]]:
        """Every payment of the order: amount, refunded so far, status (captured|refunded).

        Raises UnknownTool, before any query, for an ``order_id`` that is not a tool's argument
        (:func:`core.contract.world.tool_args_problem`: the model's value, never the store's fault)."""
        _check("get_payments", {"order_id": order_id})
        with self._connect() as conn:
            rows = conn.execute("SELECT * FROM payments WHERE order_id = ? ORDER BY payment_id", (order_id,)).fetchall()
        return [{**dict(r), "currency": "CAD"} for r in rows]

    def get_shipment(self, order_id: str) -> list[dict[str, Any]]:
        """The order's shipments with carrier, tracking and dates.

        Raises UnknownTool, before any query, for an ``order_id`` that is not a tool's argument
        (:func:`core.contract.world.tool_args_problem`: the model's value, never the store's fault)."""
        _check("get_shipment", {"order_id": order_id})
        with self._connect() as conn:
            rows = conn.execute("SELECT * FROM shipments WHERE order_id = ? ORDER BY shipment_id", (order_id,)).fetchall()
        return [dict(r) for r in rows]

    def get_customer(self, customer_id: str) -> dict[str, Any]:
        """The customer, or ``{"error": ...}``.

        Raises UnknownTool, before any query, for a ``customer_id`` that is not a tool's argument
        (:func:`core.contract.world.tool_args_problem`: the model's value, never the store's fault)."""
        _check("get_customer", {"customer_id": customer_id})
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM customers WHERE customer_id = ?", (customer_id,)).fetchone()
        return dict(row) if row else {"error": f"No customer {customer_id}"}

    def get_policy(self, rule_id: str) -> dict[str, Any]:
        """The text of policy rule ``rule_id`` (W1...Wn).

        Raises UnknownTool, before any query, for a ``rule_id`` that is not a tool's argument
        (:func:`core.contract.world.tool_args_problem`: the model's value, never the store's fault)."""
        _check("get_policy", {"rule_id": rule_id})
        for rule in load_policy().rules:
            if rule.rule_id == rule_id:
                return rule.model_dump()
        return {"error": f"No rule {rule_id}"}

    # -- write services -------------------------------------------------------------------------

    def lookup_operation(self, operation_id: str) -> dict[str, Any] | None:
        """The register's entry for ``operation_id`` (service, args, result, at, actor), or None."""
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM operations WHERE operation_id = ?", (operation_id,)).fetchone()
        if row is None:
            return None
        return {**dict(row), "args": json.loads(row["args"]), "result": json.loads(row["result"])}

    def _meet_fault(self, service: str) -> None:
        for fault in self.faults:
            if fault.service != service:
                continue
            for n in range(1, fault.times + 1):
                key = f"{service}:{fault.kind}:{n}"
                if key not in self.faults_seen:
                    self.faults_seen.append(key)
                    raise TransientServiceError(f"{service}: simulated {fault.kind} ({n} of {fault.times})")

    def _write(
        self, service: str, operation_id: str, args: dict[str, Any], do: Callable[[Any, str], dict[str, Any]]
    ) -> dict[str, Any]:
        if not operation_id:
            raise ResolverError(f"{service} needs an operation ID as its idempotency key.")
        with self._immediate() as conn:
            row = conn.execute("SELECT service, args, result FROM operations WHERE operation_id = ?", (operation_id,)).fetchone()
            if row is not None:
                if not same_call((row["service"], json.loads(row["args"])), (service, args)):
                    raise ServiceRefused(
                        f"Operation {operation_id} was already used for another call "
                        f"({row['service']} {row['args']}); an idempotency key names one call only"
                    )
                return json.loads(row["result"])
            self._meet_fault(service)
            at = iso(self.clock.now())
            result = do(conn, at)
            conn.execute(
                "INSERT INTO operations (operation_id, service, args, result, at, actor, seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (operation_id, service, json.dumps(args, default=str), json.dumps(result), at, self.actor, _max_seq(conn) + 1),
            )
        return result

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
        value = cad(amount)
        args = _refund_args(order_id, value, reason_code, payment_id)

        def do(conn: Any, at: str) -> dict[str, Any]:
            pay = conn.execute("SELECT * FROM payments WHERE payment_id = ?", (payment_id,)).fetchone()
            if pay is None or pay["order_id"] != order_id or pay["status"] != "captured":
                raise ServiceRefused(f"{payment_id} is not a captured charge of {order_id}")
            left = cad(pay["amount"]) - cad(pay["refunded"])
            if value <= 0:
                raise ServiceRefused(f"A refund must be more than 0.00 CAD, not {value}")
            if value > left:
                raise ServiceRefused(f"{value} CAD is more than the {left} CAD left on {payment_id}")
            self._expect(conn, expect, own)
            refunded = cad(pay["refunded"]) + value
            status = "refunded" if refunded == cad(pay["amount"]) else "captured"
            conn.execute("UPDATE payments SET refunded = ?, status = ? WHERE payment_id = ?", (str(refunded), status, payment_id))
            refund_id = derived_id("RF", operation_id)
            conn.execute(
                "INSERT INTO refunds (refund_id, operation_id, order_id, at, actor, payment_id, amount, reason_code) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (refund_id, operation_id, order_id, at, self.actor, payment_id, str(value), reason_code),
            )
            return {
                "refund_id": refund_id,
                "order_id": order_id,
                "payment_id": payment_id,
                "amount": str(value),
                "currency": "CAD",
            }

        return self._write("request_refund", operation_id, args, do)

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
        args = _reship_args(order_id, sku, quantity)

        def do(conn: Any, at: str) -> dict[str, Any]:
            line = conn.execute("SELECT quantity FROM order_lines WHERE order_id = ? AND sku = ?", (order_id, sku)).fetchone()
            if line is None:
                raise ServiceRefused(f"{sku} is not an item of {order_id}")
            if quantity < 1 or quantity > line["quantity"]:
                raise ServiceRefused(f"{order_id} has {line['quantity']} x {sku}, cannot reship {quantity}")
            self._expect(conn, expect, own)
            reship_id = derived_id("RS", operation_id)
            conn.execute(
                "INSERT INTO reshipments (reship_id, operation_id, order_id, at, actor, sku, quantity) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (reship_id, operation_id, order_id, at, self.actor, sku, quantity),
            )
            return {"reship_id": reship_id, "order_id": order_id, "sku": sku, "quantity": quantity}

        return self._write("reship_item", operation_id, args, do)

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
        args = _label_args(order_id, sku, reason, return_shipping)

        def do(conn: Any, at: str) -> dict[str, Any]:
            if conn.execute("SELECT 1 FROM order_lines WHERE order_id = ? AND sku = ?", (order_id, sku)).fetchone() is None:
                raise ServiceRefused(f"{sku} is not an item of {order_id}")
            other = conn.execute("SELECT label_id FROM return_labels WHERE order_id = ? AND sku = ?", (order_id, sku)).fetchone()
            if other is not None:
                raise ServiceRefused(f"{sku} on {order_id} already has return label {other['label_id']}")
            self._expect(conn, expect, own)
            label_id = derived_id("RL", operation_id)
            conn.execute(
                "INSERT INTO return_labels (label_id, operation_id, order_id, at, actor, sku, reason, return_shipping) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (label_id, operation_id, order_id, at, self.actor, sku, reason, return_shipping),
            )
            return {"label_id": label_id, "order_id": order_id, "sku": sku, "return_shipping": return_shipping}

        return self._write("create_return_label", operation_id, args, do)

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
        args = _reply_args(order_id, customer_id, text)

        def do(conn: Any, at: str) -> dict[str, Any]:
            if not text.strip():
                raise ServiceRefused("The reply is empty")
            if conn.execute("SELECT 1 FROM customers WHERE customer_id = ?", (customer_id,)).fetchone() is None:
                raise ServiceRefused(f"No customer {customer_id}")
            self._expect(conn, expect, own)
            reply_id = derived_id("MSG", operation_id)
            conn.execute(
                "INSERT INTO replies (reply_id, operation_id, order_id, at, actor, customer_id, text) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (reply_id, operation_id, order_id, at, self.actor, customer_id, text),
            )
            return {"reply_id": reply_id, "order_id": order_id, "customer_id": customer_id}

        return self._write("send_reply", operation_id, args, do)

    def call_service(
        self, operation_id: str, action: Action, *, expect: Sequence[Precondition] = (), own: Collection[str] = ()
    ) -> dict[str, Any]:
        """:meth:`core.contract.world.World.call_service`: the service of :data:`WRITE_SERVICES` that
        ``action`` names, with ``operation_id`` as its idempotency key, ``expect`` checked in the
        write's transaction (``own``: the run's own operations). Raises ServiceRefused,
        PreconditionFailed, TransientServiceError; ResolverError for a type without a service."""
        service = WRITE_SERVICES.get(action.type)
        if service is None:
            raise ResolverError(f"No write service for {action.type!r}; the services are {', '.join(WRITE_SERVICES)}.")
        if _service_delay_s:  # a slow service (tests of a call longer than the lease)
            time.sleep(_service_delay_s)
        return service(self, operation_id, action, expect, own)

    # -- expected state -------------------------------------------------------------------------

    @classmethod
    def _effects(
        cls,
        conn: Any,
        effect: str,
        order_id: str,
        since: datetime | None,
        sku: str = "",
        exclude: Collection[str] = (),
        since_seq: int | None = None,
    ) -> list[Any]:
        """The rows of ``effect`` on ``order_id`` (and ``sku``) made since the evidence was read,
        except the operations in ``exclude``, in commit order. "Since": with
        ``since_seq`` (the register's number when the evidence was read), every write numbered
        above it; for evidence saved before the register had numbers, every write at or after
        ``since`` (the same second counts as since, never as before); with neither, every write."""
        table, _ = EFFECT_TABLES[effect]
        sql = f"SELECT t.*, o.seq AS seq FROM {table} t LEFT JOIN operations o ON o.operation_id = t.operation_id WHERE t.order_id = ?"
        params: list[Any] = [order_id]
        if sku:
            sql += " AND t.sku = ?"
            params.append(sku)
        rows = conn.execute(sql + f" ORDER BY o.seq, {cls._TIEBREAK}", params).fetchall()
        return [r for r in rows if r["operation_id"] not in exclude and _since(r, since, since_seq)]

    def _problem(self, conn: Any, pre: Precondition, own: Collection[str]) -> str | None:
        if pre.kind == "payment":
            pay = conn.execute("SELECT * FROM payments WHERE payment_id = ?", (pre.payment_id,)).fetchone()
            if pay is None:
                return f"payment {pre.payment_id} is gone"
            if pay["status"] != pre.status or cad(pay["refunded"]) != pre.refunded:
                return (
                    f"payment {pre.payment_id} changed since the evidence was read: {pre.status}, {pre.refunded} CAD "
                    f"refunded then {pay['status']}, {pay['refunded']} CAD refunded"
                )
            return None
        _, id_col = EFFECT_TABLES[pre.effect]
        rows = self._effects(conn, pre.effect, pre.order_id, pre.since, pre.sku, own, pre.since_seq)
        if not rows:
            return None
        r = rows[0]
        what = pre.effect.replace("_", " ")
        on = f"{pre.sku} on {pre.order_id}" if pre.sku else pre.order_id
        return f"another {what} of {on} was made since the evidence was read: {r[id_col]} by operation {r['operation_id']} ({r['actor']}) at {r['at']}"

    def _expect(self, conn: Any, expect: Sequence[Precondition], own: Collection[str]) -> None:
        for pre in expect:
            problem = self._problem(conn, pre, own)
            if problem:
                raise PreconditionFailed(f"expected state does not hold: {problem}")

    def precondition_problem(self, pre: Precondition, own: Collection[str] = ()) -> str | None:
        """Why ``pre`` does not hold in the world now (one sentence), or None."""
        with self._connect() as conn:
            return self._problem(conn, pre, own)

    def effects_on(
        self, order_id: str, since: datetime | None, exclude: Collection[str] = (), since_seq: int | None = None
    ) -> list[dict[str, Any]]:
        """Every write on ``order_id`` since the evidence was read (refunds, reships, labels,
        replies), whoever made it, except the operations in ``exclude``: ``{"kind", "id",
        "line", "at", "operation_id", "actor"}``, in commit order. "Since" as in
        :meth:`_effects`: above register number ``since_seq`` when given, else at or after
        ``since``, else every write."""
        out = []
        with self._connect() as conn:
            for effect in EFFECT_TABLES:
                for r in self._effects(conn, effect, order_id, since, exclude=exclude, since_seq=since_seq):
                    out.append({"operation_id": r["operation_id"], "actor": r["actor"], "at": r["at"], "seq": r["seq"]})
        lines = {c["operation_id"]: c for c in self.changes()}
        result = []
        for e in sorted(out, key=lambda e: (e["seq"] is None, e["seq"] or 0, e["at"])):
            c = lines.get(e["operation_id"])
            if c is None:
                continue
            line = c["line"].rsplit(" [operation", 1)[0]
            result.append({**c, **e, "line": line})
        return result

    # -- what changed ---------------------------------------------------------------------------

    def changes(self) -> list[dict[str, Any]]:
        """Every write since the world was built, in the order of the operations register:
        ``{"kind", "id", "line", "at", "operation_id", ...}``."""
        with self._connect() as conn:
            out: list[dict[str, Any]] = []
            for r in conn.execute("SELECT * FROM refunds"):
                out.append(
                    {
                        "kind": "refund",
                        "id": r["refund_id"],
                        "at": r["at"],
                        "amount": r["amount"],
                        "operation_id": r["operation_id"],
                        "line": f"refund {r['refund_id']}: {r['amount']} CAD of {r['payment_id']} on {r['order_id']} ({r['reason_code']})",
                    }
                )
            for r in conn.execute("SELECT * FROM reshipments"):
                out.append(
                    {
                        "kind": "reship",
                        "id": r["reship_id"],
                        "at": r["at"],
                        "operation_id": r["operation_id"],
                        "line": f"reship {r['reship_id']}: {r['sku']} x {r['quantity']} on {r['order_id']}",
                    }
                )
            for r in conn.execute("SELECT * FROM return_labels"):
                out.append(
                    {
                        "kind": "return_label",
                        "id": r["label_id"],
                        "at": r["at"],
                        "operation_id": r["operation_id"],
                        "line": f"return label {r['label_id']}: {r['sku']} on {r['order_id']} ({r['reason']}, return shipping {r['return_shipping']})",
                    }
                )
            for r in conn.execute("SELECT * FROM replies"):
                out.append(
                    {
                        "kind": "reply",
                        "id": r["reply_id"],
                        "at": r["at"],
                        "operation_id": r["operation_id"],
                        "line": f"reply {r['reply_id']}: to {r['customer_id']} about {r['order_id']}",
                    }
                )
            order = dict(conn.execute("SELECT operation_id, seq FROM operations").fetchall())
        for c in out:
            c["line"] = f"{c['line']} [operation {c['operation_id']}]"
        return sorted(out, key=lambda c: order.get(c["operation_id"]) or 0)

    def refunds_of(self, order_id: str) -> list[dict[str, Any]]:
        """The refunds made on one order."""
        with self._connect() as conn:
            return [dict(r) for r in conn.execute("SELECT * FROM refunds WHERE order_id = ? ORDER BY at", (order_id,))]

    def register_count(self, operation_id: str) -> int:
        """How many register rows ``operation_id`` has (0 or 1: it is the primary key)."""
        with self._connect() as conn:
            return conn.execute("SELECT COUNT(*) FROM operations WHERE operation_id = ?", (operation_id,)).fetchone()[0]


def _check(tool: str, args: Any) -> None:
    """Raise UnknownTool with :func:`core.contract.world.tool_args_problem`'s sentence when ``args`` are
    not ``tool``'s own arguments (no query is made before this passes)."""
    problem = tool_args_problem(tool, args)
    if problem is not None:
        raise UnknownTool(f"{problem}.")


def _max_seq(conn: Any) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM operations").fetchone()[0])


def _since(row: Any, since: datetime | None, since_seq: int | None) -> bool:
    """Whether an effect row counts as made since the evidence was read (see ``PracticeWorld._effects``).
    A row without a register number (none should exist) counts as since: fail closed."""
    if since_seq is not None:
        return row["seq"] is None or int(row["seq"]) > since_seq
    if since is not None:
        return datetime.fromisoformat(row["at"]) >= since
    return True
