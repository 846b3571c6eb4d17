"""SQLite, the first back-end of the store contract.

- :mod:`~core.stores.sqlite.checkpoint`: :class:`CheckpointStore`, the checkpoint store
  (``runs.sqlite``), implementing :class:`core.contract.store.Store`;
- :mod:`~core.stores.sqlite.audit`: the audit chain's SQL;
- :mod:`~core.stores.sqlite.world`: :class:`SqliteWorld`, the practice world
  (``larkfield.sqlite``), implementing :class:`core.contract.world.World`;
- :mod:`~core.stores.sqlite.registry`: the approvers registry's table (``approvers.sqlite``),
  implementing :class:`core.contract.registry.ApproverRows`;
- :mod:`~core.stores.sqlite.database`: the one connection helper (WAL, ``synchronous = FULL``,
  busy timeout, a connection per thread reopened when the file is replaced);
- :mod:`~core.stores.sqlite.files`: the files read or copied as files (doctor, backup, restore).

Only modules under :mod:`core.stores` import ``sqlite3`` (an import-linter contract in
``pyproject.toml``). Submodules are imported where they are used, so a listing pays only for the
checkpoint store.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.contract.backend import FolderFiles, Place
    from core.contract.registry import ApproverRows
    from core.contract.store import JournalKey, QueueChanges, ShopParts, Store, StoreRows, Summarize
    from core.contract.world import World
    from core.ground.clock import Clock
    from core.ground.data import Fault

__all__ = ["BACKEND", "SqliteBackend"]


class SqliteBackend:
    """The home folder's files as a back-end (:class:`core.contract.backend.Backend`): each part
    is a file of the folder, so a place is a path. Each method imports the module of its part
    when called (lazy, as the package's docstring says: a listing pays only for the store)."""

    name = "sqlite"
    schemes: tuple[str, ...] = ()
    team = False

    def open_store(
        self,
        place: Place,
        clock: Clock | None,
        *,
        summarize: Summarize,
        afresh: bool,
        journal_key: JournalKey | None,
    ) -> Store:
        from core.stores.sqlite.checkpoint import CheckpointStore  # lazy: a listing imports the store alone

        return CheckpointStore(Path(place), clock, summarize=summarize, afresh=afresh, journal_key=journal_key)

    def open_world(
        self,
        place: Place,
        clock: Clock | None,
        *,
        faults: Iterable[Fault],
        faults_seen: list[str] | None,
        actor: str,
    ) -> World:
        from core.stores.sqlite.world import SqliteWorld  # lazy: the world is imported when opened

        return SqliteWorld(Path(place), clock, faults=faults, faults_seen=faults_seen, actor=actor)

    def check_world(self, place: Place, has_history: bool) -> None:
        from core.stores.sqlite.world import check_world_file  # lazy: the world is imported when opened

        check_world_file(Path(place), has_history)

    def reset_world(self, place: Place) -> None:
        from core.stores.sqlite.world import reset_world  # lazy: the world is imported when opened

        reset_world(Path(place))

    def register_entries(self, place: Place) -> list[dict[str, Any]]:
        from core.stores.sqlite.world import register_entries  # lazy: the world is imported when opened

        return register_entries(Path(place))

    def open_registry_rows(self, place: Place) -> ApproverRows:
        from core.stores.sqlite.registry import SqliteApproverRows  # lazy: the registry is imported when opened

        return SqliteApproverRows(Path(place))

    def open_shop_parts(self, root: Path, place: Place | None) -> ShopParts:
        from core.stores.sqlite.files import FolderParts  # lazy: the files are imported when opened

        return FolderParts(Path(root))

    def recorded_kind(self, place: Place) -> str | None:
        return None  # the folder holds the kind (core.api.homekind), not the store

    def store_kind(self, place: Place, kind: str) -> str:
        return kind  # the store is its home folder, whose kind is ``kind``

    def queue_listener(self, place: Place) -> QueueChanges | None:
        return None  # readers of a file poll

    def open_rows(self, place: Place, journal_key: JournalKey | None) -> StoreRows:
        from core.stores.sqlite.rows import SqliteRows  # lazy: only ``store copy`` reads every row

        return SqliteRows(Path(place), journal_key=journal_key)

    def store_version(self, place: Place) -> tuple[int | None, int]:
        from core.stores.sqlite.files import STORE_FORMAT  # lazy: only ``store copy`` and ``migrate`` ask
        from core.stores.sqlite.rows import store_format  # lazy: as above

        return store_format(Path(place)), STORE_FORMAT

    def doctor_lines(self, place: Place) -> list[tuple[str, str]]:
        return []  # doctor checks the folder's files itself (folder_files)

    def setup_roles(self, place: Place, tables_role: str, users: dict[str, list[str]], mapping: dict[str, str]) -> list[str]:
        from core.ground.errors import ResolverError  # lazy: as the rest

        raise ResolverError("Role separation is for a team store (PostgreSQL); a home folder's files have no database users.")

    def folder_files(self) -> FolderFiles:
        from core.stores.sqlite import files  # lazy: the files are imported when checked

        return files

    def lesson_classes(self) -> tuple[Any, Any]:
        from core.stores.sqlite.checkpoint import CheckpointStore  # lazy: the lesson's API imports its classes
        from core.stores.sqlite.world import SqliteWorld  # lazy: as above

        return CheckpointStore, SqliteWorld


BACKEND = SqliteBackend()
"""The SQLite back-end, :data:`core.stores.BACKENDS`' ``sqlite``."""
