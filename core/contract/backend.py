"""What a back-end package hands the core: one :class:`Backend` object, ``BACKEND`` in the package.

:mod:`core.stores` keeps the registry of back-ends (:data:`core.stores.BACKENDS`, by name) and
picks one by the place a part of a home lives at (:data:`Place`): a path is the home folder's
files, the back-end named :data:`core.stores.FOLDER`; a URL is the back-end that claims its
scheme (:attr:`Backend.schemes`). Every public function of :mod:`core.stores` (``open_store``,
``open_world``, ``store_version`` ...) asks that object, so a new back-end is one package that
exports ``BACKEND`` plus one line in the registry, and no caller outside :mod:`core.stores`
names a back-end's module.

Capabilities are said by the object rather than read off a URL: :attr:`Backend.team` (a store
that machines share, holding its home's kind and per-shop parts itself), :meth:`Backend.queue_listener`
(None: readers poll), :meth:`Backend.folder_files` (None: nothing of it is a file in the home folder).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from core.contract.registry import ApproverRows
    from core.contract.store import JournalKey, QueueChanges, ShopParts, Store, StoreRows, Summarize
    from core.contract.world import World
    from core.ground.clock import Clock
    from core.ground.data import Fault

__all__ = ["Backend", "FolderFiles", "Place"]

Place = Path | str
"""Where a part of a home lives: a file's path in the home folder, or a store's URL (the team
store's ``postgresql://…``), for the store, the world and the approvers' rows alike."""


class FolderFiles(Protocol):
    """The database files of a home folder, read or copied as files (``resolver doctor``,
    ``backup``, ``restore``, the kind of a home, the light listing): what the back-end of the
    home folder (:data:`core.stores.FOLDER`) offers beside the contract, a module of its package
    (``core.stores.sqlite.files``). Every function takes a file's path and changes nothing in it."""

    @property
    def DatabaseError(self) -> type[Exception]:
        """What a file the database cannot read raises (:meth:`database_check`)."""

    @property
    def ENGINE_VERSION(self) -> str:
        """The database library's version, for ``doctor``'s first line."""

    @property
    def STORE_FORMAT(self) -> int:
        """The format of the store file this resolver writes."""

    def database_check(self, path: Path) -> tuple[list[str], int, set[str]]:
        """``(the integrity check's lines, the file's format, its tables)``."""

    def read_only_audit(self, path: Path) -> AbstractContextManager[tuple[set[str], Any]]:
        """The audit of the store file ``path`` opened read-only: ``(its columns, an AuditReader)``."""

    def read_only_journal(self, path: Path) -> list[tuple[Any, ...]] | None:
        """The sealed journal of model calls of the store file ``path``; None when it has none yet."""

    def has_signed_rows(self, path: Path, looked_at: int) -> bool:
        """True when the first ``looked_at`` audit rows of ``path`` hold an Ed25519-signed one."""

    def store_format(self, path: Path) -> int | None:
        """The format of the database at ``path``; None when it cannot be read."""

    def online_backup(self, source: Path, target: Path, failure: str) -> None:
        """A consistent copy of ``source`` into the new file ``target`` while others write."""

    def integrity(self, path: Path) -> str | None:
        """What the integrity check of ``path`` found wrong; None when nothing."""

    def newest(self, path: Path) -> float:
        """The time of the newest write in the store file ``path`` (0 for none)."""

    def saved_after(self, path: Path, since: float) -> list[str]:
        """The runs of the store file ``path`` saved after ``since``."""


class Backend(Protocol):
    """One back-end of the store contract, as :mod:`core.stores` dispatches to it.

    Every method takes the part's :data:`Place` as the caller gave it (a path or a URL of this
    back-end) and raises a :class:`~core.ground.errors.ResolverError` with one sentence when the
    part cannot be reached; see the function of :mod:`core.stores` of the same name for each
    one's rules.
    """

    name: str
    """The back-end's name, its key in :data:`core.stores.BACKENDS`."""

    schemes: tuple[str, ...]
    """The URL schemes (lower case, without the colon) whose places are this back-end's; empty
    for the back-end of the home folder, whose places are paths."""

    team: bool
    """A store that machines share (the team store): it records its home's kind
    (:meth:`store_kind`) and holds the per-shop parts (:meth:`open_shop_parts`), and a home on
    it keeps only this machine's own files in its folder."""

    def open_store(
        self,
        place: Place,
        clock: Clock | None,
        *,
        summarize: Summarize,
        afresh: bool,
        journal_key: JournalKey | None,
    ) -> Store:
        """The checkpoint store at ``place``, made on first use and migrated on open."""

    def open_world(
        self,
        place: Place,
        clock: Clock | None,
        *,
        faults: Iterable[Fault],
        faults_seen: list[str] | None,
        actor: str,
    ) -> World:
        """The practice world at ``place``, built from ``data/`` on first use."""

    def check_world(self, place: Place, has_history: bool) -> None:
        """Refuse a world that cannot be used as it is (WorldMissing)."""

    def reset_world(self, place: Place) -> None:
        """Build the practice world at ``place`` again from ``data/``."""

    def register_entries(self, place: Place) -> list[dict[str, Any]]:
        """Every entry of the operations register, read only, in commit order."""

    def open_registry_rows(self, place: Place) -> ApproverRows:
        """The approvers' rows at ``place`` (a shop folder, or the store's URL)."""

    def open_shop_parts(self, root: Path, place: Place | None) -> ShopParts:
        """The per-shop parts of the home folder ``root`` whose store is at ``place``."""

    def recorded_kind(self, place: Place) -> str | None:
        """The kind the store recorded, or None (none yet, or a store that records none)."""

    def store_kind(self, place: Place, kind: str) -> str:
        """The kind of home the store belongs to, recording ``kind`` when it records one."""

    def queue_listener(self, place: Place) -> QueueChanges | None:
        """The live queue's listener (not started); None when readers poll."""

    def open_rows(self, place: Place, journal_key: JournalKey | None) -> StoreRows:
        """Every row of the store at ``place`` (for ``resolver store copy``)."""

    def store_version(self, place: Place) -> tuple[int | None, int]:
        """``(the version of the store at place, the version this resolver writes)``."""

    def doctor_lines(self, place: Place) -> list[tuple[str, str]]:
        """``resolver doctor``'s ``(level, text)`` lines on the store at ``place``; never raises."""

    def setup_roles(self, place: Place, tables_role: str, users: dict[str, list[str]], mapping: dict[str, str]) -> list[str]:
        """``resolver store roles setup``: role separation in the store; the lines to print."""

    def folder_files(self) -> FolderFiles | None:
        """The home folder's database files as files (:class:`FolderFiles`), or None."""

    def lesson_classes(self) -> tuple[Any, Any]:
        """``(the store's class, the world's class)`` that the lesson's Python API subclasses
        (its ``CheckpointStore(path)`` and ``World(path)`` take a file's path, so only the
        back-end of the home folder has them: another raises ResolverError)."""
