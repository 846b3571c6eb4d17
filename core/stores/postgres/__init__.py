"""PostgreSQL, the team store: the second back-end of the store contract.

- :mod:`~core.stores.postgres.store`: :class:`PostgresStore`, implementing :class:`core.contract.store.Store`;
- :mod:`~core.stores.postgres.audit`: the audit chain's SQL, appended under a lock on its head;
- :mod:`~core.stores.postgres.world`: :class:`PostgresWorld`, implementing :class:`core.contract.world.World`;
- :mod:`~core.stores.postgres.registry`: the approvers' rows, implementing :class:`core.contract.registry.ApproverRows`;
- :mod:`~core.stores.postgres.parts`: the per-shop parts (seal, audit head, practice key, trainer's clock),
  implementing :class:`core.contract.store.ShopParts`;
- :mod:`~core.stores.postgres.pool`: the pool of connections and errors as sentences;
- :mod:`~core.stores.postgres.database`: the one pool of a URL in a process, opened with the migrations
  and the triggers' check;
- :mod:`~core.stores.postgres.schema`: the versioned migrations.

Every function takes ``url``, a libpq URL (``postgresql://user@host:5432/dbname``, or
``postgresql:///dbname`` for the local socket); a schema is chosen by libpq's
``options=-csearch_path=NAME`` parameter and the tables go in the first schema of the search path.
An unreachable server, an unknown database or schema, or a lock held too long is a
:class:`~core.ground.errors.ResolverError` (:class:`~core.ground.errors.StoreBusy`) with one sentence.

Only modules under :mod:`core.stores` import ``psycopg`` (an import-linter contract in
``pyproject.toml``); this package imports it only when a part is opened, so that
:data:`BACKEND` (:class:`PostgresBackend`, what :data:`core.stores.BACKENDS` holds) is there
without the ``postgres`` extra, and says in one sentence what to install.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from core import install_hint
from core.ground.errors import ResolverError
from core.ground.safetext import safe_text

if TYPE_CHECKING:
    from pathlib import Path

    from core.contract.backend import Place
    from core.contract.registry import ApproverRows
    from core.contract.store import JournalKey, QueueChanges, ShopParts, Store, StoreRows, Summarize
    from core.contract.world import World
    from core.ground.clock import Clock
    from core.ground.data import Fault

__all__ = [
    "BACKEND",
    "PostgresBackend",
    "check_world",
    "open_registry_rows",
    "open_rows",
    "open_shop_parts",
    "open_store",
    "open_world",
    "queue_listener",
    "recorded_kind",
    "register_entries",
    "reset_world",
    "schema_lines",
    "schema_version_of",
    "setup_roles",
    "store_kind",
]


def _need_psycopg() -> None:
    """Raise a ResolverError with the install command when the ``postgres`` extra is missing."""
    try:
        import psycopg  # noqa: F401  lazy: psycopg is optional
        import psycopg_pool  # noqa: F401  lazy: psycopg is optional
    except ImportError:
        raise ResolverError(
            f"A PostgreSQL store needs psycopg and psycopg-pool, which are not installed: {install_hint('postgres')}."
        ) from None


def open_store(url: str, clock: Clock | None = None, *, summarize: Summarize) -> Store:
    """The checkpoint store in ``url`` (its schema made or upgraded on first open).

    Raises: ResolverError (one sentence), UnsupportedStoreFormat (a newer resolver's schema)."""
    _need_psycopg()
    from core.stores.postgres.store import PostgresStore  # lazy: psycopg is optional

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
    from core.stores.postgres.world import PostgresWorld  # lazy: psycopg is optional

    return PostgresWorld(url, clock, faults=faults, faults_seen=faults_seen, actor=actor)


def check_world(url: str, has_history: bool) -> None:
    """Refuse a world never built, or emptied, in a store with history. Raises WorldMissing."""
    _need_psycopg()
    from core.stores.postgres.world import check_world as check  # lazy: psycopg is optional

    check(url, has_history)


def reset_world(url: str) -> None:
    """Build the practice world in ``url`` again from ``data/`` (every write forgotten)."""
    _need_psycopg()
    from core.stores.postgres.world import reset_world as reset  # lazy: psycopg is optional

    reset(url)


def register_entries(url: str) -> list[dict[str, Any]]:
    """The operations register in commit order (see :func:`core.stores.register_entries`).
    Raises ValueError with one sentence."""
    _need_psycopg()
    from core.stores.postgres.world import register_entries as entries  # lazy: psycopg is optional

    return entries(url)


def open_registry_rows(url: str) -> ApproverRows:
    """The approvers' rows in ``url``; opening creates nothing but the schema."""
    _need_psycopg()
    from core.stores.postgres.registry import PostgresApproverRows  # lazy: psycopg is optional

    return PostgresApproverRows(url)


def open_rows(url: str) -> Any:
    """Every row of the team store at ``url``, table by table (:class:`core.contract.store.StoreRows`,
    for ``resolver store copy``). Raises ResolverError (one sentence)."""
    _need_psycopg()
    from core.stores.postgres.rows import PostgresRows  # lazy: psycopg is optional

    return PostgresRows(url)


def queue_listener(url: str) -> Any:
    """A listener of the team store's live queue at ``url``, not started
    (:class:`core.stores.postgres.listen.QueueListener`). Raises ResolverError when psycopg is
    not installed."""
    _need_psycopg()
    from core.stores.postgres.listen import QueueListener  # lazy: psycopg is optional

    return QueueListener(url)


def schema_version_of(url: str) -> int | None:
    """The schema version of the team store at ``url``, read without migrating: the highest
    migration applied (0: no resolver tables yet). Raises ResolverError (one sentence) when the
    server cannot be reached or the URL's search path names no schema that exists."""
    _need_psycopg()
    import psycopg  # lazy: psycopg is optional

    from core.stores.postgres.pool import CONNECT_TIMEOUT_S, describe, first_line  # lazy: psycopg is optional
    from core.stores.postgres.schema import no_schema, schema_version  # lazy: psycopg is optional

    label = describe(url)
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
            schema = conn.execute("SELECT current_schema()").fetchone()
            if not schema or not schema[0]:
                raise ResolverError(no_schema(conn, label, "."))
            return schema_version(conn)
    except psycopg.Error as exc:
        first = first_line(exc, url)
        raise ResolverError(f"Cannot reach {label}: {first}.") from None


def open_shop_parts(url: str) -> ShopParts:
    """The per-shop parts in ``url`` (table ``shop_parts``); opening creates nothing but the schema."""
    _need_psycopg()
    from core.stores.postgres.parts import PostgresParts  # lazy: psycopg is optional

    return PostgresParts(url)


def recorded_kind(url: str) -> str | None:
    """The kind the store at ``url`` recorded, or None when no home opened it yet; changes
    nothing but the schema. Raises ResolverError (one sentence) when the store cannot be reached."""
    _need_psycopg()
    from core.stores.postgres.database import database  # lazy: psycopg is optional

    with database(url).read() as conn:
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'kind'").fetchone()
    return str(row[0]) if row else None


def store_kind(url: str, kind: str) -> str:
    """The kind the store at ``url`` was made as (``practice`` or ``shop``): ``kind``
    is written the first time a home opens the store, and from then on the recorded kind is
    returned whatever is asked, so a folder of another kind is told (the caller refuses).
    Raises ResolverError (one sentence) when the store cannot be reached."""
    _need_psycopg()
    from core.stores.postgres.database import database  # lazy: psycopg is optional

    db = database(url)
    with db.read() as conn:  # a user of a store with role separation may only read it
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'kind'").fetchone()
    if row:
        return str(row[0])
    with db.transaction() as conn:
        conn.execute("INSERT INTO store_meta (key, value) VALUES ('kind', %s) ON CONFLICT (key) DO NOTHING", (kind,))
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'kind'").fetchone()
    return str(row[0]) if row else kind


def schema_lines(url: str) -> list[tuple[str, str]]:
    """``resolver doctor``'s look at the team store at ``url``, changing nothing: ``(level,
    text)`` pairs (``ok``, ``warn``, ``FAIL``) for the server it reached and the schema version
    against the one this resolver writes (:data:`~core.stores.postgres.schema.LATEST`), and
    whether the store's tables may be opened (the second value of the last pair). Never raises:
    an unreachable server or a missing extra is a FAIL line."""
    try:
        _need_psycopg()
    except Exception as exc:  # ResolverError: the extra is missing
        return [("FAIL", str(exc))]
    import psycopg  # lazy: psycopg is optional

    from core.stores.postgres.pool import CONNECT_TIMEOUT_S, describe, first_line  # lazy: psycopg is optional
    from core.stores.postgres.schema import LATEST, no_schema, schema_version  # lazy: psycopg is optional

    label = describe(url)
    missing = ""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
            server = conn.info.parameter_status("server_version") or "?"
            schema = conn.execute("SELECT current_schema()").fetchone()
            have = schema_version(conn) if schema and schema[0] else -1
            if have < 0:
                missing = no_schema(conn, label, "; create it or choose another")
            roles = _roles_line(conn) if have >= 12 else None
    except psycopg.Error as exc:
        first = first_line(exc, url)
        return [("FAIL", f"team store: cannot reach {label}: {first}")]
    lines = [("ok", f"team store: {label}, PostgreSQL {server}")]
    if have < 0:
        lines.append(("FAIL", f"team store: {missing[:1].lower()}{missing[1:]}"))
    elif have == 0:
        lines.append(("warn", "team store: no resolver tables yet; the first command that writes makes them"))
    elif have > LATEST:
        lines.append(
            ("FAIL", f"team store: schema version {have} is a newer resolver's (this one writes {LATEST}); upgrade resolver")
        )
    elif have < LATEST:
        lines.append(("warn", f"team store: schema version {have}; the next command that writes upgrades it to {LATEST}"))
    else:
        lines.append(("ok", f"team store: schema version {have} (migrations in resolver_migrations)"))
    if roles is not None:
        lines.insert(-1, roles)
    return lines


def _roles_line(conn: Any) -> tuple[str, str]:
    """``doctor``'s line on role separation: off, or on with the tables' role and
    what this connection's user is (an approver's entry, or mapped to none)."""
    row = conn.execute("SELECT tables_role FROM store_roles").fetchone()
    if row is None:
        return ("ok", "team store: role separation off (every machine's user may write every table; see `store roles setup`)")
    me = conn.execute(
        "SELECT session_user, (SELECT name || ' (' || role || ')' FROM approvers WHERE db_user = session_user "
        "AND revoked_at IS NULL)"
    ).fetchone()
    who = f"approver {safe_text(me[1])}" if me[1] else "mapped to no approver"
    return ("ok", f"team store: role separation on (tables owned by {row[0]}); this user, {me[0]}, is {who}")


def setup_roles(url: str, tables_role: str, users: dict[str, list[str]], mapping: dict[str, str]) -> list[str]:
    """``resolver store roles setup``: role separation in the team store at ``url``,
    which must be a database administrator's connection (one that may create roles and change
    owners); the schema is migrated first. Returns the lines to print. Raises ResolverError
    (one sentence), see :func:`core.stores.postgres.roles.setup_roles`."""
    _need_psycopg()
    import psycopg  # lazy: psycopg is optional

    from core.stores.postgres.database import database, forget  # lazy: psycopg is optional
    from core.stores.postgres.pool import CONNECT_TIMEOUT_S, describe, first_line  # lazy: psycopg is optional
    from core.stores.postgres.roles import setup_roles as setup  # lazy: psycopg is optional

    database(url)  # made or upgraded to the latest migration
    forget(url)
    label = describe(url)
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
            return setup(conn, tables_role, users, mapping)
    except psycopg.errors.InsufficientPrivilege as exc:
        first = first_line(exc, url)
        raise ResolverError(
            f"The user of {label} may not set up roles ({first}); run this with a database administrator's URL. Nothing was changed."
        ) from None
    except psycopg.Error as exc:
        first = first_line(exc, url)
        raise ResolverError(f"Cannot set up roles in {label}: {first}. Nothing was changed.") from None


class PostgresBackend:
    """The team store (:class:`core.contract.backend.Backend`): a PostgreSQL database that machines
    share, named by a libpq URL; each method is this package's function of the same part."""

    name = "postgresql"
    schemes: tuple[str, ...] = ("postgresql", "postgres")
    team = True

    def open_store(
        self,
        place: Place,
        clock: Clock | None,
        *,
        summarize: Summarize,
        afresh: bool,
        journal_key: JournalKey | None,
    ) -> Store:
        return open_store(str(place), clock, summarize=summarize)  # its database stamps each row's writer: no key

    def open_world(
        self,
        place: Place,
        clock: Clock | None,
        *,
        faults: Iterable[Fault],
        faults_seen: list[str] | None,
        actor: str,
    ) -> World:
        return open_world(str(place), clock, faults=faults, faults_seen=faults_seen, actor=actor)

    def check_world(self, place: Place, has_history: bool) -> None:
        check_world(str(place), has_history)

    def reset_world(self, place: Place) -> None:
        reset_world(str(place))

    def register_entries(self, place: Place) -> list[dict[str, Any]]:
        return register_entries(str(place))

    def open_registry_rows(self, place: Place) -> ApproverRows:
        return open_registry_rows(str(place))

    def open_shop_parts(self, root: Path, place: Place | None) -> ShopParts:
        return open_shop_parts(str(place))

    def recorded_kind(self, place: Place) -> str | None:
        return recorded_kind(str(place))

    def store_kind(self, place: Place, kind: str) -> str:
        return store_kind(str(place), kind)

    def queue_listener(self, place: Place) -> QueueChanges | None:
        listener: QueueChanges = queue_listener(str(place))
        return listener

    def open_rows(self, place: Place, journal_key: JournalKey | None) -> StoreRows:
        rows: StoreRows = open_rows(str(place))
        return rows

    def store_version(self, place: Place) -> tuple[int | None, int]:
        have = schema_version_of(str(place))
        from core.stores.postgres.schema import LATEST  # lazy: psycopg is optional

        return have, LATEST

    def doctor_lines(self, place: Place) -> list[tuple[str, str]]:
        return list(schema_lines(str(place)))

    def setup_roles(self, place: Place, tables_role: str, users: dict[str, list[str]], mapping: dict[str, str]) -> list[str]:
        return setup_roles(str(place), tables_role, users, mapping)

    def folder_files(self) -> None:
        return None  # nothing of a team store is a file in the home folder

    def lesson_classes(self) -> tuple[Any, Any]:
        raise ResolverError("The lesson's CheckpointStore(path) and World(path) take a file's path, not a team store's URL.")


BACKEND = PostgresBackend()
"""The PostgreSQL back-end, :data:`core.stores.BACKENDS`' ``postgresql``."""
