"""The PostgreSQL back-end's schema, made and upgraded by versioned migrations.

Each migration is a numbered list of statements (:data:`MIGRATIONS`); the table
``resolver_migrations`` records the numbers applied, with what each made and when. Opening a
database (:func:`migrate`) applies the missing ones in order, in one transaction, under a
transaction-level advisory lock keyed by the schema's name, so two processes opening a new
schema at once make it once and a reader never sees half a schema. A schema holding a number
this resolver does not know (not in :data:`ALL`) was written by a newer resolver and is refused
with a sentence.

Why a migrations table and not a migration tool (Alembic, yoyo, sqitch): the schema is a handful
of tables that only resolver writes, every upgrade is a few statements that must run under the
same lock as the first open, and the SQLite back-end already versions its file the same way
(``PRAGMA user_version``, migrated on open): one approach for both back-ends, no extra tool to
install, configure or run before ``resolver`` works, and nothing for an operator to forget.

The tables go in the first schema of the connection's search path (libpq's
``options=-csearch_path=NAME``), which must exist. Text columns use the ``"C"`` collation, so
run IDs sort byte by byte as SQLite sorts them, whatever the database's locale.

- **1, the checkpoint store**: ``runs`` (the header and the queue's columns, ``search``: the
  casefolded search fields), ``entries`` (the lists' rows), ``audit`` (append-only: triggers
  refuse UPDATE, DELETE and TRUNCATE) with ``audit_head``, the one row every appender locks, and
  ``model_calls`` (the journal of live model calls).
- **2, the approvers registry's rows**: ``approvers`` (a name is one entry whatever its case)
  and ``registry_made`` (a row once a change made the registry).
- **3, the practice world**: the tables of ``data/world.json`` (types from its rows), the
  tables of what the write services did, the operations register and ``register_head``, the
  row every world writer locks; empty until the world is built
  (:mod:`core.stores.postgres.world`).
- **4, what the store knows of itself**: ``store_meta``, whose ``kind`` row (practice or shop)
  is written once, by the first home that opens the store, and never changed
  (:func:`core.stores.postgres.store_kind`).
- **6, the per-shop parts**: ``shop_parts``, one row per part a SQLite home keeps as a file in
  its folder (the owner's registry seal ``approvers.json``, the signed ``audit.head``, the
  practice HMAC key ``approval.key``, the trainer's ``clock.json``), so every machine pointed at
  the store shares them (:class:`core.stores.postgres.parts.PostgresParts`). Number 5 is unused: it
  was kept for indexes made at the same time, which proved unneeded (migration 1's serve every
  page: ``tests/stores/test_pg_queue_plan.py``).
- **7, the queue's counts**: ``run_counts`` (status, shard, n), kept by triggers on ``runs``
  (:data:`RUN_COUNTS`), so the filter bar's counts read a few dozen rows at any number of runs.
- **8, entries' checksums**: ``entries.checksum``, the CRC-32 of a row's body and extra, written
  with it and checked when it is read back; older rows keep NULL.
- **10, the marks of runs and the queue's events**: ``run_marks``, one row per
  claimed, handed-over or snoozed run, and ``queue_events`` with the triggers that write it
  (:mod:`core.stores.postgres.marks`). Number 9 is unused (kept for a change made at the same
  time that needed none).
- **11, the live queue**: triggers on ``runs``, ``run_marks`` and
  ``queue_events`` that send ``NOTIFY`` on the store's channel at each change the queue shows
  (:mod:`core.stores.postgres.listen`); nothing is stored.
- **12, role separation**: ``approvers.db_user``, the policy's limits and the
  catalog's prices in SQL, ``decided``, ``store_roles``, and the functions a separated store
  records decisions through (:mod:`core.stores.postgres.roles`); nothing changes until
  ``resolver store roles setup`` runs.
- **13, refreshed requests and quiet copies**: a trigger on a refresh's audit row
  writes a new ``request`` event, and the notify functions send nothing while the
  transaction-local setting ``resolver.quiet`` is on (``store copy`` sends one re-read at its end).
- **14, the register bound to the approved arguments**: ``decided.calls`` (each
  approved operation's action, written by the decision function), and the register's guard
  compares every row the executor's user writes with it (:data:`core.stores.postgres.roles.GUARD_REGISTER_14`);
  the guards' ``search_path`` pinned. A store already set up keeps its owners and grants (the
  functions are replaced, not made anew); applying it to such a store needs the administrator's
  URL (or the tables' role), as ``resolver store migrate`` does.
- **15, who proposed** (found in a new user's trial): ``runs.proposal_by``, stamped by the runs'
  guard, and ``resolver_decide`` refusing a proposal an approver's database user wrote
  (:func:`core.stores.postgres.roles.migration_15`).

- **16, a deleted run's lapse events and marks go with it**: a trigger on ``runs``
  (:data:`core.stores.postgres.marks.FORGET_WITH_RUN`).
- **17, the journal speaks only for the runner**: ``model_calls.written_by``, stamped with the
  ``session_user`` of every insert or change by a trigger that also refuses a write by a user
  mapped to an approver's entry (:func:`core.stores.postgres.roles.migration_17`); a resume
  refuses an answer an approver's user wrote.
- **18, the role a proposal needs never falls**: ``resolver_needed_role`` takes the highest of
  each line's own role and of each kind's positive values summed
  (:func:`core.stores.postgres.roles.migration_18`).
- **19, decisions in one lock order**: the counts' triggers only insert into
  ``run_count_deltas`` (:data:`COUNT_DELTAS`), and ``resolver_append``
  (:data:`core.stores.postgres.audit.APPEND_FUNCTION`) chains an audit row under the head's lock
  as the last statement before the commit, so every writer locks the run's row first and the
  audit's head last, and holds the head for the append alone.

Migrations are applied by the numbers missing, not by the highest one, so a later number below
one applied is never skipped.
"""

