"""The back-ends of the store contract, and the one place that picks one.

Each part of a home is at a :data:`Place`: a SQLite file in the home folder (the default), or the
team store's PostgreSQL URL (chosen by ``--store``, ``RESOLVER_STORE`` or ``store`` in
the config file: :func:`core.ground.homepath.locate_store`). :data:`BACKENDS` is the registry of
back-ends by name, each a package's ``BACKEND`` object (:class:`core.contract.backend.Backend`):
:func:`backend_for` picks the one of a place, the back-end of the home folder (:data:`FOLDER`)
for a path and the one that claims a URL's scheme for a URL. :func:`open_store`,
:func:`open_world`, :func:`open_registry_rows`, :func:`open_shop_parts`, :func:`check_world`,
:func:`reset_world`, :func:`register_entries` and the rest open or check a part at its place
through that object; :class:`core.api.home.Home`, the lesson's Python API and the listing call
these, and nothing outside this package names a back-end's module (an import-linter contract). A
new back-end is one package exporting ``BACKEND`` and one line in :data:`BACKENDS`; the
conformance suite (``tests/conformance/``) runs every contract test against each of them.

The back-end packages import their modules only when a part is opened, so ``import core.stores``
costs next to nothing, and the PostgreSQL back-end is there without psycopg (its functions then
say in one sentence what to install).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.contract.approval_key import load_key
from core.contract.backend import Backend, FolderFiles, Place
from core.contract.store import SHOP_PARTS
from core.ground.errors import ApprovalKeyError
from core.stores import postgres, sqlite

if TYPE_CHECKING:
    from core.contract.registry import ApproverRows
    from core.contract.store import JournalKey, QueueChanges, ShopParts, Store, StoreRows, Summarize
    from core.contract.world import World
    from core.ground.clock import Clock
    from core.ground.data import Fault

__all__ = [
    "BACKENDS",
    "FOLDER",
    "STORE_FILE",
    "WORLD_FILE",
    "Backend",
    "Place",
    "adopt_folder_parts",
    "backend_for",
    "backend_named",
    "check_world",
    "folder_backend",
    "folder_files",
    "folder_journal_key",
    "is_team_store",
    "open_registry_rows",
    "open_rows",
    "open_shop_parts",
    "open_store",
    "open_world",
    "parts_at",
    "queue_listener",
    "recorded_kind",
    "register_entries",
    "reset_world",
    "setup_roles",
    "store_kind",
    "store_path",
    "store_version",
    "team_store_lines",
    "trigger_lines",
    "world_path",
]

BACKENDS: dict[str, Backend] = {
    sqlite.BACKEND.name: sqlite.BACKEND,
    postgres.BACKEND.name: postgres.BACKEND,
}
"""Every back-end of the contract by name (the conformance suite's parameter): a package's
``BACKEND`` object each. A test adds its own by one line (``BACKENDS["memory"] = ...``)."""

FOLDER = "sqlite"
"""The back-end of a place that is a path: the home folder's files."""

_ALIASES = {"postgres": "postgresql"}
"""Names a caller may still give for a back-end (``backend="postgres"``, as the home's
:attr:`core.ground.homepath.StoreChoice.backend` says it)."""

STORE_FILE = "runs.sqlite"
"""The checkpoint store's file in the home folder (SQLite back-end)."""

WORLD_FILE = "larkfield.sqlite"
"""The practice world's file in the home folder (SQLite back-end)."""


def backend_named(name: str) -> Backend:
    """The back-end ``name`` of :data:`BACKENDS`. Raises ValueError for a name not in it."""
    found = BACKENDS.get(_ALIASES.get(name, name))
    if found is None:
        raise ValueError(f"Unknown store back-end {name!r}: one of {', '.join(BACKENDS)}.")
    return found


def backend_for(where: Place) -> Backend:
    """The back-end of the place ``where``: the one whose :attr:`~core.contract.backend.Backend.schemes`
    hold a URL's scheme, else (a path, or a text with no scheme a back-end claims) the home folder's."""
    if isinstance(where, str):
        scheme, colon, _ = where.partition(":")
        if colon:
            scheme = scheme.lower()
            for found in BACKENDS.values():
                if scheme in found.schemes:
                    return found
    return BACKENDS[FOLDER]


def folder_backend() -> Backend:
    """The back-end of the home folder's files (:data:`FOLDER`)."""
    return BACKENDS[FOLDER]


def folder_files() -> FolderFiles:
    """The home folder's database files as files (:class:`core.contract.backend.FolderFiles`: the
    checks of ``resolver doctor``, ``backup`` and ``restore``, the light listing's format)."""
    files = folder_backend().folder_files()
    assert files is not None  # the home folder's back-end keeps its parts in files
    return files


def _pick(backend: str | None, where: Place) -> Backend:
    """``backend`` by name if given, else the back-end of ``where``."""
    return backend_named(backend) if backend is not None else backend_for(where)


def is_team_store(where: Place) -> bool:
    """True when ``where`` is a team store's place (a store that machines share, such as a
    PostgreSQL URL) rather than the home folder's files: the back-end's own say
    (:attr:`core.contract.backend.Backend.team`)."""
    return backend_for(where).team


def store_path(root: Path) -> Path:
    """Where the home ``root`` keeps its checkpoint store (``runs.sqlite``)."""
    return Path(root) / STORE_FILE


def world_path(root: Path) -> Path:
    """Where the home ``root`` keeps its practice world (``larkfield.sqlite``)."""
    return Path(root) / WORLD_FILE


def open_store(
    path: Place,
    clock: Clock | None = None,
    *,
    summarize: Summarize,
    backend: str | None = None,
    afresh: bool = False,
    journal_key: JournalKey | None = None,
) -> Store:
    """The checkpoint store at ``path`` (a SQLite file, or a PostgreSQL URL: :data:`Place`; made
    on first use, migrated on open), saving the queue's columns given by ``summarize`` with every
    run (:func:`core.api.queue.queue_columns`). A SQLite file missing or empty in a home that has
    been used is refused as lost unless ``afresh`` (``resolver reset --all``, ``resolver restore``,
    a copy's new folder: made again).

    ``journal_key`` (:data:`core.contract.store.JournalKey`) gives a SQLite store its home's approval key,
    which seals and checks its journal of model calls (a store opened without it can neither
    write nor trust that journal; see :class:`core.stores.sqlite.checkpoint.CheckpointStore`); a
    team store ignores it (its database stamps each row's writer). :func:`folder_journal_key`
    is the one of a home folder.

    Raises:
        UnsupportedStoreFormat: a file this resolver cannot read or must not adopt.
        ResolverError: the store cannot be opened (one sentence).
        ValueError: an unknown ``backend``.
    """
    return _pick(backend, path).open_store(path, clock, summarize=summarize, afresh=afresh, journal_key=journal_key)


def folder_journal_key(root: Path, *, make: bool = True, in_flight_ok: bool = False) -> JournalKey:
    """The :data:`core.contract.store.JournalKey` of the home folder ``root``: its ``approval.key``, read
    when first asked (:func:`core.contract.approval_key.load_key`).

    ``make``: made when missing (32 random bytes, 0600), unless approvals are in flight, whose
    HMAC signatures a new key would void (the store's count; ``in_flight_ok``: a shop home, whose
    decisions are never HMAC-signed, makes it all the same); without ``make`` a missing key is
    refused (a read that must change nothing). Raises ApprovalKeyError when asked."""

    def key(in_flight: Callable[[], int]) -> bytes:
        path = Path(root) / "approval.key"
        if not make and not path.exists():
            raise ApprovalKeyError(
                f"The approval key {path} is missing, so the journal of model calls cannot be checked; restore it from a backup."
            )
        return load_key(path, in_flight=0 if in_flight_ok else in_flight)

    return key


def open_world(
    path: Place,
    clock: Clock | None = None,
    *,
    faults: Iterable[Fault] = (),
    faults_seen: list[str] | None = None,
    actor: str = "manual",
    backend: str | None = None,
) -> World:
    """The practice world at ``path`` (built from ``data/`` on first use), writing as ``actor``
    with the ticket's simulated ``faults`` (``faults_seen``: the run's list of those met).

    Raises:
        ResolverError: the world cannot be opened (one sentence). ValueError: an unknown ``backend``.
    """
    return _pick(backend, path).open_world(path, clock, faults=faults, faults_seen=faults_seen, actor=actor)


def check_world(path: Place, has_history: bool, *, backend: str | None = None) -> None:
    """Refuse a practice world that cannot be used as it is (missing or empty in a home with
    history: its register would be lost). Raises WorldMissing."""
    _pick(backend, path).check_world(path, has_history)


def reset_world(path: Place, *, backend: str | None = None) -> None:
    """Build the practice world at ``path`` again from ``data/`` (every write forgotten).
    Raises WorldMissing when a folder is in its place."""
    _pick(backend, path).reset_world(path)


def register_entries(path: Place, *, backend: str | None = None) -> list[dict[str, Any]]:
    """Every entry of the practice world's operations register at ``path``, read only, in commit
    order: ``{"operation_id", "service", "actor", "at", "seq"}`` (``actor``: the run ID that wrote it,
    or ``manual``; ``seq``: its number, 1, 2, ... in commit order), read in one statement; empty when the world does not exist yet. For ``resolver audit verify``,
    which holds each write a run made against the signed approvals in the audit.

    Raises:
        ValueError: the register cannot be read, or is gone while the writes' own tables remain
            (one sentence). Also for an unknown ``backend``.
    """
    return _pick(backend, path).register_entries(path)


def open_registry_rows(root: Place, *, backend: str | None = None) -> ApproverRows:
    """The approvers' rows of the shop home ``root`` (``approvers.sqlite`` in that folder, or the
    team store at that PostgreSQL URL); opening creates nothing."""
    return _pick(backend, root).open_registry_rows(root)


def open_shop_parts(root: Path | str, store: str | None = None) -> ShopParts:
    """The per-shop parts of a home (:class:`core.contract.store.ShopParts`: the owner's registry seal, the
    signed audit head, the practice HMAC key, the trainer's clock): the files in the
    folder ``root`` as they always were, or, with ``store`` (a team store's PostgreSQL URL), the
    rows of that store's ``shop_parts`` table, shared by every machine pointed at it. Opening
    creates nothing (but a team store's schema). Raises ResolverError when the store cannot be
    reached."""
    found = backend_for(store) if store is not None else folder_backend()
    return found.open_shop_parts(Path(root), store)


def adopt_folder_parts(root: Path, parts: ShopParts) -> list[str]:
    """Move a team store's per-shop parts that an earlier release kept in the home folder
    ``root`` (before migration 6 the owner's seal ``approvers.json`` and the signed ``audit.head``
    stayed in the folder of the machine that wrote them) into the store's ``parts``, each only
    when the store has none of that name; the folder's file is left as it is (nothing reads it on
    a team store). Returns the names moved. Raises OSError, ResolverError."""
    moved = []
    for name in SHOP_PARTS:
        path = Path(root) / name
        if path.is_file() and parts.read(name) is None:
            parts.create(name, path.read_bytes())
            moved.append(name)
    return moved


def parts_at(where: Path | ShopParts) -> ShopParts:
    """``where`` when it is already a home's per-shop parts, else the files of the home folder
    ``where`` (:func:`open_shop_parts` without a team store)."""
    return open_shop_parts(where) if isinstance(where, Path) else where


def recorded_kind(where: Place) -> str | None:
    """The kind the team store at ``where`` recorded (``practice`` or ``shop``), or None when no
    home opened it yet, or ``where`` is a SQLite path (its folder holds the kind); records
    nothing: for ``resolver doctor``. Raises ResolverError (one sentence)."""
    made = backend_for(where).recorded_kind(where)
    return None if made is None else str(made)


def store_kind(where: Place, kind: str) -> str:
    """The kind of home the store at ``where`` belongs to (the store knows its kind,
    fixed when it is made). A team store records ``kind`` the first time a home opens it and
    returns what it recorded from then on; a SQLite store is its home folder, whose kind is
    ``kind`` (:mod:`core.api.homekind` reads it from the folder). Raises ResolverError (one sentence)."""
    return str(backend_for(where).store_kind(where, kind))


def team_store_lines(url: str) -> list[tuple[str, str]]:
    """``resolver doctor``'s lines on the team store at ``url`` (:func:`core.stores.postgres.schema_lines`):
    ``(level, text)`` pairs, changing nothing. Never raises."""
    return list(backend_for(url).doctor_lines(url))


def trigger_lines(store: Store) -> list[tuple[str, str]]:
    """``resolver doctor``'s lines on the triggers of a team store's ``store`` (each one missing
    or altered named, each one this user made again said; see
    :mod:`core.stores.postgres.triggers`): ``(level, text)`` pairs. None for a SQLite store,
    whose audit triggers doctor checks in the file."""
    lines = getattr(store, "trigger_lines", None)
    return list(lines()) if callable(lines) else []


def queue_listener(where: Place) -> QueueChanges | None:
    """The live queue's listener of the store at ``where`` (not started): PostgreSQL's
    ``LISTEN`` (:class:`core.stores.postgres.listen.QueueListener`); None for a SQLite file,
    whose readers poll. Raises ResolverError when psycopg is missing for a URL."""
    return backend_for(where).queue_listener(where)


def open_rows(where: Place) -> StoreRows:
    """Every row of the store at ``where``, table by table (:class:`core.contract.store.StoreRows`, for
    ``resolver store copy``): a SQLite home FOLDER (its ``runs.sqlite``, ``larkfield.sqlite`` and
    ``approvers.sqlite``), or a PostgreSQL URL. Opening a folder creates nothing; opening a URL
    makes or upgrades its schema. Raises ResolverError (one sentence)."""
    found = backend_for(where)
    # a folder's rows are sealed with its own key at an earlier format's upgrade; a team store's
    # database stamps each row's writer instead
    return found.open_rows(where, None if found.team else folder_journal_key(Path(where)))


def store_version(where: Place) -> tuple[int | None, int]:
    """``(the version of the store at where, the version this resolver writes)``, read without
    migrating anything: a SQLite home folder's ``runs.sqlite`` format (None: no store in the
    folder), or a team store's schema version (0: no resolver tables yet).

    Raises:
        ResolverError: the store cannot be reached or read (one sentence).
    """
    return backend_for(where).store_version(where)


def setup_roles(where: Place, tables_role: str, users: dict[str, list[str]], mapping: dict[str, str]) -> list[str]:
    """``resolver store roles setup``: role separation in the team store at ``where``,
    with that URL's (an administrator's) rights; the lines to print. Raises ResolverError (one
    sentence), also for a back-end without database users."""
    return backend_for(where).setup_roles(where, tables_role, users, mapping)
