"""The Larkfield practice world in SQLite: ``larkfield.sqlite``, its read-only tools and write services.

The SQLite implementation of the world's contract (:class:`core.world.World`, issue 22); the
tools' names, the register's call shapes and the services' errors are :mod:`core.world`'s.

The world is built on first use from ``data/world.json``. It holds customers, catalog, orders,
payments and shipments, what the write services did (refunds, reshipments, return labels,
replies) and the **operations register**: for each operation ID, the service, its arguments and
its result. The register is what the executor reconciles with after a crash (seed 000, "What
survives a crash").

Write services take an operation ID as their idempotency key: a second call with the same ID
changes nothing and returns the first result. Each checks its own invariants at the moment of
the write and raises :class:`ServiceRefused` with the service's sentence, for instance
``PAY-507862-2 is not a captured charge of LK-507862``. Simulated faults raise
:class:`TransientServiceError` once each and are recorded in the caller's ``faults_seen``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlite_utils

from core.clock import Clock, SystemClock, iso
from core.data import Fault, load_policy, load_world_data
from core.errors import ResolverError
from core.state import EFFECT_TABLES, Action, Precondition, cad
from core.stores.sqlite.database import Database
from core.world import (
    READ_TOOLS,
    TOOL_ARGS,
    WRITE_SERVICES,
    PreconditionFailed,
    ServiceRefused,
    TransientServiceError,
    UnknownTool,
    WorldMissing,
    _label_args,
    _refund_args,
    _reply_args,
    _reship_args,
    derived_id,
    same_call,
)

SERVICE_DELAY_ENV = "RESOLVER_SERVICE_DELAY_S"
"""Test hook: every write service of a new process waits this many seconds (real time) before it
writes, as a slow payment provider would; read once at import."""

try:
    _service_delay_s = max(0.0, float(os.environ.get(SERVICE_DELAY_ENV) or 0))
except ValueError:
    _service_delay_s = 0.0


class SqliteWorld:
    """The practice world in ``path`` (``larkfield.sqlite``), built from ``data/`` on first use.

    Args:
        path: the database file.
        clock: stamps the writes.
        faults: simulated faults of this ticket (``data/tickets``), met once each.
        faults_seen: the run's list of faults already met; appended to in place.
        actor: who writes (a run ID, or ``manual`` for the weekend phone call).
    """

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
        self.db = _database(self.path)
        self.db.connection()  # built on first use

    # -- connections and building ---------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with self.db.read() as conn:
            yield conn

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        with self.db.immediate() as conn:
            yield conn

    @staticmethod
    def _ensure_built(conn: sqlite3.Connection, key: Path | None = None) -> None:
        """Build the world in a new (or rebuilt) file; another process building it at the same
        moment is waited for, and the tables are made once. A file whose home has history
        (:func:`check_world_file`) is never rebuilt here: its register would be lost."""
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'operations'").fetchone():
            SqliteWorld._migrate(conn)
            return
        if key is not None and key in _no_rebuild:
            raise WorldMissing(_missing_sentence(key, "lost its tables"))
        SqliteWorld._build(conn)

    @staticmethod
    def _build(conn: sqlite3.Connection) -> None:
        data = load_world_data()
        db = sqlite_utils.Database(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'operations'").fetchone():
                conn.execute("ROLLBACK")
                return
            db.table("customers").insert_all([c.model_dump() for c in data.customers], pk="customer_id")
            db.table("catalog").insert_all([{**i.model_dump(), "price": str(i.price)} for i in data.catalog], pk="sku")
            db.table("orders").insert_all(
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
                pk="order_id",
            )
            db.table("order_lines").insert_all(
                [
                    {"order_id": o.order_id, "sku": l.sku, "quantity": l.quantity, "unit_price": str(l.unit_price)}
                    for o in data.orders
                    for l in o.lines
                ],
                pk=("order_id", "sku"),
            )
            db.table("payments").insert_all(
                [
                    {**p.model_dump(), "amount": str(p.amount), "refunded": str(p.amount) if p.status == "refunded" else "0.00"}
                    for p in data.payments
                ],
                pk="payment_id",
            )
            db.table("payments").create_index(["order_id"])
            db.table("shipments").insert_all([s.model_dump() for s in data.shipments], pk="shipment_id")
            db.table("shipments").create_index(["order_id"])
            common = {"operation_id": str, "order_id": str, "at": str, "actor": str}
            db.table("refunds").create(
                {"refund_id": str, **common, "payment_id": str, "amount": str, "reason_code": str}, pk="refund_id"
            )
            db.table("reshipments").create({"reship_id": str, **common, "sku": str, "quantity": int}, pk="reship_id")
            db.table("return_labels").create(
                {"label_id": str, **common, "sku": str, "reason": str, "return_shipping": str}, pk="label_id"
            )
            db.table("return_labels").create_index(["order_id", "sku"], unique=True)
            db.table("replies").create({"reply_id": str, **common, "customer_id": str, "text": str}, pk="reply_id")
            db.table("operations").create(
                {"operation_id": str, "service": str, "args": str, "result": str, "at": str, "actor": str, "seq": int},
                pk="operation_id",
            )
            conn.execute("CREATE UNIQUE INDEX operations_seq ON operations (seq)")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        """Give a register made before issue 20 its ``seq`` column: each entry's number in commit
        order. Entries were only ever appended, one write transaction at a time, and never
        deleted, so their rowid order is the order in which they were committed. Another process
        migrating at the same moment is waited for; the column is added once."""
        if _has_seq(conn):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not _has_seq(conn):
                conn.execute("ALTER TABLE operations ADD COLUMN seq INTEGER")
                conn.execute("UPDATE operations SET seq = rowid")
                conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS operations_seq ON operations (seq)")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def reset(self) -> None:
        """Rebuild the world from ``data/`` (every write since is forgotten): :func:`reset_world`."""
        reset_world(self.path)

    # -- read-only tools ------------------------------------------------------------------------

    def call_tool(self, tool: str, args: dict[str, Any]) -> Any:
        """Run one read-only tool and return its JSON-ready evidence.

        Raises:
            UnknownTool: no such tool, or arguments other than the tool's own.
        """
        if tool not in TOOL_ARGS:
            raise UnknownTool(f"No tool {tool!r}; the tools are {', '.join(READ_TOOLS)}.")
        if set(args) != set(TOOL_ARGS[tool]):
            raise UnknownTool(f"{tool} takes {', '.join(TOOL_ARGS[tool])}, not {', '.join(sorted(args)) or 'nothing'}.")
        return getattr(self, tool)(**args)

    def read_tool(self, tool: str, args: dict[str, Any]) -> tuple[Any, int]:
        """Run one read-only tool (:meth:`call_tool`) and return ``(result, seq)``: ``seq`` is the
        operations register's number (:meth:`register_seq`) read in the same read transaction as
        the result, so every write numbered above it was committed after the evidence was read,
        and every write at or below it is in the result (issue 20: "since" decided by the
        world's own order of events, never by the clock's resolution).

        Raises:
            UnknownTool: as :meth:`call_tool`.
        """
        with self._connect() as conn:
            conn.execute("BEGIN")  # one snapshot for the result and the number (WAL)
            try:
                result = self.call_tool(tool, args)
                seq = _max_seq(conn)
            finally:
                conn.execute("COMMIT")
        return result, seq

    def register_seq(self) -> int:
        """The number of the newest entry of the operations register (0 when empty). Numbers are
        given in commit order, inside each write's transaction: 1, 2, 3 ..."""
        with self._connect() as conn:
            return _max_seq(conn)

    def get_order(self, order_id: str) -> dict[str, Any]:
        """The order with its lines (CAD as strings), or ``{"error": ...}``."""
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
        """Every payment of the order: amount, refunded so far, status (captured|refunded)."""
        with self._connect() as conn:
            rows = conn.execute("SELECT * FROM payments WHERE order_id = ? ORDER BY payment_id", (order_id,)).fetchall()
        return [{**dict(r), "currency": "CAD"} for r in rows]

    def get_shipment(self, order_id: str) -> list[dict[str, Any]]:
        """The order's shipments with carrier, tracking and dates."""
        with self._connect() as conn:
            rows = conn.execute("SELECT * FROM shipments WHERE order_id = ? ORDER BY shipment_id", (order_id,)).fetchall()
        return [dict(r) for r in rows]

    def get_customer(self, customer_id: str) -> dict[str, Any]:
        """The customer, or ``{"error": ...}``."""
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM customers WHERE customer_id = ?", (customer_id,)).fetchone()
        return dict(row) if row else {"error": f"No customer {customer_id}"}

    def get_policy(self, rule_id: str) -> dict[str, Any]:
        """The text of policy rule ``rule_id`` (W1...Wn)."""
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
        self, service: str, operation_id: str, args: dict[str, Any], do: Callable[[sqlite3.Connection, str], dict[str, Any]]
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

        def do(conn: sqlite3.Connection, at: str) -> dict[str, Any]:
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

        def do(conn: sqlite3.Connection, at: str) -> dict[str, Any]:
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

        def do(conn: sqlite3.Connection, at: str) -> dict[str, Any]:
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

        def do(conn: sqlite3.Connection, at: str) -> dict[str, Any]:
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
        service = WRITE_SERVICES.get(action.type)
        if service is None:
            raise ResolverError(f"No write service for {action.type!r}; the services are {', '.join(WRITE_SERVICES)}.")
        if _service_delay_s:  # a slow service (tests of a call longer than the lease)
            time.sleep(_service_delay_s)
        return service(self, operation_id, action, expect, own)

    # -- expected state (issue 11) --------------------------------------------------------------

    @staticmethod
    def _effects(
        conn: sqlite3.Connection,
        effect: str,
        order_id: str,
        since: datetime | None,
        sku: str = "",
        exclude: Collection[str] = (),
        since_seq: int | None = None,
    ) -> list[sqlite3.Row]:
        """The rows of ``effect`` on ``order_id`` (and ``sku``) made since the evidence was read,
        except the operations in ``exclude``, in commit order. "Since" (issue 20): with
        ``since_seq`` (the register's number when the evidence was read), every write numbered
        above it; for evidence saved before the register had numbers, every write at or after
        ``since`` (the same second counts as since, never as before); with neither, every write."""
        table, _ = EFFECT_TABLES[effect]
        sql = f"SELECT t.*, o.seq AS seq FROM {table} t LEFT JOIN operations o ON o.operation_id = t.operation_id WHERE t.order_id = ?"
        params: list[Any] = [order_id]
        if sku:
            sql += " AND t.sku = ?"
            params.append(sku)
        rows = conn.execute(sql + " ORDER BY o.seq, t.rowid", params).fetchall()
        return [r for r in rows if r["operation_id"] not in exclude and _since(r, since, since_seq)]

    def _problem(self, conn: sqlite3.Connection, pre: Precondition, own: Collection[str]) -> str | None:
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

    def _expect(self, conn: sqlite3.Connection, expect: Sequence[Precondition], own: Collection[str]) -> None:
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

    def forget_replies(self, operations: list[str]) -> int:
        """Empty the text of the replies made by ``operations`` with SQLite's ``secure_delete``
        on and the WAL truncated after (:func:`core.stores.sqlite.files.scrub`); the reply rows
        and the register stay. Returns how many replies were emptied."""
        from core.stores.sqlite.files import forget_replies, scrub

        emptied: list[int] = []
        scrub(self.db, lambda conn: emptied.append(forget_replies(conn, operations)))
        return emptied[0]