from __future__ import annotations

from typing import Any

import psycopg

from core.contract.store import UnsupportedStoreFormat
from core.ground.data import load_world_data
from core.ground.errors import ResolverError
from core.stores import common
from core.stores.postgres.audit import APPEND_FUNCTION
from core.stores.postgres.listen import NOTIFY_TRIGGERS, QUIET_NOTIFY, WORLD_NOTIFY
from core.stores.postgres.marks import FORGET_WITH_RUN, REFRESH_EVENT, RUN_MARKS
from core.stores.postgres.roles import ARGS_MIGRATION, ROW_HASH, migration_12, migration_15, migration_17, migration_18
from core.stores.practice import EFFECT_TABLES_COLUMNS, world_rows

C = 'text COLLATE "C"'

_AUDIT_GUARD = """
CREATE OR REPLACE FUNCTION resolver_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit table is append-only';
END
$$"""


def audit_trigger(name: str) -> str:
    """The ``CREATE TRIGGER`` of one of the audit's append-only guards (``audit_no_update``,
    ``audit_no_delete``), as migration 1 makes it and a store's open makes it again."""
    event = {"audit_no_update": "UPDATE", "audit_no_delete": "DELETE"}[name]
    return f"CREATE TRIGGER {name} BEFORE {event} ON audit FOR EACH ROW EXECUTE FUNCTION resolver_audit_append_only()"


