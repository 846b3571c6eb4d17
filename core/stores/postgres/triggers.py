"""The team store's triggers, checked against the definitions the schema makes.

The store's rules live partly in triggers: the audit is append-only (``audit_no_update``,
``audit_no_delete``, ``audit_no_truncate``), the queue's counts and events are kept by triggers,
the queue's notifications are sent by triggers, and a store with role separation guards its
tables with triggers that ``resolver store roles setup`` makes. A trigger someone dropped,
disabled, pointed at another function, or whose function's body was replaced, breaks one rule
silently; so :func:`trigger_problems` compares what the database holds (``pg_trigger``,
``pg_proc``) with what the migrations applied and the setup create (the statements themselves,
read here, so there is one definition of each trigger), and names each one that differs.

What follows from a problem (:class:`core.stores.postgres.pool.Database`): the user who may
(the tables' owner, an administrator) makes a missing or altered trigger again at the store's
open, as the migration made it; for anyone else the store refuses every write with a sentence
naming the trigger, while reads, ``doctor`` and ``audit verify`` still work, so one dropped
trigger never locks a team out of its queue or hides what happened to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import psycopg

from core.stores.postgres.guards import CREATE_TRIGGER, make_again, setup_triggers
from core.stores.postgres.schema import MIGRATIONS, applied

__all__ = [
    "Trigger",
    "expected_triggers",
    "repair_triggers",
    "trigger_problems",
]

_DROP_TRIGGER = re.compile(r"^\s*DROP TRIGGER (?:IF EXISTS )?(\w+) ON (\w+)", re.DOTALL)
_DROP_FUNCTION = re.compile(r"^\s*DROP FUNCTION (?:IF EXISTS )?(\w+)\b.*\bCASCADE\b", re.DOTALL)
_DROP_TABLE = re.compile(r"^\s*DROP TABLE (?:IF EXISTS )?(\w+)", re.DOTALL)
_CREATE_FUNCTION = re.compile(r"^\s*CREATE (?:OR REPLACE )?FUNCTION (\w+)\(\) RETURNS trigger\b.*?AS \$\$(.*?)\$\$", re.DOTALL)

_TYPE_ROW, _TYPE_BEFORE = 1, 2
_EVENT_BITS = {"INSERT": 4, "DELETE": 8, "UPDATE": 16, "TRUNCATE": 32}
"""``pg_trigger.tgtype``'s bits (PostgreSQL's ``TRIGGER_TYPE_*``)."""


@dataclass(frozen=True)
class Trigger:
    """One trigger as the schema makes it: its name, table, ``tgtype`` bits, function and the
    function's body, and the statement that creates it (to make it again)."""

    name: str
    table: str
    tgtype: int
    function: str
    body: str | None
    statement: str


def _part(statement: str, part: str) -> str:
    """The ``table`` or ``function`` a ``CREATE TRIGGER`` statement names."""
    m = CREATE_TRIGGER.match(statement)
    return "" if m is None else m.group(4 if part == "table" else 6)


@lru_cache(maxsize=64)
def _from_migrations(versions: frozenset[int]) -> tuple[dict[str, str], dict[str, str]]:
    """The triggers (name → statement) and trigger functions (name → body) the migrations of
    ``versions`` leave, each the last one made in migration order (a later migration may drop
    or replace one)."""
    triggers: dict[str, str] = {}
    bodies: dict[str, str] = {}
    for version, _, statements in MIGRATIONS:
        if version not in versions or version == 3:  # 3 is the practice world's tables: no trigger
            continue
        for statement in statements():
            if m := CREATE_TRIGGER.match(statement):
                triggers[m.group(1)] = statement
            elif m := _DROP_TRIGGER.match(statement):
                triggers.pop(m.group(1), None)
            elif m := _DROP_FUNCTION.match(statement):  # CASCADE: its triggers go with it
                triggers = {n: st for n, st in triggers.items() if _part(st, "function") != m.group(1)}
            elif m := _DROP_TABLE.match(statement):  # its triggers go with it
                triggers = {n: st for n, st in triggers.items() if _part(st, "table") != m.group(1)}
            elif m := _CREATE_FUNCTION.match(statement):
                bodies[m.group(1)] = m.group(2)
    return triggers, bodies


def _parsed(statement: str, bodies: dict[str, str]) -> Trigger:
    m = CREATE_TRIGGER.match(statement)
    assert m is not None  # only statements the pattern matched are kept
    name, timing, events, table, level, function = m.groups()
    tgtype = (_TYPE_ROW if level == "ROW" else 0) | (_TYPE_BEFORE if timing == "BEFORE" else 0)
    for event in events.split(" OR "):
        tgtype |= _EVENT_BITS[event.split()[0]]
    return Trigger(name, table, tgtype, function, bodies.get(function), statement)


def expected_triggers(conn: psycopg.Connection[Any]) -> dict[str, Trigger]:
    """The triggers the schema of ``conn`` should hold: those of its applied migrations, and,
    once ``store roles setup`` ran (a row in ``store_roles``), the guards it makes."""
    versions = frozenset(applied(conn))
    triggers, bodies = _from_migrations(versions)
    statements = dict(triggers)
    if 12 in versions and conn.execute("SELECT 1 FROM store_roles").fetchone():
        tables = {str(r[0]) for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
        for statement in setup_triggers(tables, journal=17 in versions):
            statements[CREATE_TRIGGER.match(statement).group(1)] = statement  # type: ignore[union-attr]
    return {name: _parsed(statement, bodies) for name, statement in statements.items()}


def trigger_problems(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """Each expected trigger (:func:`expected_triggers`) that the schema of ``conn`` lacks or
    holds otherwise, by name, with what is wrong (``missing``, ``disabled``, ``altered: ...``);
    empty when every one is as the schema makes it. Reads only the catalogs (any user may)."""
    expected = expected_triggers(conn)
    if not expected:
        return {}
    rows = conn.execute(
        "SELECT t.tgname, c.relname, t.tgtype, t.tgenabled, p.proname, p.prosrc FROM pg_trigger t "
        "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid "
        "WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal"
    ).fetchall()
    held = {str(r[0]): r for r in rows}
    problems: dict[str, str] = {}
    for name, want in sorted(expected.items()):
        row = held.get(name)
        if row is None:
            problems[name] = f"missing from {want.table}"
            continue
        _, table, tgtype, enabled, function, body = row
        if table != want.table or int(tgtype) != want.tgtype or function != want.function:
            problems[name] = f"altered: not the trigger on {want.table} the schema makes"
        elif enabled != "O":
            problems[name] = f"disabled on {want.table}"
        elif want.body is not None and body != want.body:
            problems[name] = f"altered: its function {function} is not the one the schema makes"
    return problems


def repair_triggers(conn: psycopg.Connection[Any], problems: dict[str, str]) -> list[str]:
    """Make again, as the schema makes it, each trigger of ``problems`` whose trigger (not its
    function) is wrong, in one transaction of ``conn``; returns the names made again. A user who
    may not (an approver's, on a store with role separation) changes nothing: ``[]``."""
    expected = expected_triggers(conn)
    fixable = [n for n, why in problems.items() if n in expected and "its function" not in why]
    if not fixable:
        return []
    try:
        with conn.transaction():
            for name in fixable:
                make_again(conn, expected[name].statement)
    except psycopg.errors.InsufficientPrivilege:
        return []
    return fixable
