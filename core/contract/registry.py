"""Where a shop home's registry of approvers keeps its rows: the contract a back-end fulfils
(:mod:`core.stores.sqlite.registry`, :mod:`core.stores.postgres.registry`) and
:class:`core.engine.approvers.Registry` is handed. A back-end only stores rows; the
signatures, the seal and the keys are the engine's.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol


class ApproverChange(Protocol):
    """The writes of one registry change, inside one transaction of the back-end.
    A row is the eight values of :class:`Entry`, in its order."""

    def rows(self) -> list[tuple]:
        """Every row as this change sees it, oldest first."""
        ...

    def insert(self, row: tuple) -> None:
        """Add a row (``revoked_at`` None)."""
        ...

    def set_revoked(self, name: str, at: str, signature: str) -> None:
        """Mark ``name`` revoked at ``at`` (ISO 8601) with the owner's new ``signature`` (hex)."""
        ...

    def set_keys(self, name: str, private_key: str, recovery_key: str | None) -> None:
        """Replace ``name``'s encrypted private key and recovery key (PKCS#8 PEM)."""
        ...

    def replace_key(self, name: str, old: str, new: str) -> None:
        """Replace ``name``'s encrypted private key ``old`` by ``new``; nothing if it is no longer ``old``."""
        ...


class ApproverRows(Protocol):
    """Where a shop home's registry keeps its rows: names, roles, public keys, the
    owner's signatures and the encrypted private keys. The signatures, the seal
    (``approvers.json``) and the keys are :class:`Registry`'s; a back-end only stores rows
    (SQLite: :class:`core.stores.sqlite.registry.SqliteApproverRows`, ``approvers.sqlite``)."""

    path: Path

    def exists(self) -> bool:
        """True once a change made the rows' store."""
        ...

    def rows(self) -> list[tuple]:
        """Every row, oldest first (empty when none was ever written)."""
        ...

    def change(self) -> AbstractContextManager[ApproverChange]:
        """One change, all or nothing: committed when the block ends, rolled back on any
        exception. Raises StoreBusy, ReadOnlyFile or ResolverError (one sentence)."""
        ...