STORE = (
    f"""CREATE TABLE runs (
        run_id {C} PRIMARY KEY, n bigint GENERATED ALWAYS AS IDENTITY, task_id {C} NOT NULL, variant {C}, model {C},
        status {C} NOT NULL, created_at {C}, updated_at {C} NOT NULL, created_ts double precision NOT NULL DEFAULT 0,
        updated_ts double precision NOT NULL DEFAULT 0, version bigint NOT NULL, customer {C}, order_id {C},
        total_amount {C}, amount_cents bigint NOT NULL DEFAULT 0, required_role {C}, role_rank integer NOT NULL DEFAULT -1,
        actions {C}, lease_owner {C}, lease_expires {C}, state {C} NOT NULL, state_ok boolean NOT NULL DEFAULT true,
        search {C} NOT NULL DEFAULT '')""",
    *(
        f"CREATE INDEX runs_status_{column} ON runs (status, {column}, run_id)"
        for column in ("updated_ts", "created_ts", "amount_cents", "role_rank")
    ),
    *(
        f"CREATE INDEX runs_{column} ON runs ({column}, run_id)"
        for column in ("updated_ts", "created_ts", "amount_cents", "role_rank")
    ),
    "CREATE INDEX runs_task ON runs (task_id, created_ts)",
    f"""CREATE TABLE entries (
        run_id {C} NOT NULL, n integer NOT NULL, list {C} NOT NULL, seq integer NOT NULL, body {C} NOT NULL,
        extra {C}, ref integer, PRIMARY KEY (run_id, n))""",
    f"""CREATE TABLE audit (
        id bigint PRIMARY KEY, run_id {C}, decision {C}, role {C}, name {C}, digest {C}, at {C}, detail {C},
        run_uid {C}, prev {C}, sig {C}, binds {C})""",
    "CREATE INDEX audit_run ON audit (run_id)",
    "CREATE INDEX audit_run_uid ON audit (run_uid, id)",
    "CREATE TABLE audit_head (one boolean PRIMARY KEY DEFAULT true CHECK (one))",
    "INSERT INTO audit_head VALUES (true)",
    _AUDIT_GUARD,
    audit_trigger("audit_no_update"),
    audit_trigger("audit_no_delete"),
    "CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit FOR EACH STATEMENT EXECUTE FUNCTION resolver_audit_append_only()",
    f"""CREATE TABLE model_calls (
        run_id {C} NOT NULL, step integer NOT NULL, attempt integer NOT NULL, route {C} NOT NULL, sent_at {C} NOT NULL,
        answer {C}, tokens_in bigint, tokens_out bigint, answered_at {C}, PRIMARY KEY (run_id, step, attempt))""",
)

REGISTRY = (
    f"""CREATE TABLE approvers (
        n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name {C} NOT NULL, role {C} NOT NULL,
        public_key {C} NOT NULL, added_at {C} NOT NULL, revoked_at {C}, signature {C} NOT NULL,
        private_key {C} NOT NULL, recovery_key {C})""",
    "CREATE UNIQUE INDEX approvers_name ON approvers (lower(name))",
    "CREATE TABLE registry_made (one boolean PRIMARY KEY DEFAULT true CHECK (one))",
)


def _sql_type(value: Any) -> str:
    return "bigint" if isinstance(value, int) else C


def world_tables() -> tuple[str, ...]:
    """The practice world's ``CREATE`` statements (migration 3), from the rows of ``data/``
    (:func:`core.stores.practice.world_rows`) and :data:`core.stores.practice.EFFECT_TABLES_COLUMNS`."""
    out = []
    for table, (rows, pk) in world_rows(load_world_data()).items():
        types: dict[str, str] = {}
        for row in rows:
            for column, value in row.items():
                if value is not None or column not in types:
                    types[column] = _sql_type(value)
        keys = pk if isinstance(pk, tuple) else (pk,)
        columns = ", ".join(f"{c} {t}" for c, t in types.items())
        out.append(f"CREATE TABLE {table} ({columns}, PRIMARY KEY ({', '.join(keys)}))")
    for table, cols in EFFECT_TABLES_COLUMNS.items():
        columns = ", ".join(f"{c} {'bigint' if t is int else C}" for c, t in cols)
        out.append(f"CREATE TABLE {table} ({columns}, PRIMARY KEY ({cols[0][0]}))")
    return (
        *out,
        "CREATE INDEX payments_order ON payments (order_id)",
        "CREATE INDEX shipments_order ON shipments (order_id)",
        "CREATE UNIQUE INDEX return_labels_item ON return_labels (order_id, sku)",
        "CREATE UNIQUE INDEX operations_seq ON operations (seq)",
        "CREATE TABLE register_head (one boolean PRIMARY KEY DEFAULT true CHECK (one))",
    )


WORLD_TABLES = (*common.WORLD_TABLES, "register_head")
"""The practice world's tables; ``register_head`` holds its one row once the world is built."""

STORE_META = (f"CREATE TABLE store_meta (key {C} PRIMARY KEY, value {C} NOT NULL, set_at timestamptz NOT NULL DEFAULT now())",)
"""Migration 4: what the store knows of itself, fixed when first set (``kind``: practice or shop)."""

