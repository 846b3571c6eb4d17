"""The back-ends of the store contract, and the one place that picks one (issue 22).

:data:`BACKEND` names the back-end every home uses; :func:`open_store`, :func:`open_world`,
:func:`open_registry_rows`, :func:`check_world` and :func:`reset_world` open or check the home's
parts with it. :class:`core.home.Home`, the lesson's Python API and the listing call these, and
nothing else names a back-end's module. There are two: SQLite (:mod:`core.stores.sqlite`, the
home folder's files) and PostgreSQL (:mod:`core.stores.postgres`, the team store at
:data:`POSTGRES_URL`); the conformance suite (``tests/conformance/``) runs every contract test against each name in
:data:`BACKENDS`.

A back-end is imported only when a part is opened, so ``import core.stores`` costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.approvers import ApproverRows
    from core.clock import Clock
    from core.data import Fault
    from core.store import Store, Summarize
    from core.world import World

BACKENDS = ("sqlite", "postgres")
"""Every back-end of the contract (the conformance suite's parameter)."""

POSTGRES_URL: str | None = None
"""The libpq URL of the PostgreSQL store the ``postgres`` back-end opens (issue 23): each
``open_*`` called for that back-end ignores the home's path and opens this one. Until the store
is chosen by ``--store URL`` (the store's location), only the conformance suite sets it."""

BACKEND = "sqlite"
"""The back-end of every home: each ``open_*`` reads it when it is called without a ``backend``
(the conformance suite sets it to each name of :data:`BACKENDS` in turn)."""

STORE_FILE = "runs.sqlite"
"""The checkpoint store's file in the home folder (SQLite back-end)."""

WORLD_FILE = "larkfield.sqlite"
"""The practice world's file in the home folder (SQLite back-end)."""


def _postgres_url() -> str:
    """:data:`POSTGRES_URL`, or a ResolverError saying it is not set."""
    from core.errors import ResolverError

    if not POSTGRES_URL:
        raise ResolverError("No PostgreSQL store is chosen: set its URL (postgresql://...) before opening it.")
    return POSTGRES_URL


def _require(backend: str | None) -> str:
    """``backend``, or :data:`BACKEND` (read at each call) when None. Raises ValueError for a name
    not in :data:`BACKENDS`."""
    name = BACKEND if backend is None else backend
    if name not in BACKENDS:
        raise ValueError(f"Unknown store back-end {name!r}: one of {', '.join(BACKENDS)}.")
    return name


def store_path(root: Path) -> Path:
    """Where the home ``root`` keeps its checkpoint store (``runs.sqlite``)."""
    return Path(root) / STORE_FILE


def world_path(root: Path) -> Path:
    """Where the home ``root`` keeps its practice world (``larkfield.sqlite``)."""
    return Path(root) / WORLD_FILE


def open_store(path: Path, clock: Clock | None = None, *, summarize: Summarize, backend: str | None = None) -> Store:
    """The checkpoint store at ``path`` (made on first use, migrated on open), saving the queue's
    columns given by ``summarize`` with every run (:func:`core.queue.queue_columns`).

    Raises:
        UnsupportedStoreFormat: a file this resolver cannot read or must not adopt.
        ResolverError: the store cannot be opened (one sentence).
        ValueError: an unknown ``backend``.
    """
    if _require(backend) == "postgres":
        from core.stores import postgres

        return postgres.open_store(_postgres_url(), clock, summarize=summarize)
    from core.stores.sqlite.checkpoint import CheckpointStore

    return CheckpointStore(path, clock, summarize=summarize)


def open_world(
    path: Path,
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
    if _require(backend) == "postgres":
        from core.stores import postgres

        return postgres.open_world(_postgres_url(), clock, faults=faults, faults_seen=faults_seen, actor=actor)
    from core.stores.sqlite.world import SqliteWorld

    return SqliteWorld(path, clock, faults=faults, faults_seen=faults_seen, actor=actor)


def check_world(path: Path, has_history: bool, *, backend: str | None = None) -> None:
    """Refuse a practice world that cannot be used as it is (missing or empty in a home with
    history: its register would be lost). Raises WorldMissing."""
    if _require(backend) == "postgres":
        from core.stores import postgres

        return postgres.check_world(_postgres_url(), has_history)
    from core.stores.sqlite.world import check_world_file

    check_world_file(path, has_history)


def reset_world(path: Path, *, backend: str | None = None) -> None:
    """Build the practice world at ``path`` again from ``data/`` (every write forgotten).
    Raises WorldMissing when a folder is in its place."""
    if _require(backend) == "postgres":
        from core.stores import postgres

        return postgres.reset_world(_postgres_url())
    from core.stores.sqlite.world import reset_world as reset

    reset(path)


def register_entries(path: Path, *, backend: str | None = None) -> list[dict[str, Any]]:
    """Every entry of the practice world's operations register at ``path``, read only, in commit
    order: ``{"operation_id", "service", "actor", "at", "seq"}`` (``actor``: the run ID that wrote it,
    or ``manual``; ``seq``: its number, 1, 2, ... in commit order), read in one statement; empty when the world does not exist yet. For ``resolver audit verify`` (issue 28),
    which holds each write a run made against the signed approvals in the audit.

    Raises:
        ValueError: the register cannot be read, or is gone while the writes' own tables remain
            (one sentence). Also for an unknown ``backend``.
    """
    if _require(backend) == "postgres":
        from core.stores import postgres

        return postgres.register_entries(_postgres_url())
    from core.stores.sqlite.world import register_entries as entries

    return entries(path)


def open_registry_rows(root: Path, *, backend: str | None = None) -> ApproverRows:
    """The approvers' rows of the shop home ``root`` (``approvers.sqlite``); opening creates nothing."""
    if _require(backend) == "postgres":
        from core.stores import postgres

        return postgres.open_registry_rows(_postgres_url())
    from core.stores.sqlite.registry import SqliteApproverRows

    return SqliteApproverRows(Path(root))
