"""PostgreSQL, the team store: the second back-end of the store contract (issue 23).

- :mod:`~core.stores.postgres.store`: :class:`PostgresStore`, implementing :class:`core.store.Store`;
- :mod:`~core.stores.postgres.audit`: the audit chain's SQL, appended under a lock on its head;
- :mod:`~core.stores.postgres.world`: :class:`PostgresWorld`, implementing :class:`core.world.World`;
- :mod:`~core.stores.postgres.registry`: the approvers' rows, implementing :class:`core.approvers.ApproverRows`;
- :mod:`~core.stores.postgres.database`: the pool of connections and errors as sentences;
- :mod:`~core.stores.postgres.schema`: the versioned migrations.

Every function takes ``url``, a libpq URL (``postgresql://user@host:5432/dbname``, or
``postgresql:///dbname`` for the local socket); a schema is chosen by libpq's
``options=-csearch_path=NAME`` parameter and the tables go in the first schema of the search path.
An unreachable server, an unknown database or schema, or a lock held too long is a
:class:`~core.errors.ResolverError` (:class:`~core.errors.StoreBusy`) with one sentence.

Only modules under :mod:`core.stores` import ``psycopg`` (an import-linter contract in
``pyproject.toml``); this package imports it only when a part is opened.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.approvers import ApproverRows
    from core.clock import Clock
    from core.data import Fault
    from core.store import Store, Summarize
    from core.world import World

__all__ = ["check_world", "open_registry_rows", "open_store", "open_world", "register_entries", "reset_world"]


def _need_psycopg() -> None:
    """Raise a ResolverError with the install command when the ``postgres`` extra is missing."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        from core.errors import ResolverError

        raise ResolverError(
            "A PostgreSQL store needs psycopg and psycopg-pool, which are not installed: pip install 'resolver[postgres]'."
        ) from None


def open_store(url: str, clock: Clock | None = None, *, summarize: Summarize) -> Store:
    """The checkpoint store in ``url`` (its schema made or upgraded on first open).

    Raises: ResolverError (one sentence), UnsupportedStoreFormat (a newer resolver's schema)."""
    _need_psycopg()
    from core.stores.postgres.store import PostgresStore

    return PostgresStore(url, clock, summarize=summarize)


def open_world(
    url: str,
    clock: Clock | None = None,
    *,
    faults: Iterable[Fault] = (),
    faults_seen: list[str] | None = None,
    actor: str = "manual",
) -> World:
    """The practice world in ``url`` (built from ``data/`` on first use), writing as ``actor``.
    Raises ResolverError (one sentence), WorldMissing."""
    _need_psycopg()
    from core.stores.postgres.world import PostgresWorld

    return PostgresWorld(url, clock, faults=faults, faults_seen=faults_seen, actor=actor)


def check_world(url: str, has_history: bool) -> None:
    """Refuse a world never built, or emptied, in a store with history. Raises WorldMissing."""
    _need_psycopg()
    from core.stores.postgres.world import check_world as check

    check(url, has_history)


def reset_world(url: str) -> None:
    """Build the practice world in ``url`` again from ``data/`` (every write forgotten)."""
    _need_psycopg()
    from core.stores.postgres.world import reset_world as reset

    reset(url)


def register_entries(url: str) -> list[dict[str, Any]]:
    """The operations register in commit order (see :func:`core.stores.register_entries`).
    Raises ValueError with one sentence."""
    _need_psycopg()
    from core.stores.postgres.world import register_entries as entries

    return entries(url)


def open_registry_rows(url: str) -> ApproverRows:
    """The approvers' rows in ``url``; opening creates nothing but the schema."""
    _need_psycopg()
    from core.stores.postgres.registry import PostgresApproverRows

    return PostgresApproverRows(url)