SHOP_PARTS = (f"CREATE TABLE shop_parts (name {C} PRIMARY KEY, body bytea NOT NULL, set_at timestamptz NOT NULL DEFAULT now())",)
"""Migration 6: the per-shop parts (:data:`core.contract.store.SHOP_PARTS`), a row each."""

COUNT_SHARDS = 8
"""Rows per status in ``run_counts``: a writer adds to the row of its server process
(``pg_backend_pid() % COUNT_SHARDS``), so writers on different connections seldom wait on one row."""

_KEY = "CASE WHEN {t}.state_ok THEN {t}.status ELSE 'corrupt' END"

RUN_COUNTS = (
    f"CREATE TABLE run_counts (status {C} NOT NULL, shard integer NOT NULL, n bigint NOT NULL, PRIMARY KEY (status, shard))",
    f"""CREATE FUNCTION resolver_run_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO run_counts (status, shard, n)
    SELECT {_KEY.format(t="r")}, pg_backend_pid() % {COUNT_SHARDS}, count(*) FROM new_rows r GROUP BY 1 ORDER BY 1
    ON CONFLICT (status, shard) DO UPDATE SET n = run_counts.n + EXCLUDED.n;
    RETURN NULL;
END
$$""",
    f"""CREATE FUNCTION resolver_run_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO run_counts (status, shard, n)
    SELECT {_KEY.format(t="r")}, pg_backend_pid() % {COUNT_SHARDS}, -count(*) FROM old_rows r GROUP BY 1 ORDER BY 1
    ON CONFLICT (status, shard) DO UPDATE SET n = run_counts.n + EXCLUDED.n;
    RETURN NULL;
END
$$""",
    f"""CREATE FUNCTION resolver_run_counts_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO run_counts (status, shard, n)
    SELECT k, pg_backend_pid() % {COUNT_SHARDS}, d
    FROM (VALUES ({_KEY.format(t="OLD")}, -1), ({_KEY.format(t="NEW")}, 1)) v (k, d) ORDER BY k
    ON CONFLICT (status, shard) DO UPDATE SET n = run_counts.n + EXCLUDED.n;
    RETURN NULL;
END
$$""",
    """CREATE FUNCTION resolver_run_counts_cleared() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM run_counts;
    RETURN NULL;
END
$$""",
    "CREATE TRIGGER runs_counted_insert AFTER INSERT ON runs REFERENCING NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION resolver_run_counts_added()",
    "CREATE TRIGGER runs_counted_delete AFTER DELETE ON runs REFERENCING OLD TABLE AS old_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION resolver_run_counts_removed()",
    f"CREATE TRIGGER runs_counted_update AFTER UPDATE OF status, state_ok ON runs FOR EACH ROW "
    f"WHEN (({_KEY.format(t='OLD')}) IS DISTINCT FROM ({_KEY.format(t='NEW')})) "
    "EXECUTE FUNCTION resolver_run_counts_moved()",
    "CREATE TRIGGER runs_counted_truncate AFTER TRUNCATE ON runs FOR EACH STATEMENT EXECUTE FUNCTION resolver_run_counts_cleared()",
    # The runs already there, counted under the triggers' lock on the table (no writer can slip between).
    f"INSERT INTO run_counts (status, shard, n) SELECT {_KEY.format(t='runs')}, 0, count(*) FROM runs GROUP BY 1",
)
"""Migration 7: the queue's counts kept as rows (:meth:`core.stores.postgres.store.PostgresStore.counts`
sums them) instead of a ``GROUP BY`` over every run, which took 0.5 s at 1,000,000 runs.

Triggers, not the save's own SQL, keep them, so every writer of ``runs`` is counted alike: a save,
a delete, a reset, ``resolver store copy``'s import, a row flagged corrupt, SQL written by hand.
A run counts under its status, or ``corrupt`` when ``state_ok`` is false. Inserts and deletes
are counted per statement (one row per status touched, from the statement's transition table,
so a bulk insert of a million runs is one update per status, not a million updates of one row);
an update is counted per row, and only when its status or ``state_ok`` changed (the ``WHEN``
clause: a step's save, which keeps its status, runs no trigger function). Every trigger adds to
its rows in the order of the status, so two transactions never lock them in opposite orders."""

