"""The per-shop parts in PostgreSQL: :class:`PostgresParts`, behind
:class:`core.contract.store.ShopParts`.

Table ``shop_parts`` (migration 6 of :mod:`core.stores.postgres.schema`): one row per part,
``name`` (``approvers.json``, ``audit.head``, ``approval.key``, ``clock.json``), ``body`` (the
bytes the SQLite back-end keeps in the file of that name) and ``set_at`` (the database's time of
the last write). Every machine pointed at the store reads the same owner's seal, signed audit
head, practice HMAC key and trainer's clock; nothing per shop is left in a machine's folder.
"""

from __future__ import annotations

from core.stores.postgres.database import database


class PostgresParts:
    """The per-shop parts in the PostgreSQL database (and schema) of ``url``. Opening it creates
    nothing but the schema. Every method raises ResolverError (one sentence) when the store
    cannot be reached, StoreBusy when a lock is held too long."""

    def __init__(self, url: str) -> None:
        self.db = database(url)

    def label(self, name: str) -> str:
        """``the team store's part NAME`` (the URL without its password)."""
        return f"the team store's part {name} ({self.db.label})"

    def read(self, name: str) -> bytes | None:
        """The part's bytes, None when absent."""
        with self.db.read() as conn:
            row = conn.execute("SELECT body FROM shop_parts WHERE name = %s", (name,)).fetchone()
        return None if row is None else bytes(row[0])

    def write(self, name: str, data: bytes) -> None:
        """Insert or replace the part in one statement (its own transaction). On a store with role
        separation ``audit.head`` goes through ``resolver_put_head`` for a user who may
        not write ``shop_parts`` (an approver; the function refuses a head of fewer rows); the
        owner's user writes it as before."""
        if name == "audit.head" and self.db.separated:
            with self.db.atomic() as conn:
                if not conn.execute("SELECT has_table_privilege('shop_parts', 'UPDATE')").fetchone()[0]:  # type: ignore[index]
                    conn.execute("SELECT resolver_put_head(%s)", (data,))
                    return
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO shop_parts (name, body) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body, set_at = now()",
                (name, data),
            )

    def create(self, name: str, data: bytes) -> bytes:
        """Insert the part unless a row is there (the first transaction to commit wins); returns
        the stored bytes."""
        with self.db.transaction() as conn:
            conn.execute("INSERT INTO shop_parts (name, body) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING", (name, data))
            row = conn.execute("SELECT body FROM shop_parts WHERE name = %s", (name,)).fetchone()
        return bytes(row[0])  # type: ignore[index]

    def remove(self, name: str) -> None:
        """Delete the part's row (nothing when absent)."""
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM shop_parts WHERE name = %s", (name,))
