"""The approvers registry's rows in PostgreSQL: :class:`PostgresApproverRows`, behind
:class:`core.contract.registry.ApproverRows`.

Table ``approvers`` (migration 2 of :mod:`core.stores.postgres.schema`): the same eight columns as
the SQLite back-end's, an identity ``n`` keeping the order rows were added in, and a unique index
on ``lower(name)`` (a name is one entry whatever its case). ``registry_made`` holds a row once a
change made the registry (:meth:`PostgresApproverRows.exists`). The writes are the shared
:class:`core.stores.common.RegistryChange`, each change one transaction.

The rows hold no key material: ``private_key`` is '' and
``recovery_key`` NULL (each approver's encrypted key is a file on their machine,
:mod:`core.engine.keyfiles`); a store of an earlier release keeps its keys in the rows until each is
moved at its first unlock (:meth:`core.engine.approvers.Registry.unlock`). The columns stay, so no
migration was needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from core.stores.common import RegistryChange
from core.stores.postgres.database import database
from core.stores.postgres.pool import QmarkConnection


class PostgresApproverRows:
    """The rows of the approvers registry in the PostgreSQL database (and schema) of ``url``.
    Opening it creates nothing but the schema. Raises ResolverError when unreachable."""

    def __init__(self, url: str) -> None:
        self.db = database(url)
        self.path = self.db.path

    def exists(self) -> bool:
        """True once a change made the registry."""
        with self.db.read() as conn:
            return conn.execute("SELECT EXISTS (SELECT 1 FROM registry_made)").fetchone()[0] is True  # type: ignore[index]

    def rows(self) -> list[tuple]:
        """Every row, oldest first."""
        with self.db.read() as conn:
            return RegistryChange(QmarkConnection(conn), order="n").rows()

    @contextmanager
    def change(self) -> Iterator[RegistryChange]:
        """One change in one transaction: committed at the end, rolled back on any exception.
        Raises StoreBusy or ResolverError (one sentence); a name taken raises psycopg's
        UniqueViolation."""
        with self.db.transaction() as conn:
            conn.execute("INSERT INTO registry_made VALUES (true) ON CONFLICT DO NOTHING")
            yield RegistryChange(QmarkConnection(conn), order="n")
