"""The one PostgreSQL database of a URL in a process, opened as every part opens it: its schema made
or upgraded (:func:`core.stores.postgres.schema.migrate`), whether it separates roles asked, and
its triggers checked and made again where they may be (:mod:`core.stores.postgres.triggers`).

This module stands above the pieces it calls: the pool and its sentences are
:mod:`core.stores.postgres.pool`, the migrations :mod:`core.stores.postgres.schema`, the triggers'
check :mod:`core.stores.postgres.triggers`; none of those imports this one. It holds only the
opening: every other name (:class:`~core.stores.postgres.pool.Database`, the timeouts, the
sentences) is imported from :mod:`core.stores.postgres.pool`, the module that defines it, so a
test that patches one patches the name the pool reads.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg

from core.stores.postgres.pool import Database
from core.stores.postgres.schema import migrate
from core.stores.postgres.triggers import repair_triggers, trigger_problems

__all__ = ["database", "forget"]


class _Triggers:
    """The triggers' check a pool runs (:class:`core.stores.postgres.pool.TriggerCheck`)."""

    def problems(self, conn: psycopg.Connection[Any]) -> dict[str, str]:
        return trigger_problems(conn)

    def repair(self, conn: psycopg.Connection[Any], problems: dict[str, str]) -> list[str]:
        return repair_triggers(conn, problems)


_TRIGGERS = _Triggers()

_databases: dict[str, Database] = {}
"""The pool of each URL opened in this process (:func:`database` makes, :func:`forget` closes)."""
_databases_lock = threading.Lock()


def database(url: str) -> Database:
    """The one :class:`Database` of ``url`` in this process (made, and its schema migrated, at
    the first call). Raises ResolverError with one sentence when it cannot be reached."""
    with _databases_lock:
        db = _databases.get(url)
        if db is None:
            db = _databases[url] = Database(url, on_open=migrate, triggers=_TRIGGERS)
        return db


def forget(url: str) -> None:
    """Close and forget the pool of ``url`` in this process (a test's schema about to be dropped)."""
    with _databases_lock:
        db = _databases.pop(url, None)
    if db is not None:
        db.close()
