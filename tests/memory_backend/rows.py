"""Every row of a memory store, table by table (:class:`core.contract.store.StoreRows`, what
``resolver store copy`` reads and writes): the tables the SQL back-ends keep, made from the place's
dicts and lists in the same columns and order (:func:`core.stores.common.copy_columns`,
:func:`core.stores.common.copy_order`); the practice world's part is the world's own rows
(the home folder's back-end, where the memory back-end keeps its world)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import core.stores
from core.ground.errors import ResolverError
from core.stores.common import COPY_BATCH, COPY_PARTS, check_batch, copy_columns, refuse_used

from memory_backend.store import place_of

_JOURNAL = ("run_id", "step", "attempt", "route", "sent_at", "answer", "tokens_in", "tokens_out", "answered_at")


class MemoryRows:
    """The rows of the memory store ``url``; the world's part is the rows of ``world_folder``."""

    def __init__(self, url: str, world_folder: Path) -> None:
        self.url = url
        self.place = place_of(url)
        self.label = f"the memory store {url}"
        self._world = core.stores.folder_backend().open_rows(world_folder, None)

    # -- the tables, as the SQL back-ends hold them ---------------------------------------------

    def _table(self, table: str) -> list[tuple[Any, ...]]:
        p = self.place
        columns = copy_columns(table)
        if table == "runs":
            return [tuple(p.runs[r][c] for c in columns) for r in p.order]
        if table == "entries":
            return sorted((tuple(e) for rows in p.entries.values() for e in rows), key=lambda e: (e[0], e[1]))
        if table == "model_calls":
            return [tuple({"run_id": k[0], **p.journal[k]}[c] for c in columns) for k in sorted(p.journal)]
        if table == "run_marks":
            return [tuple(p.marks[r][c] for c in columns) for r in sorted(p.marks)]
        if table == "audit":
            return [tuple(r[c] for c in columns) for r in p.audit]
        if table == "queue_events":
            return [tuple(e[c] for c in columns) for e in p.events]
        if table == "approvers":
            return [tuple(r) for r in p.approvers]
        raise KeyError(table)

    def _put(self, table: str, columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
        p = self.place
        for values in rows:
            row = dict(zip(columns, values, strict=True))
            if table == "runs":
                p.runs[row["run_id"]] = row
                p.order.append(row["run_id"])
            elif table == "entries":
                p.entries.setdefault(row["run_id"], []).append(tuple(values))
            elif table == "model_calls":
                p.journal[(row["run_id"], row["step"], row["attempt"])] = {c: row[c] for c in _JOURNAL[1:]}
            elif table == "run_marks":
                p.marks[row["run_id"]] = row
            elif table == "audit":
                p.audit.append(row)
            elif table == "queue_events":
                p.events.append(row)
            elif table == "approvers":
                p.approvers.append(list(values))
                p.registry_made = True

    # -- the contract -----------------------------------------------------------------------------

    def has_part(self, part: str) -> bool:
        if part == "world":
            return self._world.has_part("world")
        if part == "registry":
            return self.place.registry_made
        return True  # the runs, the audit and the events are there once the place is

    def row_counts(self) -> dict[str, int]:
        counts = self._world.row_counts()
        counts = {t: counts[t] for t in COPY_PARTS["world"]}
        with self.place.lock:
            for part, tables in COPY_PARTS.items():
                if part != "world":
                    counts.update({t: len(self._table(t)) for t in tables})
        return counts

    def export_rows(self, part: str) -> Iterator[tuple[str, tuple[str, ...], list[tuple[Any, ...]]]]:
        if part == "world":
            yield from self._world.export_rows(part)
            return
        if not self.has_part(part):
            return
        with self.place.lock:
            tables = {t: self._table(t) for t in COPY_PARTS[part]}
        for table, rows in tables.items():
            for start in range(0, len(rows), COPY_BATCH):
                yield table, copy_columns(table), rows[start : start + COPY_BATCH]

    def import_rows(self, part: str, batches: Iterable[tuple[str, tuple[str, ...], list[tuple[Any, ...]]]]) -> dict[str, int]:
        if part == "world":
            return self._world.import_rows(part, batches)
        tables = COPY_PARTS[part]
        with self.place.lock:
            refuse_used(self.label, {t: len(self._table(t)) for t in tables})
            held = list(batches)  # every batch checked before any is written: the part all or nothing
            for batch in held:
                check_batch(part, batch)
            written = dict.fromkeys(tables, 0)
            if part == "events":  # the source's events are the record
                self.place.events = []
            for table, columns, rows in held:
                self._put(table, tuple(columns), rows)
                written[table] += len(rows)
        return written

    def copied(self) -> None:
        """Nothing: the memory store's readers poll."""

    def recorded_kind(self) -> str | None:
        return self.place.kind

    def db_users(self) -> tuple[dict[str, str], str | None]:
        return {}, None

    def map_db_users(self, mapping: dict[str, str]) -> int:
        raise ResolverError("The memory store has no database users; role separation is for a PostgreSQL team store.")


__all__ = ["MemoryRows"]