COUNT_FUNCTIONS = (
    "resolver_run_counts_added()",
    "resolver_run_counts_removed()",
    "resolver_run_counts_moved()",
    "resolver_run_counts_cleared()",
    "resolver_run_counts_fold()",
)
"""The functions of the queue's counts as migration 19 leaves them: the four triggers' and the fold."""

FOLD_AT = 256
"""Unfolded rows of ``run_count_deltas`` past which a reader of the counts folds them
(:meth:`core.stores.postgres.store.PostgresStore.counts`): the counts' read stays a few hundred
rows at most, whatever the number of writers since the last fold."""

COUNT_DELTAS = (
    f"CREATE TABLE IF NOT EXISTS run_count_deltas (status {C} NOT NULL, n bigint NOT NULL)",
    f"""CREATE OR REPLACE FUNCTION resolver_run_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO run_count_deltas (status, n) SELECT {_KEY.format(t="r")}, count(*) FROM new_rows r GROUP BY 1;
    RETURN NULL;
END
$$""",
    f"""CREATE OR REPLACE FUNCTION resolver_run_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO run_count_deltas (status, n) SELECT {_KEY.format(t="r")}, -count(*) FROM old_rows r GROUP BY 1;
    RETURN NULL;
END
$$""",
    f"""CREATE OR REPLACE FUNCTION resolver_run_counts_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO run_count_deltas (status, n) VALUES ({_KEY.format(t="OLD")}, -1), ({_KEY.format(t="NEW")}, 1);
    RETURN NULL;
END
$$""",
    """CREATE OR REPLACE FUNCTION resolver_run_counts_cleared() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM run_counts;
    DELETE FROM run_count_deltas;
    RETURN NULL;
END
$$""",
    """CREATE OR REPLACE FUNCTION resolver_run_counts_fold() RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
    folded bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('resolver-run-counts:' || current_schema())) THEN
        RETURN 0;
    END IF;
    WITH gone AS (DELETE FROM run_count_deltas RETURNING status, n),
         summed AS (SELECT status, sum(n) AS n, count(*) AS c FROM gone GROUP BY status),
         kept AS (INSERT INTO run_counts (status, shard, n) SELECT status, 0, n FROM summed
                  ON CONFLICT (status, shard) DO UPDATE SET n = run_counts.n + EXCLUDED.n)
    SELECT COALESCE(sum(c), 0) INTO folded FROM summed;
    RETURN folded;
END
$$""",
    # A store set up with role separation before this migration: the functions replaced above
    # lost their SECURITY DEFINER and pinned search path (CREATE OR REPLACE resets them), and the
    # new table and function belong to whoever migrated. Give them back to the tables' role and
    # let every user who reads the counts read the deltas and fold them.
    f"""DO $$
DECLARE
    owner_role text;
    f text;
    u text;
BEGIN
    IF to_regclass('store_roles') IS NULL THEN
        RETURN;
    END IF;
    SELECT tables_role INTO owner_role FROM store_roles;
    IF owner_role IS NULL THEN
        RETURN;
    END IF;
    EXECUTE format('ALTER TABLE run_count_deltas OWNER TO %I', owner_role);
    EXECUTE 'REVOKE ALL ON TABLE run_count_deltas FROM PUBLIC';
    FOREACH f IN ARRAY ARRAY{list(COUNT_FUNCTIONS)!r} LOOP
        EXECUTE format('ALTER FUNCTION %s OWNER TO %I', f, owner_role);
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %I, pg_catalog, pg_temp', f, current_schema());
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
    FOR u IN SELECT DISTINCT pg_get_userbyid(a.grantee) FROM pg_class c, aclexplode(c.relacl) a
             WHERE c.oid = 'run_counts'::regclass AND a.privilege_type = 'SELECT' AND a.grantee <> 0
               AND pg_get_userbyid(a.grantee) <> owner_role LOOP
        EXECUTE format('GRANT SELECT ON run_count_deltas TO %I', u);
        EXECUTE format('GRANT EXECUTE ON FUNCTION resolver_run_counts_fold() TO %I', u);
    END LOOP;
END
$$""",
)
"""Migration 19: the queue's counts only append. Migration 7's triggers added to a ``run_counts``
row (status, shard) in the writer's transaction, so that row stayed locked until the writer
committed; a decision that then waited for the audit's head held it, and another decision of the
same shard waited for it while holding the head: a lock cycle, and decisions of unrelated runs
queued behind each other. Now every trigger inserts rows into ``run_count_deltas`` (a table with
no key, so an insert waits for nobody) and a reader sums ``run_counts`` and the deltas; past
:data:`FOLD_AT` deltas a reader folds them into ``run_counts`` (``resolver_run_counts_fold``,
which gives up at once when another fold runs: it never waits). The statements are idempotent
(``IF NOT EXISTS``, ``OR REPLACE``), so a schema that lost an earlier migration's objects can
take them again."""

