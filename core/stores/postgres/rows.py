"""Every row of a team store, table by table: :class:`PostgresRows`, the
PostgreSQL side of :class:`core.contract.store.StoreRows`, what ``resolver store copy`` reads and writes.

All parts live in one schema. A part is read in one ``REPEATABLE READ`` snapshot and written in
one transaction. What the target makes itself is made as the rows go in: ``runs.n`` (the
identity, in the order the rows arrive, which is the source's order), ``runs.search`` (the
casefolded search fields, :func:`core.stores.postgres.store.search_text`), the registry's
``registry_made`` row and the world's ``register_head`` row. ``state_ok`` is read as 0 or 1, as
SQLite keeps it, and written back as a boolean.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from core.stores.common import _HEADER_COLS, COPY_BATCH, COPY_PARTS, Batch, check_batch, copy_columns, copy_order, refuse_used
from core.stores.postgres.database import database
from core.stores.postgres.listen import notify_reread, quiet
from core.stores.postgres.pool import Database
from core.stores.postgres.store import search_text
from core.stores.postgres.world import build


def _select(table: str, columns: tuple[str, ...]) -> str:
    shown = ", ".join("state_ok::int" if table == "runs" and c == "state_ok" else c for c in columns)
    return f"SELECT {shown} FROM {table} ORDER BY {copy_order(table, 'n')}"


class PostgresRows:
    """The rows of the team store at ``url`` (see the module's docstring); opening it makes or
    upgrades the schema, as every open of the store does.

    Raises:
        ResolverError: the database cannot be reached (one sentence).
    """

    def __init__(self, url: str) -> None:
        self.db: Database = database(url)
        self.url = url
        self.label = self.db.label

    def has_part(self, part: str) -> bool:
        """``runs`` and ``audit``: always (the schema exists); ``world``: once built;
        ``registry``: once a change made it."""
        head = {"world": "register_head", "registry": "registry_made"}.get(part)
        if head is None:
            return True
        with self.db.read() as conn:
            return conn.execute(f"SELECT EXISTS (SELECT 1 FROM {head})").fetchone()[0] is True  # type: ignore[index]

    def row_counts(self) -> dict[str, int]:
        """Rows per table of every part, in one snapshot."""
        with self.db.snapshot() as conn:
            return {
                table: int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # type: ignore[index]
                for tables in COPY_PARTS.values()
                for table in tables
            }

    def recorded_kind(self) -> str | None:
        """The kind ``store_meta`` records (written by the first home that opened the store), or None."""
        with self.db.read() as conn:
            row = conn.execute("SELECT value FROM store_meta WHERE key = 'kind'").fetchone()
        return str(row[0]) if row else None

    def db_users(self) -> tuple[dict[str, str], str | None]:
        """The approvers' database users and the tables' role (:meth:`core.contract.store.StoreRows.db_users`);
        a store before migration 12 has neither."""
        with self.db.read() as conn:
            if conn.execute("SELECT to_regclass('store_roles')").fetchone()[0] is None:  # type: ignore[index]
                return {}, None
            mapping = {
                str(r[0]): str(r[1])
                for r in conn.execute("SELECT name, db_user FROM approvers WHERE db_user IS NOT NULL ORDER BY n")
            }
            row = conn.execute("SELECT tables_role FROM store_roles").fetchone()
        return mapping, (str(row[0]) if row else None)

    def map_db_users(self, mapping: dict[str, str]) -> int:
        """Map the approvers' entries to database users in one transaction
        (:meth:`core.contract.store.StoreRows.map_db_users`); an entry the registry lacks is skipped."""
        with self.db.transaction() as conn:
            quiet(conn)
            return sum(
                conn.execute("UPDATE approvers SET db_user = %s WHERE name = %s", (user, name)).rowcount
                for name, user in mapping.items()
            )

    def copied(self) -> None:
        """Tell the store's listeners to read the whole queue again (one
        :data:`~core.stores.postgres.listen.REREAD` notification): :meth:`import_rows` writes
        quietly, so a copy of a million runs sends one notification, not a million."""
        with self.db.transaction() as conn:
            notify_reread(conn)

    def export_rows(self, part: str) -> Iterator[Batch]:
        """The part's rows in batches, in one snapshot (see :meth:`core.contract.store.StoreRows.export_rows`)."""
        tables = COPY_PARTS[part]
        if not self.has_part(part):
            return
        with self.db.snapshot() as conn:
            for table in tables:
                columns = copy_columns(table)
                with conn.cursor() as cur:
                    cur.execute(_select(table, columns))
                    while rows := cur.fetchmany(COPY_BATCH):
                        yield table, columns, [tuple(r) for r in rows]

    def import_rows(self, part: str, batches: Iterable[Batch]) -> dict[str, int]:
        """Write the part's rows in one transaction (see :meth:`core.contract.store.StoreRows.import_rows`).
        Raises StoreNotEmpty, ResolverError."""
        tables = COPY_PARTS[part]
        written = dict.fromkeys(tables, 0)
        if part == "world":
            build(self.db)  # the tables' head row, as a first open makes it
        with self.db.transaction() as conn:
            quiet(conn)  # no notification per run; the copy sends one re-read at its end (copied)
            if part == "audit":
                conn.execute("SELECT one FROM audit_head FOR UPDATE")
            if part == "world":
                conn.execute("SELECT one FROM register_head FOR UPDATE")
            counts = {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in tables}  # type: ignore[index]
            refuse_used(self.label, counts)
            if part == "world":
                conn.execute(f"TRUNCATE {', '.join(tables)}")
            if part == "registry":
                conn.execute("INSERT INTO registry_made VALUES (true) ON CONFLICT DO NOTHING")
            if part == "events":  # the events the triggers wrote as the copied rows went in: the source's replace them
                conn.execute("DELETE FROM queue_events")
            for batch in batches:
                check_batch(part, batch)
                table, columns, rows = batch
                names, values = _prepared(table, columns, rows, search_text)
                overriding = " OVERRIDING SYSTEM VALUE" if table == "queue_events" else ""  # the source's IDs kept
                with conn.cursor() as cur:
                    cur.executemany(
                        f"INSERT INTO {table} ({', '.join(names)}){overriding} VALUES ({', '.join(['%s'] * len(names))})", values
                    )
                written[table] += len(rows)
            if part == "events":  # the next event's ID follows the copied ones
                conn.execute(
                    "SELECT setval(pg_get_serial_sequence('queue_events', 'id'), "
                    "(SELECT COALESCE(max(id), 0) + 1 FROM queue_events), false)"
                )
        return written


def _prepared(
    table: str, columns: tuple[str, ...], rows: list[tuple[Any, ...]], search_text: Any
) -> tuple[tuple[str, ...], list[tuple]]:
    """The columns and values to insert: a run's ``state_ok`` as a boolean and its ``search``
    column made from its fields; every other table's rows as they are."""
    if table != "runs":
        return columns, rows
    ok = columns.index("state_ok")
    run_id = columns.index("run_id")
    header = [columns.index(c) for c in _HEADER_COLS]
    out = []
    for row in rows:
        values = list(row)
        values[ok] = bool(values[ok])
        fields = {c: row[i] for c, i in zip(_HEADER_COLS, header, strict=True)}
        out.append((*values, search_text(fields, row[run_id])))
    return (*columns, "search"), out


__all__ = ["PostgresRows"]
