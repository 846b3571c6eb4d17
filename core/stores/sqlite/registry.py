"""The approvers registry's table in SQLite (``approvers.sqlite``): the rows of
:class:`core.engine.approvers.Registry`, behind :class:`core.contract.registry.ApproverRows`.

Table ``approvers``: ``name`` (key, case-insensitive), ``role``, ``public_key``, ``added_at``,
``revoked_at``, ``signature``, ``private_key``, ``recovery_key``, the columns it always had. The
signatures, the seal and the keys' encryption are the registry's (:mod:`core.engine.approvers`); this
module only stores and reads rows, each change in one ``BEGIN IMMEDIATE`` transaction.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.stores.common import RegistryChange
from core.stores.sqlite.database import Database

REGISTRY_FILE = "approvers.sqlite"

_CREATE = (
    "CREATE TABLE IF NOT EXISTS approvers (name TEXT PRIMARY KEY COLLATE NOCASE, role TEXT NOT NULL, "
    "public_key TEXT NOT NULL, added_at TEXT NOT NULL, revoked_at TEXT, signature TEXT NOT NULL, "
    "private_key TEXT NOT NULL, recovery_key TEXT)"
)


def _create_table(conn: sqlite3.Connection) -> None:
    conn.execute(_CREATE)


class SqliteApproverRows:
    """The rows of the registry of the home folder ``root``, in ``approvers.sqlite`` (mode 0600,
    made at the first change). Opening it creates nothing."""

    def __init__(self, root: Path) -> None:
        self.path = Path(root) / REGISTRY_FILE
        self._db: Database | None = None

    def database(self) -> Database:
        """The registry's database, the file made (mode 0600) with its table at the first call."""
        if self._db is None:
            new = not self.path.exists()
            if new:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
                os.close(fd)
            self._db = Database(self.path, label="the approvers registry", on_open=_create_table)
        return self._db

    def exists(self) -> bool:
        """True once a change made the file."""
        return self.path.exists()

    def rows(self) -> list[tuple]:
        """Every row, oldest first (empty when the file does not exist)."""
        if not self.path.exists():
            return []
        with self.database().read() as conn:
            return RegistryChange(conn).rows()

    @contextmanager
    def change(self) -> Iterator[RegistryChange]:
        """One change in a ``BEGIN IMMEDIATE`` transaction: committed at the end, rolled back on
        any exception. Raises StoreBusy, ReadOnlyFile, ResolverError (one sentence)."""
        with self.database().immediate() as conn:
            yield RegistryChange(conn)