ENTRY_CHECKSUMS = ("ALTER TABLE entries ADD COLUMN checksum bigint",)
"""Migration 8: each entry's checksum (:func:`core.stores.common.entry_checksum`),
written with the row; the rows already there keep NULL and are validated in full when read."""

MIGRATIONS: tuple[tuple[int, str, Any], ...] = (
    (1, "the checkpoint store: runs, entries, the audit and its head, the journal of model calls", lambda: STORE),
    (2, "the approvers registry's rows", lambda: REGISTRY),
    (3, "the practice world's tables (empty until built)", world_tables),
    (4, "what the store knows of itself: its kind, fixed when first set", lambda: STORE_META),
    (
        6,
        "the per-shop parts: the registry's seal, the signed audit head, the practice key, the trainer's clock",
        lambda: SHOP_PARTS,
    ),
    (7, "the queue's counts per status, kept by triggers on runs", lambda: RUN_COUNTS),
    (8, "each entry's checksum, written with the row and checked when it is read back", lambda: ENTRY_CHECKSUMS),
    (10, "the marks of runs (claims, hand-overs, snoozes) and the queue's events", lambda: _run_marks()),
    (11, "the queue's notifications: NOTIFY at each change of a run, its marks or the queue's events", lambda: _notify()),
    (12, "role separation: approvers' database users, the policy in SQL, the decision functions and guards", lambda: _roles()),
    (
        13,
        "a refreshed request is a new request event; notifications silent during a store copy, then one to read all again",
        lambda: _refresh_and_quiet(),
    ),
    (
        14,
        "the register's guard compares each row with the operation its approval planned; the guards' search path pinned",
        lambda: _register_args(),
    ),
    (
        15,
        "role separation: who proposed a run, and a decision refused on a proposal an approver's user wrote",
        lambda: _roles_15(),
    ),
    (16, "a deleted run's lapse events and marks go with it (a trigger on runs)", lambda: _forget_with_run()),
    (
        17,
        "the journal of model calls stamped with its writer, and refused to an approver's database user",
        lambda: _journal_17(),
    ),
    (18, "the role a proposal needs never falls: each line's own role, and only positive values summed", lambda: _roles_18()),
    (
        19,
        "decisions in one lock order: the queue's counts only append, and the audit's head is locked for the append alone",
        lambda: _decisions_19(),
    ),
    (20, "the practice world's notifications: NOTIFY at each write of the world or its register", lambda: _world_notify()),
)
"""``(number, what it makes, a function giving its statements)``, in order."""


def _run_marks() -> tuple[str, ...]:
    return RUN_MARKS


def _notify() -> tuple[str, ...]:
    return NOTIFY_TRIGGERS


def _world_notify() -> tuple[str, ...]:
    return WORLD_NOTIFY


def _roles() -> tuple[str, ...]:
    return migration_12()


def _roles_15() -> tuple[str, ...]:
    return migration_15()


def _journal_17() -> tuple[str, ...]:
    return migration_17()


def _roles_18() -> tuple[str, ...]:
    return migration_18()


def _decisions_19() -> tuple[str, ...]:
    return (*COUNT_DELTAS, ROW_HASH.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1), APPEND_FUNCTION)


def _forget_with_run() -> tuple[str, ...]:
    return FORGET_WITH_RUN


def _refresh_and_quiet() -> tuple[str, ...]:
    return (*REFRESH_EVENT, *QUIET_NOTIFY)