def _has_seq(conn: sqlite3.Connection) -> bool:
    return any(r[1] == "seq" for r in conn.execute("PRAGMA table_info(operations)"))


def _max_seq(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM operations").fetchone()[0])


def _since(row: sqlite3.Row, since: datetime | None, since_seq: int | None) -> bool:
    """Whether an effect row counts as made since the evidence was read (see ``SqliteWorld._effects``).
    A row without a register number (none should exist) counts as since: fail closed."""
    if since_seq is not None:
        return row["seq"] is None or int(row["seq"]) > since_seq
    if since is not None:
        return datetime.fromisoformat(row["at"]) >= since
    return True


# -- what each write service records in the register (issue 20: one description of a call) --------


_no_rebuild: set[Path] = set()
"""World files (resolved) of homes with history: never built again silently in this process."""


def _missing_sentence(path: Path, what: str) -> str:
    return (
        f"The practice world {path} {what}, but this home has runs; rebuilding it would lose its operations "
        "register and a resume could write again. Restore larkfield.sqlite from a backup (`resolver restore`), "
        "or start afresh with `resolver reset --all`."
    )


def check_world_file(path: Path | str, has_history: bool) -> None:
    """Refuse a practice world that cannot be used as it is (issue 13).

    A directory in its place is refused always; a missing or zero-length file only when the home
    has history (``has_history``: runs or audit rows), since building it again would forget
    which operations were done. A fresh home builds it. Once checked with history, this process
    never rebuilds the file silently (a file deleted later is refused the same way).

    Raises:
        WorldMissing: with a sentence saying how to restore or reset.
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        raise WorldMissing(
            f"The practice world {path} is not a file; move it away, then restore larkfield.sqlite from a backup "
            "or start afresh with `resolver reset --all`."
        )
    if not has_history:
        return
    _no_rebuild.add(path.resolve())
    if not path.exists():
        raise WorldMissing(_missing_sentence(path, "is missing"))
    if path.stat().st_size == 0:
        raise WorldMissing(_missing_sentence(path, "is empty"))


def reset_world(path: Path | str) -> None:
    """Delete the practice world in ``path`` (with its WAL and SHM) and build it again from
    ``data/``: every write since is forgotten (``resolver reset --all``). Works on a missing,
    empty or damaged file too. Raises WorldMissing when a directory is in its place."""
    path = Path(path)
    if path.exists() and not path.is_file():
        check_world_file(path, False)
    _database(path).close()
    _no_rebuild.discard(path.resolve())
    path.unlink(missing_ok=True)
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    _database(path).connection()  # a new file: built again by the first connection


_databases: dict[Path, Database] = {}
_databases_lock = threading.Lock()


def register_entries(path: Path | str) -> list[dict[str, Any]]:
    """:func:`core.stores.register_entries` on a SQLite world file, opened read only (``mode=ro``).

    Raises:
        ValueError: the file is not a database, its register cannot be read (a column renamed),
            or its ``operations`` table is gone while the writes' own tables remain.
    """
    path = Path(path)
    if not path.is_file():
        return []
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "operations" not in tables:
                if tables & {"refunds", "reshipments", "return_labels", "replies"}:
                    raise ValueError("the world holds writes but no operations register")
                return []
            order = "seq" if _has_seq(conn) else "rowid"
            rows = conn.execute(f"SELECT operation_id, service, actor, at FROM operations ORDER BY {order}").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise ValueError(str(exc)) from None
    return [{"operation_id": r[0], "service": r[1], "actor": r[2], "at": r[3]} for r in rows]


def _database(path: Path) -> Database:
    """The one :class:`~core.stores.sqlite.database.Database` of a world file in this process: every World on
    the same file shares its per-thread connections."""
    key = path.resolve()
    with _databases_lock:
        db = _databases.get(key)
        if db is None:
            db = _databases[key] = Database(
                path,
                label="the practice world",
                on_open=lambda conn: SqliteWorld._ensure_built(conn, key),
                row_factory=sqlite3.Row,
            )
        return db
