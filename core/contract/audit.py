"""The audit's rows as every back-end stores them: the columns, the hash chain's rule, the
``binds`` value and which decisions end an earlier approval.

This is the contract between the engine, which signs and verifies the chain
(:mod:`core.engine.auditchain`), and the back-ends, which append and read the rows
(:mod:`core.stores.sqlite.audit`, :mod:`core.stores.postgres.audit`): both sides read the
one statement of each rule here, so a back-end never reaches up into the engine for it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core.ground.errors import StaleCheckpoint


class AuditMoved(StaleCheckpoint):
    """A signed decision named a ``prev`` that is no longer the newest audit row's hash: another
    decision was recorded between signing and saving. Nothing was written; sign again."""


MARK_DECISIONS = ("claim", "release", "handover", "snooze")
"""The audit's ``decision`` of each mark (:data:`core.engine.signing.SIGNED_DECISIONS` holds them)."""

REGISTRY_PREFIX = "registry:"
"""How the ``decision`` of an audit row recording a registry change starts: ``registry:init``,
``registry:add``, ``registry:revoke``, ``registry:recover`` (signed by the owner, :mod:`core.engine.signing`)."""

GENESIS = "0" * 64
"""The ``prev`` of the first chained row."""

HEAD_FILE = "audit.head"
"""The chain's length and latest hash, signed, in the home folder."""

HASHED = ("id", "run_id", "decision", "role", "name", "digest", "at", "detail", "run_uid", "prev", "sig")
"""The audit columns every row's hash covers, in order."""

COLUMNS = (*HASHED, "binds")
"""Every chain column: :data:`HASHED`, then ``binds``, which a row's hash covers only when set
(so rows written before the column existed keep their hashes)."""

TRIGGERS = ("audit_no_update", "audit_no_delete")
"""The append-only triggers of the audit table (made by the SQLite store, :mod:`core.stores.sqlite.checkpoint`)."""


def as_row(values: Any) -> dict[str, Any]:
    """An audit row as read: a dict of :data:`COLUMNS` from a sequence of their values. A value
    stored as a BLOB (only SQL outside resolver writes one) is read as the text ``blob:<hex>``,
    so the row's hash and signature no longer match and ``audit verify`` reports it, never a crash."""
    return {c: f"blob:{v.hex()}" if isinstance(v, bytes) else v for c, v in zip(COLUMNS, values, strict=True)}


def row_hash(row: dict[str, Any] | tuple) -> str:
    """SHA-256 (hex) of an audit row's canonical JSON: a list of the :data:`HASHED` values
    (NULL as ``null``) followed by ``binds`` when it is set, separators without spaces, UTF-8.
    ``row`` is a dict of :data:`COLUMNS` or a tuple in their order."""
    if isinstance(row, dict):
        values = [row.get(c) for c in HASHED]
        binds = row.get("binds")
    else:
        values = [f"blob:{v.hex()}" if isinstance(v, bytes) else v for v in row]  # as :func:`as_row` reads it
        if len(values) != len(COLUMNS):
            raise ValueError(f"an audit row has {len(COLUMNS)} columns, not {len(values)}")
        binds = values.pop()
    if binds is not None:
        values.append(binds)
    return hashlib.sha256(_encode_row(values).encode("utf-8")).hexdigest()


_encode_list = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _encode_row(values: list[Any]) -> str:
    """``json.dumps(values, ensure_ascii=False, separators=(",", ":"))``, the same text: a row's
    values are text, whole numbers and None, written here with the encoder's own string escaper
    (``json.encoder.encode_basestring``) instead of a JSON encoder made per call (that encoder cost half
    of a decision's hash of the newest row); any other value goes through the encoder."""
    pieces = []
    for v in values:
        kind = type(v)
        if kind is str:
            pieces.append(_encode_string(v))
        elif v is None:
            pieces.append("null")
        elif kind is int:
            pieces.append(int.__repr__(v))
        else:
            return _encode_list(values)
    return "[" + ",".join(pieces) + "]"


_encode_string = json.encoder.encode_basestring


def make_binds(length: int, prev: str, *, world: str | None = None, ops: list[str] | None = None) -> str:
    """The ``binds`` value of a signed row: canonical JSON of ``head``, the chain as the
    signer saw it (``length`` rows, the newest one's hash ``prev``), and for an approval the world
    ``world`` fingerprint (hex) it was approved against and the operation IDs ``ops`` it commits to."""
    body: dict[str, Any] = {"head": f"{length}:{prev}"}
    if world is not None:
        body["world"] = world
    if ops is not None:
        body["ops"] = list(ops)
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_binds(row: dict[str, Any]) -> dict[str, Any] | None:
    """A row's ``binds`` as a dict (``head``: str, optional ``world``: str and ``ops``: list of
    str), or None when the row has none (an older row, a system row).

    Raises:
        ValueError: it is not what :func:`make_binds` writes (not JSON, nested too deep, another
            shape): the row was edited outside resolver.
    """
    text = row.get("binds")
    if text is None:
        return None
    try:
        body = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        body = None
    if (
        not isinstance(body, dict)
        or not isinstance(body.get("head"), str)
        or not isinstance(body.get("world", ""), str)
        or not (isinstance(body.get("ops", []), list) and all(isinstance(op, str) for op in body.get("ops", [])))
    ):
        raise ValueError("not a binds value")
    return body


ENDS_APPROVAL = ("approve", "reject", "refresh")
"""Decisions that, in a later row of the same run, end an earlier approval: a new
decision is recorded only on a waiting run, so the earlier approval no longer stood. Every
row whose decision starts with :data:`REFUSED_PREFIX` ends it too: a lapse, an execution the
executor refused, a precondition. The one statement of the rule: :func:`ends_approval` in
Python, :func:`ends_approval_sql` in a back-end's query."""

REFUSED_PREFIX = "refused"
"""How the ``decision`` of a refusal row starts (``refused:expiry``, ``refused:unauthorized`` ...)."""


def ends_approval(decision: str) -> bool:
    """True when a later row of a run with this ``decision`` ends the run's earlier approval
    (:data:`ENDS_APPROVAL`, or any refusal: :data:`REFUSED_PREFIX`)."""
    return decision in ENDS_APPROVAL or str(decision).startswith(REFUSED_PREFIX)


def ends_approval_sql(placeholder: str = "?") -> tuple[str, tuple[str, ...]]:
    """:func:`ends_approval` as a SQL condition on the column ``decision`` and its parameters,
    for a back-end's query (``placeholder``: ``?`` for SQLite, ``%s`` for psycopg)."""
    marks = ", ".join([placeholder] * len(ENDS_APPROVAL))
    return f"(decision IN ({marks}) OR decision LIKE {placeholder})", (*ENDS_APPROVAL, REFUSED_PREFIX + "%")