def _register_args() -> tuple[str, ...]:
    return ARGS_MIGRATION


LATEST = MIGRATIONS[-1][0]
"""The schema version this resolver writes."""


def schema_version(conn: psycopg.Connection[Any]) -> int:
    """The highest migration applied in the search path's first schema (0 for none)."""
    return max(applied(conn), default=0)


def applied(conn: psycopg.Connection[Any]) -> set[int]:
    """The numbers of the migrations applied in the search path's first schema (empty for none)."""
    if conn.execute("SELECT to_regclass('resolver_migrations')").fetchone()[0] is None:  # type: ignore[index]
        return set()
    return {int(r[0]) for r in conn.execute("SELECT version FROM resolver_migrations")}


ALL = frozenset(version for version, _, _ in MIGRATIONS)
"""Every migration this resolver knows."""


def no_schema(conn: psycopg.Connection[Any], label: str, advice: str) -> str:
    """Why ``conn`` has no current schema, as one sentence about the store ``label``: the search
    path names a schema the connecting user may not use (a store with role separation that its
    setup did not name this user for: a new user's trial was told to create the schema
    that was there), or it names none that exists (then ``advice`` follows)."""
    row = conn.execute(
        "SELECT session_user, string_agg(n.nspname, ', ' ORDER BY n.nspname) FROM pg_namespace n "
        "WHERE n.nspname = ANY (string_to_array(replace(replace(current_setting('search_path'), ' ', ''), '\"', ''), ',')) "
        "AND NOT has_schema_privilege(n.oid, 'USAGE')"
    ).fetchone()
    head = f"{label[:1].upper()}{label[1:]}"
    if row and row[1]:
        return (
            f"{head}: the database user {row[0]} has no rights on the schema {row[1]}; a store with role separation is "
            "open only to the users its setup named (docs/team-roles.md)."
        )
    return f"{head} has no schema to hold a store (the search path names none that exists){advice}"


def migrate(conn: psycopg.Connection[Any], label: str) -> None:
    """Bring the schema of ``conn``'s search path up to :data:`LATEST` (see the module's docstring).

    Raises:
        ResolverError: the search path names no schema that exists (psycopg's error, as a sentence),
            or the connection's user may not apply a missing migration (a separated store's
            approver, runner or executor: only the tables' owner or an administrator may).
        UnsupportedStoreFormat: the schema holds a version this resolver does not know (a newer one's).
    """

    schema = conn.execute("SELECT current_schema()").fetchone()[0]  # type: ignore[index]
    if schema is None:
        raise ResolverError(
            no_schema(conn, label, "; create it (CREATE SCHEMA name) or choose another in the URL's options=-csearch_path=name.")
        )
    done = applied(conn)
    if done == ALL:
        return
    _refuse_newer(done, label)
    try:
        _apply(conn, label)
    except psycopg.errors.InsufficientPrivilege:
        missing = sorted(ALL - done)
        raise ResolverError(
            f"{label[:1].upper()}{label[1:]} needs migration{'s' if len(missing) > 1 else ''} "
            f"{', '.join(str(v) for v in missing)}, which its user may not apply (a store with role "
            "separation is upgraded by the owner of its tables): run resolver store migrate with the database "
            "administrator's URL first."
        ) from None


def _refuse_newer(done: set[int], label: str) -> None:
    unknown = done - ALL
    if unknown:
        raise UnsupportedStoreFormat(
            f"{label[:1].upper()}{label[1:]} has schema version {max(unknown)}, written by a newer resolver; this "
            f"resolver reads versions up to {LATEST}. Upgrade resolver, or choose another schema."
        )


def _apply(conn: psycopg.Connection[Any], label: str) -> None:
    """Apply the missing migrations in one transaction, under the schema's advisory lock."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('resolver-migrations:' || current_schema()))")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS resolver_migrations (version integer PRIMARY KEY, description text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = applied(conn)
        _refuse_newer(done, label)
        for version, description, statements in MIGRATIONS:
            if version in done:
                continue
            for statement in statements():
                conn.execute(statement)
            conn.execute("INSERT INTO resolver_migrations (version, description) VALUES (%s, %s)", (version, description))
