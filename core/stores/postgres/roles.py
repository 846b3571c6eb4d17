"""A team store that refuses what a role may not do: migration 12 and ``resolver store
roles setup``.

**Migration 12** (:data:`ROLES_MIGRATION`, applied to every team store; nothing changes for a
store never set up):

- ``approvers.db_user``: the database user (``session_user``) an approver's entry is mapped to,
  one entry per user (unique); NULL for an entry not mapped.
- ``policy_limits`` and ``catalog_prices``: the policy's approval limits and the catalog's unit
  prices (``data/policy.json``, ``data/world.json``) ported into SQL, so the database recomputes
  the role a proposal needs (:data:`NEEDED_ROLE`, the rule of :func:`core.engine.policy.proposal_role`)
  from the proposal stored in the run's header, never from a column a caller wrote.
- ``decided``: one row per decision recorded by :data:`DECIDE` (the run, the audit row's ``id``
  and the IDs of the operations approved); the register's guard reads it.
- ``store_roles``: one row once ``store roles setup`` ran (the role that owns the tables).
- the functions: ``resolver_decide`` (a decision: approve or reject), ``resolver_note`` (a refusal,
  refresh or mark's audit row), ``resolver_put_head`` (the signed ``audit.head``), each ``SECURITY
  DEFINER`` with ``search_path`` pinned to the store's schema; the guards
  ``resolver_guard_runs`` and ``resolver_guard_register`` (``SECURITY INVOKER``: they see the
  caller's ``current_user``), whose triggers only ``setup`` creates.

**Setup** (:func:`setup_roles`, run with a database administrator's connection) makes a
``NOLOGIN`` role own every table, sequence and function of the schema, revokes everything from
``PUBLIC``, grants each kind of user its rights (the table below, also in the README), maps
registry entries to database users and creates the guards' triggers. Inside the three functions
``current_user`` is the owning role; anywhere else it is the caller, so the triggers tell a
direct write from one made through a function:

==========  =================================================================================
user        may write
==========  =================================================================================
runner      runs (steps; never an approval or a rejection, never a run leaving
            ``waiting_approval`` for ``executing``), entries, model_calls (the runner's
            alone: migration 17), and a ``lapse`` event (row-level security on
            ``queue_events``: no other kind)
executor    the runner's but ``model_calls`` (read only), and the practice world; the register and the tables of what the
            services did only for an operation a recorded approval planned (``decided``), with
            that operation's arguments (migration 14, :data:`GUARD_REGISTER_14`)
approver    the executor's (``resolver approve`` carries the approval out at once); decisions,
            refusal rows and ``audit.head`` only through the functions, as its mapped entry
owner       the approver's, and the registry (``approvers``, ``registry_made``), ``shop_parts``
            (the seal ``approvers.json``), the audit's registry rows (append-only)
==========  =================================================================================

Every kind reads every table. Nobody but the owning role (and a superuser) may change the
schema, drop a trigger, or update or delete an audit row. ``setup`` takes INSERT and UPDATE on
``model_calls`` back from every user it names that is not also the runner in that call (a GRANT
never takes back what an earlier setup gave); the owner keeps DELETE there (a run deleted or
reset takes its journal with it).

**Migration 14** (:data:`ARGS_MIGRATION`) replaces the decision function and the register's
guard in place (same names and signatures: a store already set up keeps their owner and grants;
only the tables' owner or an administrator can apply it, and ``setup`` run afterwards transfers
every function as before) and pins the guards' ``search_path``.

Where the seal and the audit head live: ``shop_parts`` (rows ``approvers.json`` and
``audit.head``), writable by the owner's user, the head by approvers only through
``resolver_put_head`` (which refuses a head shorter than the stored one); both are signed
(the seal by the owner's key, the head by an approver's), and the keys are on each person's
machine, never in the database, so a database writer who passes the grants still cannot forge
either (``resolver audit verify``, the executor's check of every approval).
"""

from __future__ import annotations

import json
import re
from typing import Any

import psycopg
from psycopg import sql

from core.ground.data import ROLES, load_policy, load_world_data
from core.ground.errors import ResolverError
from core.stores.common import WORLD_TABLES
from core.stores.postgres.audit import CHAIN_TIP
from core.stores.postgres.guards import JOURNAL_TRIGGER, make_again, setup_triggers
from core.stores.practice import EFFECT_TABLES_COLUMNS

C = 'text COLLATE "C"'

_ROLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

_HEADER = ("status", "updated_at", "updated_ts", "version", "state")
"""The header columns a decision writes (the others are the proposal's, which it may not change)."""

_DECISION_KEYS = ("status", "approval", "rejection", "operations", "version", "updated_at")
"""The header's fields a decision may change (``TaskState``); every other field must be equal."""


def _policy_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    policy = load_policy()
    limits = [
        {
            "action": limit.action,
            "role": limit.role,
            "rank": ROLES.index(limit.role),
            "max_amount": None if limit.max_amount is None else str(limit.max_amount),
        }
        for limit in policy.approval_limits
    ]
    prices = [{"sku": item.sku, "price": str(item.price)} for item in load_world_data().catalog]
    return limits, prices


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def policy_statements() -> tuple[str, ...]:
    """Fill ``policy_limits`` and ``catalog_prices`` again from the shipped policy and catalog."""
    limits, prices = _policy_rows()
    return (
        "DELETE FROM policy_limits",
        "DELETE FROM catalog_prices",
        f"INSERT INTO policy_limits SELECT * FROM json_populate_recordset(null::policy_limits, {_literal(json.dumps(limits))})",
        f"INSERT INTO catalog_prices SELECT * FROM json_populate_recordset(null::catalog_prices, {_literal(json.dumps(prices))})",
    )


ROW_HASH = """CREATE FUNCTION resolver_row_hash(a audit) RETURNS text LANGUAGE sql STABLE AS $$
SELECT encode(sha256(convert_to('[' || concat_ws(',', to_json(a.id)::text,
    COALESCE(to_json(a.run_id)::text, 'null'), COALESCE(to_json(a.decision)::text, 'null'),
    COALESCE(to_json(a.role)::text, 'null'), COALESCE(to_json(a.name)::text, 'null'),
    COALESCE(to_json(a.digest)::text, 'null'), COALESCE(to_json(a.at)::text, 'null'),
    COALESCE(to_json(a.detail)::text, 'null'), COALESCE(to_json(a.run_uid)::text, 'null'),
    COALESCE(to_json(a.prev)::text, 'null'), COALESCE(to_json(a.sig)::text, 'null'))
    || CASE WHEN a.binds IS NOT NULL THEN ',' || to_json(a.binds)::text ELSE '' END || ']', 'UTF8')), 'hex')
$$"""
""":func:`core.contract.audit.row_hash` in SQL: SHA-256 of the row's canonical JSON (PostgreSQL's
``to_json`` of a text escapes as Python's ``json.dumps(ensure_ascii=False)`` does), so the
decision function chains a row to the real tip, never to a ``prev`` the caller wrote."""

NEEDED_ROLE = """CREATE FUNCTION resolver_needed_role(actions jsonb) RETURNS text LANGUAGE plpgsql STABLE AS $$
DECLARE
    a jsonb;
    v numeric;
    got text;
    got_rank integer;
    best text := 'agent';
    best_rank integer := 0;
BEGIN
    FOR a IN SELECT * FROM jsonb_array_elements(COALESCE(NULLIF(actions, 'null'::jsonb), '[]'::jsonb)) LOOP
        IF NOT EXISTS (SELECT 1 FROM policy_limits WHERE action = a->>'type') THEN
            RAISE EXCEPTION 'The policy says nobody may approve %.', a->>'type' USING ERRCODE = 'RS403';
        END IF;
        v := CASE a->>'type'
            WHEN 'request_refund' THEN (a->>'amount')::numeric
            WHEN 'reship_item' THEN COALESCE((SELECT price FROM catalog_prices WHERE sku = a->>'sku'), 0)
                                    * (a->>'quantity')::numeric
            ELSE 0 END;
        SELECT role, rank INTO got, got_rank FROM policy_limits
            WHERE action = a->>'type' AND (max_amount IS NULL OR v <= max_amount) ORDER BY rank LIMIT 1;
        IF got IS NULL THEN
            got := 'grace';
            got_rank := 2;
        END IF;
        IF got_rank > best_rank THEN
            best := got;
            best_rank := got_rank;
        END IF;
    END LOOP;
    RETURN best;
END
$$"""
""":func:`core.engine.policy.proposal_role` in SQL: the lowest role whose limit covers each action's
value (a refund its amount, a reship unit price x quantity, anything else 0), the highest of
them for the proposal (``agent`` when it has none)."""

_CALLER = """
    SELECT a.name, a.role INTO who, their_role FROM approvers a WHERE a.db_user = session_user AND a.revoked_at IS NULL;
    IF who IS NULL THEN
        RAISE EXCEPTION 'The database user % is not mapped to an approver of this store (or the entry is revoked); nothing was recorded.',
            session_user USING ERRCODE = 'RS403';
    END IF;"""

_APPEND = (
    CHAIN_TIP
    + """
    IF p_audit->>'role' IS DISTINCT FROM their_role OR p_audit->>'name' IS DISTINCT FROM who THEN
        RAISE EXCEPTION 'The audit row names % (%), but the database user % is %''s entry (%); nothing was recorded.',
            p_audit->>'name', p_audit->>'role', session_user, who, their_role USING ERRCODE = 'RS403';
    END IF;
    INSERT INTO audit (id, run_id, decision, role, name, digest, at, detail, run_uid, prev, sig, binds) VALUES (
        next_id, p_run_id, p_audit->>'decision', their_role, who, p_audit->>'digest', p_audit->>'at',
        COALESCE(p_audit->>'detail', ''), p_audit->>'run_uid', prev, COALESCE(p_audit->>'sig', ''), p_audit->>'binds');"""
)

_RANK = "array_position(ARRAY['agent', 'team_lead', 'grace'], {})"

DECIDE = f"""CREATE FUNCTION resolver_decide(
    p_run_id text, p_version bigint, p_header jsonb, p_n int[], p_list text[], p_seq int[], p_body text[],
    p_extra text[], p_ref int[], p_checksum bigint[], p_audit jsonb) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    who text;
    their_role text;
    r runs;
    old jsonb;
    new jsonb;
    needed text;
    kind text := p_audit->>'decision';
    tip audit;
    prev text;
    next_id bigint;
    ops text[];
BEGIN{_CALLER}
    SELECT * INTO r FROM runs WHERE run_id = p_run_id FOR UPDATE;
    IF r.run_id IS NULL THEN
        RAISE EXCEPTION 'There is no run %; nothing was recorded.', p_run_id USING ERRCODE = 'RS403';
    END IF;
    IF r.version <> p_version THEN
        RETURN 0;
    END IF;
    IF r.status <> 'waiting_approval' OR NOT r.state_ok THEN
        RAISE EXCEPTION 'Run % is %, not waiting for approval; nothing was recorded.', p_run_id, r.status USING ERRCODE = 'RS403';
    END IF;
    old := r.state::jsonb;
    new := (p_header->>'state')::jsonb;
    IF NULLIF(old->'approval', 'null'::jsonb) IS NOT NULL OR NULLIF(old->'rejection', 'null'::jsonb) IS NOT NULL THEN
        RAISE EXCEPTION 'Run % was already decided; nothing was recorded.', p_run_id USING ERRCODE = 'RS403';
    END IF;
    IF kind IN ('approve', 'reject') THEN  -- who may reject: as for approve
        needed := resolver_needed_role(old->'proposal'->'actions');
        IF {_RANK.format("their_role")} < {_RANK.format("needed")} THEN
            RAISE EXCEPTION '% is %, and run % needs % or above; nothing was recorded.', who, their_role, p_run_id, needed
                USING ERRCODE = 'RS403';
        END IF;
    END IF;
    IF (new - ARRAY{list(_DECISION_KEYS)!r}) IS DISTINCT FROM (old - ARRAY{list(_DECISION_KEYS)!r}) THEN
        RAISE EXCEPTION 'A decision of run % may change only its status, decision and operations, not %; nothing was recorded.',
            p_run_id, (SELECT string_agg(k, ', ' ORDER BY k) FROM (SELECT jsonb_object_keys(new) UNION SELECT jsonb_object_keys(old)) x (k)
                       WHERE new->k IS DISTINCT FROM old->k AND k <> ALL (ARRAY{list(_DECISION_KEYS)!r})) USING ERRCODE = 'RS403';
    END IF;
    IF (new->>'version')::bigint IS DISTINCT FROM p_version + 1 OR (p_header->>'version')::bigint IS DISTINCT FROM p_version + 1
       OR p_header->>'status' IS DISTINCT FROM new->>'status' THEN
        RAISE EXCEPTION 'The decision of run % is not the next version of its checkpoint; nothing was recorded.', p_run_id
            USING ERRCODE = 'RS403';
    END IF;
    IF kind = 'approve' THEN
        IF new->>'status' <> 'executing' OR new->'approval'->>'role' IS DISTINCT FROM their_role
           OR new->'approval'->>'name' IS DISTINCT FROM who OR new->'approval'->>'digest' IS DISTINCT FROM p_audit->>'digest'
           OR NULLIF(new->'rejection', 'null'::jsonb) IS NOT NULL THEN
            RAISE EXCEPTION 'The approval of run % is not %''s own; nothing was recorded.', p_run_id, who USING ERRCODE = 'RS403';
        END IF;
        ops := ARRAY(SELECT o->>'operation_id' FROM jsonb_array_elements(COALESCE(new->'operations', '[]'::jsonb)) o);
        IF p_audit->>'binds' IS NOT NULL AND (p_audit->>'binds')::jsonb ? 'ops' AND ops IS DISTINCT FROM
           ARRAY(SELECT jsonb_array_elements_text((p_audit->>'binds')::jsonb->'ops')) THEN
            RAISE EXCEPTION 'The operations of run % are not the ones its approval signs; nothing was recorded.', p_run_id
                USING ERRCODE = 'RS403';
        END IF;
    ELSIF kind = 'reject' THEN
        IF new->>'status' <> 'handed_to_person' OR new->'rejection'->>'role' IS DISTINCT FROM their_role
           OR new->'rejection'->>'name' IS DISTINCT FROM who OR NULLIF(new->'approval', 'null'::jsonb) IS NOT NULL
           OR jsonb_array_length(COALESCE(new->'operations', '[]'::jsonb)) <> 0 THEN
            RAISE EXCEPTION 'The rejection of run % is not %''s own; nothing was recorded.', p_run_id, who USING ERRCODE = 'RS403';
        END IF;
        ops := ARRAY[]::text[];
    ELSE
        RAISE EXCEPTION 'A decision is approve or reject, not %; nothing was recorded.', kind USING ERRCODE = 'RS403';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_list) l WHERE l <> 'events')
       OR (SELECT min(x) FROM unnest(p_n) x) <= (SELECT COALESCE(max(n), 0) FROM entries WHERE run_id = p_run_id) THEN
        RAISE EXCEPTION 'A decision of run % may only append events; nothing was recorded.', p_run_id USING ERRCODE = 'RS403';
    END IF;
    UPDATE runs SET status = p_header->>'status', updated_at = p_header->>'updated_at',
        updated_ts = (p_header->>'updated_ts')::double precision, version = p_version + 1, state = p_header->>'state',
        state_ok = true WHERE run_id = p_run_id;
    INSERT INTO entries (run_id, n, list, seq, body, extra, ref, checksum)
        SELECT p_run_id, * FROM unnest(p_n, p_list, p_seq, p_body, p_extra, p_ref, p_checksum);
    IF p_audit->>'run_uid' IS DISTINCT FROM old->>'run_uid' OR kind IS DISTINCT FROM p_audit->>'decision' THEN
        RAISE EXCEPTION 'The audit row is not of run %; nothing was recorded.', p_run_id USING ERRCODE = 'RS403';
    END IF;{_APPEND}
    INSERT INTO decided (audit_id, run_id, run_uid, decision, ops) VALUES (next_id, p_run_id, old->>'run_uid', kind, ops);
    RETURN next_id;
END
$$"""
"""A decision (approve or reject) as one write, checked here whoever calls: the caller's
registry entry by ``session_user`` (never a column the caller wrote), the run waiting at the
version read, the role its stored proposal needs under the SQL policy (for a rejection too, as
the approval code asks), the new header equal to
the old but for the decision's fields, the decision's role and name the entry's, the audit row
chained to the real tip. Returns the audit row's ``id``, or 0 when the version moved (the
caller's compare-and-set lost). Refusals raise SQLSTATE ``RS403`` (``RS409``: the audit moved
since the decision was signed)."""

NOTE = f"""CREATE FUNCTION resolver_note(p_run_id text, p_audit jsonb) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    who text;
    their_role text;
    tip audit;
    prev text;
    next_id bigint;
    kind text := p_audit->>'decision';
BEGIN
    IF kind = 'refused' OR kind LIKE 'refused:%' THEN
        -- A refusal only stops a write: recorded as given (the executor's user is mapped to no entry).
        who := p_audit->>'name';
        their_role := p_audit->>'role';
    ELSIF kind IN ('refresh', 'claim', 'release', 'handover', 'snooze') THEN{_CALLER.replace(chr(10) + "    ", chr(10) + "        ")}
    ELSE
        RAISE EXCEPTION 'A % row is not recorded this way (decisions go through resolver_decide, registry rows are the owner''s); nothing was recorded.',
            kind USING ERRCODE = 'RS403';
    END IF;{_APPEND}
    RETURN next_id;
END
$$"""
"""An audit row that is not a decision, in the caller's transaction: a refusal (``refused``,
``refused:...``, recorded as given: it names the approval it stops, and a refusal can only stop
a write), or a refresh or a mark (claim, release, hand-over, snooze) as the caller's
registry entry only."""

PUT_HEAD = f"""CREATE FUNCTION resolver_put_head(p_body bytea) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    who text;
    their_role text;
    stored bytea := (SELECT body FROM shop_parts WHERE name = 'audit.head');
BEGIN{_CALLER}
    IF stored IS NOT NULL AND (convert_from(p_body, 'UTF8')::jsonb->>'length')::bigint
                              < (convert_from(stored, 'UTF8')::jsonb->>'length')::bigint THEN
        RAISE EXCEPTION 'The audit head may not go back to fewer rows; nothing was written.' USING ERRCODE = 'RS403';
    END IF;
    INSERT INTO shop_parts (name, body) VALUES ('audit.head', p_body)
        ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body, set_at = now();
END
$$"""
"""The signed ``audit.head`` after an approver's decision (its signature is checked by
``resolver audit verify``; here only that it never goes back to fewer rows)."""

_OWNING = "(SELECT tables_role FROM store_roles)"

GUARD_RUNS = f"""CREATE FUNCTION resolver_guard_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = {_OWNING} OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.status IN ('executing', 'done') OR NULLIF(NEW.state::jsonb->'approval', 'null'::jsonb) IS NOT NULL
           OR NULLIF(NEW.state::jsonb->'rejection', 'null'::jsonb) IS NOT NULL THEN
            RAISE EXCEPTION 'A new run may not carry a decision; decisions are recorded only by resolver_decide.'
                USING ERRCODE = 'RS403';
        END IF;
        RETURN NEW;
    END IF;
    IF OLD.status = 'waiting_approval' AND NEW.status IN ('executing', 'done') THEN
        RAISE EXCEPTION 'Run % may leave waiting_approval for % only through resolver_decide.', OLD.run_id, NEW.status
            USING ERRCODE = 'RS403';
    END IF;
    IF NEW.state IS DISTINCT FROM OLD.state AND (
        (NULLIF(NEW.state::jsonb->'approval', 'null'::jsonb) IS NOT NULL
         AND (NEW.state::jsonb->'approval') IS DISTINCT FROM (OLD.state::jsonb->'approval'))
        OR (NULLIF(NEW.state::jsonb->'rejection', 'null'::jsonb) IS NOT NULL
            AND (NEW.state::jsonb->'rejection') IS DISTINCT FROM (OLD.state::jsonb->'rejection'))) THEN
        RAISE EXCEPTION 'The decision of run % is recorded only by resolver_decide.', OLD.run_id USING ERRCODE = 'RS403';
    END IF;
    RETURN NEW;
END
$$"""
"""The guard of ``runs`` (``SECURITY INVOKER``): a write made outside the decision function (its
``current_user`` not the owning role) may not set or change an approval or a rejection in the
header, nor move a waiting run to ``executing`` or ``done``, nor insert a decided run. It may
clear one (the executor refusing an approval it no longer accepts): clearing only stops."""

GUARD_REGISTER = f"""CREATE FUNCTION resolver_guard_register() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = {_OWNING} OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RETURN COALESCE(NEW, OLD);
    END IF;
    IF TG_OP <> 'INSERT' THEN
        RAISE EXCEPTION 'The % table is written only by the services, one row per approved operation.', TG_TABLE_NAME
            USING ERRCODE = 'RS403';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM decided d JOIN runs r ON r.run_id = d.run_id AND r.state::jsonb->>'run_uid' = d.run_uid
                   WHERE d.decision = 'approve' AND NEW.operation_id = ANY (d.ops) AND r.status = 'executing'
                   AND NULLIF(r.state::jsonb->'approval', 'null'::jsonb) IS NOT NULL) THEN
        RAISE EXCEPTION 'Operation % was planned by no recorded approval; nothing was written.', NEW.operation_id
            USING ERRCODE = 'RS403';
    END IF;
    RETURN NEW;
END
$$"""
"""The guard of the register and of the tables of what the services did: a row only for an
operation a decision recorded by :data:`DECIDE` approved, of a run executing with its approval
still in place; no update or delete."""

GUARD_MARKS = f"""CREATE FUNCTION resolver_guard_marks() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    who text;
    their_role text;
BEGIN
    IF current_user = {_OWNING} OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RETURN COALESCE(NEW, OLD);
    END IF;
    SELECT a.name, a.role INTO who, their_role FROM approvers a WHERE a.db_user = session_user AND a.revoked_at IS NULL;
    IF TG_OP = 'DELETE' OR who IS NULL THEN
        RAISE EXCEPTION 'Only an approver marks a run, as their own entry (the database user % is none).', session_user
            USING ERRCODE = 'RS403';
    END IF;
    IF (NEW.claimed_by IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.claimed_at IS DISTINCT FROM OLD.claimed_at)
        AND (NEW.claimed_by IS DISTINCT FROM who OR NEW.claimed_role IS DISTINCT FROM their_role))
       OR (NEW.handed_by IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.handed_at IS DISTINCT FROM OLD.handed_at)
           AND NEW.handed_by IS DISTINCT FROM who)
       OR (NEW.snoozed_by IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.snoozed_at IS DISTINCT FROM OLD.snoozed_at)
           AND NEW.snoozed_by IS DISTINCT FROM who) THEN
        RAISE EXCEPTION 'A mark names its maker: the database user % is %.', session_user, who USING ERRCODE = 'RS403';
    END IF;
    RETURN NEW;
END
$$"""
"""The guard of ``run_marks``: a claim, hand-over or snooze written outside the owning role names
the caller's own registry entry (by ``session_user``), never another's; no delete."""

ROLES_MIGRATION: tuple[str, ...] = (
    f"ALTER TABLE approvers ADD COLUMN db_user {C}",
    "CREATE UNIQUE INDEX approvers_db_user ON approvers (db_user) WHERE db_user IS NOT NULL",
    f"CREATE TABLE policy_limits (action {C} NOT NULL, role {C} NOT NULL, rank integer NOT NULL, max_amount numeric)",
    f"CREATE TABLE catalog_prices (sku {C} PRIMARY KEY, price numeric NOT NULL)",
    f"CREATE TABLE decided (audit_id bigint PRIMARY KEY, run_id {C} NOT NULL, run_uid {C} NOT NULL, "
    f"decision {C} NOT NULL, ops text[] NOT NULL)",
    f"CREATE TABLE store_roles (one boolean PRIMARY KEY DEFAULT true CHECK (one), tables_role {C} NOT NULL, "
    "set_at timestamptz NOT NULL DEFAULT now())",
    ROW_HASH,
    NEEDED_ROLE,
    DECIDE,
    NOTE,
    PUT_HEAD,
    GUARD_RUNS,
    GUARD_REGISTER,
    GUARD_MARKS,
    # The definer functions' search path: the store's schema, then pg_temp last (never first).
    """DO $$ BEGIN
        EXECUTE format('ALTER FUNCTION resolver_decide(text, bigint, jsonb, int[], text[], int[], text[], text[], int[], '
                       'bigint[], jsonb) SET search_path = %I, pg_catalog, pg_temp', current_schema());
        EXECUTE format('ALTER FUNCTION resolver_note(text, jsonb) SET search_path = %I, pg_catalog, pg_temp', current_schema());
        EXECUTE format('ALTER FUNCTION resolver_put_head(bytea) SET search_path = %I, pg_catalog, pg_temp', current_schema());
    END $$""",
)
"""Migration 12, less the policy's rows (:func:`migration_12`)."""


def migration_12() -> tuple[str, ...]:
    """Migration 12's statements: :data:`ROLES_MIGRATION` and the policy's rows."""
    return (*ROLES_MIGRATION, *policy_statements()[2:])


_PROPOSAL_CORE = (
    "jsonb_build_array({p}->'outcome', {p}->'rule', {p}->'reason', {p}->'actions', {p}->'reply_draft', {p}->'recipient')"
)
"""What an agent proposes, as SQL over a proposal ``{p}``: its outcome, rule, reason, actions,
reply draft and recipient. A refresh (:mod:`core.engine.refresh`) keeps these and renews only the
evidence's time, preconditions and version, so a refresh by an approver does not change who
proposed."""

_STAMP = f"""
    -- Migration 15: who wrote what the run proposes, from session_user, never a column the writer set.
    IF TG_OP = 'INSERT' THEN
        NEW.proposal_by := session_user;
    ELSIF {_PROPOSAL_CORE.format(p="(NEW.state::jsonb->'proposal')")}
          IS DISTINCT FROM {_PROPOSAL_CORE.format(p="(OLD.state::jsonb->'proposal')")} THEN
        NEW.proposal_by := session_user;
    ELSE
        NEW.proposal_by := OLD.proposal_by;
    END IF;"""

_BY_APPROVER = """
    IF r.proposal_by IS NOT NULL AND EXISTS (SELECT 1 FROM approvers a WHERE a.db_user = r.proposal_by) THEN
        RAISE EXCEPTION 'The proposal of run % was last written by the database user %, an approver''s, not the agent''s runner; nothing was recorded.',
            p_run_id, r.proposal_by USING ERRCODE = 'RS403';
    END IF;"""

_OPS_LINE = """        ops := ARRAY(SELECT o->>'operation_id' FROM jsonb_array_elements(COALESCE(new->'operations', '[]'::jsonb)) o);
"""

_SIGNS_OPS = """        IF NOT COALESCE((p_audit->>'binds')::jsonb ? 'ops', false) THEN
            RAISE EXCEPTION 'An approval of run % must sign the operations it commits to; nothing was recorded.', p_run_id
                USING ERRCODE = 'RS403';
        END IF;
"""

_PLANNED = """        IF EXISTS (SELECT 1 FROM jsonb_array_elements(COALESCE(new->'operations', '[]'::jsonb)) WITH ORDINALITY x (o, i)
                   WHERE (o->>'index') IS DISTINCT FROM (i - 1)::text)
           OR (SELECT COALESCE(jsonb_agg(o->'action' ORDER BY i), '[]'::jsonb)
               FROM jsonb_array_elements(COALESCE(new->'operations', '[]'::jsonb)) WITH ORDINALITY x (o, i))
              IS DISTINCT FROM COALESCE(old->'proposal'->'actions', '[]'::jsonb) || (CASE
                  WHEN btrim(COALESCE(old->'proposal'->>'reply_draft', ''), E' \\t\\n\\r\\f') = '' THEN '[]'::jsonb
                  ELSE jsonb_build_array(jsonb_build_object('type', 'send_reply', 'order_id', old->'order_id',
                      'customer_id', to_jsonb(COALESCE(NULLIF(old->'proposal'->>'recipient', ''), old->>'customer_id')),
                      'text', old->'proposal'->'reply_draft')) END) THEN
            RAISE EXCEPTION 'The operations of run % are not the ones its stored proposal plans (its actions, then its reply); nothing was recorded.',
                p_run_id USING ERRCODE = 'RS403';
        END IF;
"""
"""Migration 15, a second trial: ``resolver_decide`` took the operations from the caller, so an
agent's user approving a 9.95 refund it may approve attached a 119.00 refund of another order,
signed with its own key. The operations must be exactly what :func:`core.engine.approval.plan_operations`
plans from the stored proposal: its actions in order, then the reply draft's ``send_reply``."""

_ONE_ROW = """        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I WHERE operation_id = $1)', TG_TABLE_SCHEMA, TG_TABLE_NAME)
            INTO again USING NEW.operation_id;"""

_ONE_ROW_LOCKED = (
    """        PERFORM pg_advisory_xact_lock(hashtextextended('resolver register ' || TG_TABLE_NAME || ' ' || NEW.operation_id, 0));
"""
    + _ONE_ROW
)
"""Migration 15, a second trial: two sessions inserting a row for one operation at once both
passed the one-row check (neither saw the other's uncommitted row). The check now waits for a
transaction-level lock on the table and operation, so the second sees the first's row once it
commits (each statement of a trigger reads anew under READ COMMITTED)."""

_DECIDED_CHECK = """        RAISE EXCEPTION 'Run % was already decided; nothing was recorded.', p_run_id USING ERRCODE = 'RS403';
    END IF;"""


NEEDED_ROLE_15 = """CREATE OR REPLACE FUNCTION resolver_needed_role(actions jsonb) RETURNS text LANGUAGE plpgsql STABLE AS $$
DECLARE
    t record;
    got text;
    got_rank integer;
    best text := 'agent';
    best_rank integer := 0;
BEGIN
    FOR t IN SELECT a->>'type' AS kind, sum(CASE a->>'type'
                 WHEN 'request_refund' THEN (a->>'amount')::numeric
                 WHEN 'reship_item' THEN COALESCE((SELECT price FROM catalog_prices WHERE sku = a->>'sku'), 0)
                                         * (a->>'quantity')::numeric
                 ELSE 0 END) AS v
             FROM jsonb_array_elements(COALESCE(NULLIF(actions, 'null'::jsonb), '[]'::jsonb)) a GROUP BY 1 LOOP
        IF NOT EXISTS (SELECT 1 FROM policy_limits WHERE action = t.kind) THEN
            RAISE EXCEPTION 'The policy says nobody may approve %.', t.kind USING ERRCODE = 'RS403';
        END IF;
        got := NULL;
        SELECT role, rank INTO got, got_rank FROM policy_limits
            WHERE action = t.kind AND (max_amount IS NULL OR t.v <= max_amount) ORDER BY rank LIMIT 1;
        IF got IS NULL THEN
            got := 'grace';
            got_rank := 2;
        END IF;
        IF got_rank > best_rank THEN
            best := got;
            best_rank := got_rank;
        END IF;
    END LOOP;
    RETURN best;
END
$$"""
""":func:`core.engine.policy.proposal_role` in SQL as migration 15 replaces migration 12's: each kind of
action's values summed before its limit is looked up (a third trial split one refund into ten of
23.80, each within an agent's 25.00, and an agent's approval paid 238.00)."""


def migration_15() -> tuple[str, ...]:
    """Migration 15 (found in a new user's trial): a user mapped to an ``agent`` entry paid
    T-65273's 119.00 CAD with plain SQL, by rewriting the waiting run's proposal to 1.00 (which
    an agent may approve), then calling ``resolver_decide`` without ``binds``. Now:

    - ``runs.proposal_by``: the database user (``session_user``) who last wrote what the run
      proposes (:data:`_PROPOSAL_CORE`), stamped by the runs' guard on every insert or change;
      a writer cannot set it.
    - ``resolver_decide`` refuses a proposal last written by a user mapped to an approver's entry
      (only the agent's runner proposes), an approval whose ``binds`` names no operations, and
      operations other than those the stored proposal plans (:data:`_PLANNED`).
    - the register's one-row-per-operation check waits for a lock (:data:`_ONE_ROW_LOCKED`).
    - the role a proposal needs sums each kind of action's values (:data:`NEEDED_ROLE_15`).

    Rows from before keep NULL (proposed before the column existed). The functions are replaced
    (``CREATE OR REPLACE``, from migration 14's texts, so a store already set up keeps their owner
    and grants) and their ``search_path`` pinned again; earlier migrations' texts stay as applied."""
    guard = GUARD_RUNS.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1).replace(
        "AS $$\nBEGIN", "AS $$\nBEGIN" + _STAMP, 1
    )
    decide = DECIDE_14.replace(_DECIDED_CHECK, _DECIDED_CHECK + _BY_APPROVER, 1).replace(
        _OPS_LINE, _SIGNS_OPS + _PLANNED + _OPS_LINE, 1
    )
    register = GUARD_REGISTER_14.replace(_ONE_ROW, _ONE_ROW_LOCKED, 1)
    assert _STAMP in guard and _BY_APPROVER in decide and _PLANNED in decide  # they extend migration 14's texts
    assert _ONE_ROW_LOCKED in register
    pin = "DO $$ BEGIN\n" + "\n".join(  # CREATE OR REPLACE drops a function's SET clauses: pin again, as 14 did
        f"    EXECUTE format('{_PIN.format(f)}', current_schema());"
        for f in (
            "resolver_decide(text, bigint, jsonb, int[], text[], int[], text[], text[], int[], bigint[], jsonb)",
            "resolver_guard_runs()",
            "resolver_guard_register()",
        )
    )
    return (f"ALTER TABLE runs ADD COLUMN proposal_by {C}", NEEDED_ROLE_15, guard, decide, register, pin + "\nEND $$")


_SUMMED_15 = """    FOR t IN SELECT a->>'type' AS kind, sum(CASE a->>'type'
                 WHEN 'request_refund' THEN (a->>'amount')::numeric
                 WHEN 'reship_item' THEN COALESCE((SELECT price FROM catalog_prices WHERE sku = a->>'sku'), 0)
                                         * (a->>'quantity')::numeric
                 ELSE 0 END) AS v
             FROM jsonb_array_elements(COALESCE(NULLIF(actions, 'null'::jsonb), '[]'::jsonb)) a GROUP BY 1 LOOP
"""
_LINES_AND_SUMS_18 = """    FOR t IN WITH lines AS (
                 SELECT a->>'type' AS kind, GREATEST(CASE a->>'type'
                     WHEN 'request_refund' THEN (a->>'amount')::numeric
                     WHEN 'reship_item' THEN COALESCE((SELECT price FROM catalog_prices WHERE sku = a->>'sku'), 0)
                                             * (a->>'quantity')::numeric
                     ELSE 0 END, 0) AS v
                 FROM jsonb_array_elements(COALESCE(NULLIF(actions, 'null'::jsonb), '[]'::jsonb)) a)
             SELECT kind, v FROM lines UNION ALL SELECT kind, sum(v) FROM lines GROUP BY kind LOOP
"""
NEEDED_ROLE_18 = NEEDED_ROLE_15.replace(_SUMMED_15, _LINES_AND_SUMS_18, 1)
if _LINES_AND_SUMS_18 not in NEEDED_ROLE_18:  # migration 15's text moved
    raise RuntimeError("NEEDED_ROLE_18 could not be derived from migration 15's NEEDED_ROLE_15")
""":func:`core.engine.policy.proposal_role` in SQL as migration 18 replaces migration 15's: the highest of
each line's own role and of each kind's values summed, every value taken as at least 0, so no line
lowers the role (a trial's second line of -100.00 on a 119.00 refund summed to 19.00, which an
agent may approve). ``CREATE OR REPLACE`` keeps the function's owner and grants on a store already
set up; the decision function calls it, so ``resolver_decide`` refuses an agent's approval of that
proposal too."""


def migration_18() -> tuple[str, ...]:
    """Migration 18: the role a proposal needs never falls (:data:`NEEDED_ROLE_18`)."""
    return (NEEDED_ROLE_18,)


DEFINER_FUNCTIONS = (
    "resolver_decide(text, bigint, jsonb, int[], text[], int[], text[], text[], int[], bigint[], jsonb)",
    "resolver_note(text, jsonb)",
    "resolver_put_head(bytea)",
    "resolver_run_counts_fold()",
)

TRIGGER_FUNCTIONS = (
    "resolver_run_counts_added()",
    "resolver_run_counts_removed()",
    "resolver_run_counts_moved()",
    "resolver_run_counts_cleared()",
    "resolver_queue_event_run()",
    "resolver_queue_event_refusal()",
    "resolver_queue_event_marks()",
    "resolver_queue_event_forget()",
)
"""The triggers' functions that write tables a caller may not (counts, the queue's events): run
as the owning role once the store is set up."""

KINDS = ("owner", "runner", "executor", "approver")


def _grants(kind: str, world: tuple[str, ...], effects: tuple[str, ...]) -> list[str]:
    """``GRANT`` statements (with ``{u}`` for the user) giving ``kind`` its rights (the module's
    table). INSERT and UPDATE on ``model_calls`` are the runner's alone: the journal's answers
    become the run's proposal, and only the agent's runner proposes (the others read it; the
    owner deletes a run's journal with the run)."""
    runs = [
        "GRANT INSERT ON queue_events TO {u}",
        "GRANT INSERT, UPDATE ON runs TO {u}",
        "GRANT INSERT, DELETE ON entries TO {u}",
    ]
    execute = [f"GRANT INSERT, UPDATE ON {t} TO {{u}}" for t in world if t not in effects] + [
        f"GRANT INSERT ON {t} TO {{u}}" for t in effects
    ]
    execute.append("GRANT UPDATE ON register_head TO {u}")
    owner = [
        "GRANT INSERT, UPDATE, DELETE ON approvers, registry_made, shop_parts TO {u}",
        "GRANT INSERT ON audit TO {u}",
        "GRANT UPDATE ON audit_head TO {u}",
        "GRANT DELETE ON runs, model_calls TO {u}",
    ]
    return {
        "runner": [*runs, "GRANT INSERT, UPDATE ON model_calls TO {u}"],
        "executor": runs + execute,
        "approver": [*runs, *execute, "GRANT INSERT, UPDATE ON run_marks TO {u}"],
        "owner": [*runs, *execute, "GRANT INSERT, UPDATE ON run_marks TO {u}", *owner],
    }[kind]


def _exists(conn: psycopg.Connection[Any], role: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is not None


def setup_roles(
    conn: psycopg.Connection[Any], tables_role: str, users: dict[str, list[str]], mapping: dict[str, str]
) -> list[str]:
    """Set up role separation in the schema of ``conn`` (a database administrator's connection,
    autocommit), in one transaction; returns the lines to print. Running it again adds users and
    mappings and re-grants (it is idempotent).

    Args:
        tables_role: the ``NOLOGIN`` role that will own the tables (made if missing; must not log in).
        users: kind (``owner``, ``runner``, ``executor``, ``approver``) -> database users, which
            must exist (the administrator makes them, with their passwords).
        mapping: approver's name in the registry -> database user (added to ``users["approver"]``).

    Raises:
        ResolverError (one sentence): a name that is not a plain role name, a user or an
        approver that does not exist, a tables role that may log in, a store with no registry.
    """
    every = [tables_role, *(u for group in users.values() for u in group), *mapping.values()]
    _one_user_one_part(users, mapping)
    for name in every:
        if not _ROLE_NAME.fullmatch(name):
            raise ResolverError(
                f"{name!r} is not a plain database role name (lower-case letters, digits and _); nothing was changed."
            )
    with conn.transaction():
        names = _check_roles(conn, tables_role, every[1:], mapping)
        schema = conn.execute("SELECT current_schema()").fetchone()[0]  # type: ignore[index]
        tables, functions = _give_to_tables_role(conn, tables_role, schema)
        _guard_events_and_triggers(conn, tables, functions)
        lines = [f"The tables, sequences and functions of schema {schema} now belong to {tables_role} (NOLOGIN)."]
        lines += _grant_users(conn, schema, tables, functions, users, mapping)
        for person, user in mapping.items():
            conn.execute("UPDATE approvers SET db_user = NULL WHERE db_user = %s", (user,))
            conn.execute("UPDATE approvers SET db_user = %s WHERE lower(name) = lower(%s) AND revoked_at IS NULL", (user, person))
            lines.append(f"approver {names[person.lower()]} is database user {user}")
    return lines


def _check_roles(conn: psycopg.Connection[Any], tables_role: str, users: list[str], mapping: dict[str, str]) -> dict[str, str]:
    """Refuse a setup whose users or approvers do not exist, whose tables role may log in, or
    whose approver's database user is another approver's; make the tables role when it is
    missing. Returns the registry's live approvers by lower-case name.

    Raises:
        ResolverError: one sentence; the caller's transaction is rolled back, nothing is changed.
    """
    for name in users:
        if not _exists(conn, name):
            raise ResolverError(
                f"There is no database user {name}: create it first (CREATE ROLE {name} LOGIN PASSWORD ...); nothing was changed."
            )
    row = conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (tables_role,)).fetchone()
    if row is None:
        conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(tables_role)))
    elif row[0]:
        raise ResolverError(
            f"The role {tables_role} may log in; the tables' owner must be a NOLOGIN role no person uses. Nothing was changed."
        )
    names = {r[0].lower(): r[0] for r in conn.execute("SELECT name FROM approvers WHERE revoked_at IS NULL")}
    for person in mapping:
        if person.lower() not in names:
            raise ResolverError(f"No approver named {person} in the registry; add them first. Nothing was changed.")
    for person, user in mapping.items():
        held = conn.execute(
            "SELECT name FROM approvers WHERE db_user = %s AND lower(name) <> lower(%s) AND revoked_at IS NULL",
            (user, person),
        ).fetchone()
        if held is not None:
            raise ResolverError(
                f"The database user {user} is already approver {held[0]}'s; one database user is one approver "
                f"(a trial: the mapping moved to {person} while both were printed). Nothing was changed."
            )
    return names


def _give_to_tables_role(conn: psycopg.Connection[Any], tables_role: str, schema: str) -> tuple[list[str], list[str]]:
    """Give every table and function of ``schema`` to the tables role, take PUBLIC's rights away,
    make the trigger functions run as their owner, write the row-level policies and record the
    tables role. Returns the schema's tables and functions (``name(args)``)."""
    ident = sql.Identifier(tables_role)
    sch = sql.Identifier(schema)
    tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
    for table in tables:
        conn.execute(sql.SQL("ALTER TABLE {} OWNER TO {}").format(sql.Identifier(table), ident))
    functions = [
        r[0]
        for r in conn.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace"
        )
    ]
    for function in functions:
        conn.execute(sql.SQL("ALTER FUNCTION {} OWNER TO {}").format(sql.SQL(function), ident))
        conn.execute(sql.SQL("REVOKE ALL ON FUNCTION {} FROM PUBLIC").format(sql.SQL(function)))
    for function in (f for f in TRIGGER_FUNCTIONS if f in functions):  # a store set up before migration 16 has no forget
        conn.execute(
            sql.SQL("ALTER FUNCTION {} SECURITY DEFINER SET search_path = {}, pg_catalog, pg_temp").format(sql.SQL(function), sch)
        )
    conn.execute(sql.SQL("REVOKE ALL ON SCHEMA {} FROM PUBLIC").format(sch))
    conn.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM PUBLIC").format(sch))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sch, ident))
    for statement in policy_statements():
        conn.execute(statement)
    conn.execute(
        "INSERT INTO store_roles (tables_role) VALUES (%s) ON CONFLICT (one) DO UPDATE SET tables_role = EXCLUDED.tables_role, "
        "set_at = now()",
        (tables_role,),
    )
    return tables, functions


def _guard_events_and_triggers(conn: psycopg.Connection[Any], tables: list[str], functions: list[str]) -> None:
    """Let a user insert only the one event that is theirs to write, and make the guards again."""
    # A lapse (informational, written once by whoever reads the queue first) is the one event
    # a user may insert; the others are the triggers', which run as the tables' role.
    conn.execute("ALTER TABLE queue_events ENABLE ROW LEVEL SECURITY")
    conn.execute("DROP POLICY IF EXISTS queue_events_read ON queue_events")
    conn.execute("DROP POLICY IF EXISTS queue_events_lapse ON queue_events")
    conn.execute("CREATE POLICY queue_events_read ON queue_events FOR SELECT USING (true)")
    conn.execute("CREATE POLICY queue_events_lapse ON queue_events FOR INSERT WITH CHECK (kind = 'lapse')")
    for statement in setup_triggers(
        set(tables), journal="resolver_guard_model_calls()" in functions
    ):  # the guards (and migration 17's stamp), made again if dropped
        make_again(conn, statement)


def _grant_users(
    conn: psycopg.Connection[Any],
    schema: str,
    tables: list[str],
    functions: list[str],
    users: dict[str, list[str]],
    mapping: dict[str, str],
) -> list[str]:
    """Grant each kind of database user what its part needs, and nothing more; returns a line per user."""
    sch = sql.Identifier(schema)
    made = {f.split("(")[0] for f in functions}
    effects = tuple(EFFECT_TABLES_COLUMNS)
    world = tuple(t for t in WORLD_TABLES if t in tables)
    lines: list[str] = []
    groups = {kind: list(dict.fromkeys(users.get(kind, []))) for kind in KINDS}
    groups["approver"] = list(dict.fromkeys([*groups["approver"], *mapping.values()]))
    for kind in KINDS:
        for user in groups[kind]:
            u = sql.Identifier(user)
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sch, u))
            conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(sch, u))
            conn.execute(sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA {} TO {}").format(sch, u))
            for function in (f for f in DEFINER_FUNCTIONS if f.split("(")[0] in made):  # those of the schema's migrations
                conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(sql.SQL(function), u))
            for statement in _grants(kind, world, effects):
                conn.execute(sql.SQL(statement.replace("{u}", "{}")).format(u))
            if kind != "runner" and user not in groups["runner"]:  # an earlier setup's grant is taken back
                conn.execute(sql.SQL("REVOKE INSERT, UPDATE ON model_calls FROM {}").format(u))
            lines.append(f"{kind}: {user}")
    return lines


def _one_user_one_part(users: dict[str, list[str]], mapping: dict[str, str]) -> None:
    """Refuse a setup whose approvers share a database user, or whose approver's user is also the
    runner's or the executor's (a new user's trial: ``--approver Ana=u --approver Bot=u`` printed
    both and kept one; ``--approver Ana=<the runner's user>`` let the runner record approvals).

    Raises:
        ResolverError: one sentence naming the user and its two parts; nothing is changed.
    """
    seen: dict[str, str] = {}
    for person, user in mapping.items():
        if user in seen and seen[user].lower() != person.lower():
            raise ResolverError(
                f"The database user {user} is given to two approvers, {seen[user]} and {person}; one database user is one "
                "approver. Nothing was changed."
            )
        seen[user] = person
        for kind in ("runner", "executor"):
            if user in users.get(kind, []):
                raise ResolverError(
                    f"The database user {user} is the {kind}'s and approver {person}'s; an approver's user must be their own "
                    f"(the {kind} never decides). Nothing was changed."
                )


_DECIDED_INSERT = (
    "INSERT INTO decided (audit_id, run_id, run_uid, decision, ops) VALUES (next_id, p_run_id, old->>'run_uid', kind, ops);"
)

DECIDE_14 = DECIDE.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1).replace(
    _DECIDED_INSERT,
    "INSERT INTO decided (audit_id, run_id, run_uid, decision, ops, calls) VALUES (next_id, p_run_id, old->>'run_uid', kind, ops,\n"
    "        CASE WHEN kind = 'approve' THEN (SELECT COALESCE(jsonb_object_agg(o->>'operation_id', o->'action'), '{}'::jsonb)\n"
    "            FROM jsonb_array_elements(COALESCE(new->'operations', '[]'::jsonb)) o) ELSE '{}'::jsonb END);",
)
""":data:`DECIDE` as migration 14 replaces it: the same checks, and the ``decided`` row also
holds each approved operation's action (``calls``: operation ID -> the action's JSON, as the
approval's header planned it), which the register's guard compares every written row with."""
if DECIDE_14.count("calls") != 1 or not DECIDE_14.startswith("CREATE OR REPLACE"):  # migration 12's text moved
    raise RuntimeError("DECIDE_14 could not be derived from migration 12's DECIDE")

_SAME = "CASE WHEN {x} ~ '^-?[0-9]+(\\.[0-9]+)?$' AND {y} ~ '^-?[0-9]+(\\.[0-9]+)?$' THEN {x}::numeric = {y}::numeric ELSE {x} IS NOT DISTINCT FROM {y} END"

GUARD_REGISTER_14 = f"""CREATE OR REPLACE FUNCTION resolver_guard_register() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found_op boolean := false;
    a jsonb;
    got jsonb;
    wanted jsonb;
    table_of text;
    keys text[];
    k text;
    differs text[] := ARRAY[]::text[];
    again boolean;
BEGIN
    IF current_user = {_OWNING} OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RETURN COALESCE(NEW, OLD);
    END IF;
    IF TG_OP <> 'INSERT' THEN
        RAISE EXCEPTION 'The % table is written only by the services, one row per approved operation.', TG_TABLE_NAME
            USING ERRCODE = 'RS403';
    END IF;
    SELECT true, d.calls->NEW.operation_id INTO found_op, a FROM decided d
        JOIN runs r ON r.run_id = d.run_id AND r.state::jsonb->>'run_uid' = d.run_uid
        WHERE d.decision = 'approve' AND NEW.operation_id = ANY (d.ops) AND r.status = 'executing'
        AND NULLIF(r.state::jsonb->'approval', 'null'::jsonb) IS NOT NULL
        ORDER BY d.audit_id DESC LIMIT 1;
    IF NOT COALESCE(found_op, false) THEN
        RAISE EXCEPTION 'Operation % was planned by no recorded approval; nothing was written.', NEW.operation_id
            USING ERRCODE = 'RS403';
    END IF;
    IF a IS NULL OR jsonb_typeof(a) <> 'object' THEN
        RAISE EXCEPTION 'The approval of operation % records no arguments to compare this row with; nothing was written.',
            NEW.operation_id USING ERRCODE = 'RS403';
    END IF;
    table_of := CASE a->>'type' WHEN 'request_refund' THEN 'refunds' WHEN 'reship_item' THEN 'reshipments'
        WHEN 'create_return_label' THEN 'return_labels' WHEN 'send_reply' THEN 'replies' END;
    wanted := CASE a->>'type'
        WHEN 'request_refund' THEN jsonb_build_object('order_id', a->'order_id', 'amount', a->'amount',
            'reason_code', a->'reason_code', 'payment_id', a->'payment_id')
        WHEN 'reship_item' THEN jsonb_build_object('order_id', a->'order_id', 'sku', a->'sku', 'quantity', a->'quantity')
        WHEN 'create_return_label' THEN jsonb_build_object('order_id', a->'order_id', 'sku', a->'sku', 'reason', a->'reason',
            'return_shipping', a->'return_shipping')
        WHEN 'send_reply' THEN jsonb_build_object('order_id', a->'order_id', 'customer_id', a->'customer_id',
            'chars', length(a->>'text'))
        END;
    IF TG_TABLE_NAME = 'operations' THEN
        IF to_jsonb(NEW)->>'service' IS DISTINCT FROM a->>'type' THEN
            RAISE EXCEPTION 'Operation % was approved as %, not %; nothing was written.', NEW.operation_id, a->>'type',
                to_jsonb(NEW)->>'service' USING ERRCODE = 'RS403';
        END IF;
        BEGIN
            got := (to_jsonb(NEW)->>'args')::jsonb;
        EXCEPTION WHEN others THEN
            got := NULL;
        END;
        IF got IS NULL OR jsonb_typeof(got) <> 'object' THEN
            RAISE EXCEPTION 'The register entry of operation % holds no arguments object; nothing was written.',
                NEW.operation_id USING ERRCODE = 'RS403';
        END IF;
        differs := ARRAY(SELECT x FROM jsonb_object_keys(got) x WHERE NOT wanted ? x ORDER BY x);
    ELSE
        IF TG_TABLE_NAME IS DISTINCT FROM table_of THEN
            RAISE EXCEPTION 'Operation % was approved as %, not a row of %; nothing was written.', NEW.operation_id,
                a->>'type', TG_TABLE_NAME USING ERRCODE = 'RS403';
        END IF;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I WHERE operation_id = $1)', TG_TABLE_SCHEMA, TG_TABLE_NAME)
            INTO again USING NEW.operation_id;
        IF again THEN
            RAISE EXCEPTION 'Operation % already has its row in %; one row per approved operation, nothing was written.',
                NEW.operation_id, TG_TABLE_NAME USING ERRCODE = 'RS403';
        END IF;
        got := to_jsonb(NEW);
        IF a->>'type' = 'send_reply' THEN
            wanted := wanted - 'chars' || jsonb_build_object('text', a->'text');
        END IF;
    END IF;
    FOR k IN SELECT jsonb_object_keys(wanted) LOOP
        IF NOT ({_SAME.format(x="(got->>k)", y="(wanted->>k)")}) THEN
            differs := differs || k;
        END IF;
    END LOOP;
    IF cardinality(differs) > 0 THEN
        RAISE EXCEPTION 'This % row of operation % differs from what its approval planned (in %); nothing was written.',
            TG_TABLE_NAME, NEW.operation_id, array_to_string(ARRAY(SELECT DISTINCT unnest(differs) ORDER BY 1), ', ')
            USING ERRCODE = 'RS403';
    END IF;
    RETURN NEW;
END
$$"""
"""The register's guard as migration 14 replaces it: as before, a row
only for an operation a recorded approval planned, of a run executing with its approval in
place, never an update or delete; and now the row must be that operation's own call: the
register entry's service is the action's type and its arguments exactly the action's (order,
amount compared as a number of CAD, reason, payment; item and quantity; label reason and
return shipping; recipient and the reply's length), a service table's row is of the action's
table with the same fields (the reply's text itself), and a service table holds one row per
operation. The action is read from ``decided.calls``, written by :data:`DECIDE_14`, never from
the run's header, which the executor's user may write. Raises SQLSTATE ``RS403``."""

_PIN = "ALTER FUNCTION {} SET search_path = %I, pg_catalog, pg_temp"

ARGS_MIGRATION: tuple[str, ...] = (
    "ALTER TABLE decided ADD COLUMN calls jsonb",
    # A decision recorded before this migration: its operations' actions as its run's checkpoint
    # holds them now (the same operation IDs only), so an approval executing over the upgrade resumes.
    """UPDATE decided d SET calls = (
        SELECT COALESCE(jsonb_object_agg(o->>'operation_id', o->'action'), '{}'::jsonb)
        FROM runs r CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN r.state_ok THEN COALESCE(r.state::jsonb->'operations', '[]'::jsonb) ELSE '[]'::jsonb END) o
        WHERE r.run_id = d.run_id AND r.state_ok AND r.state::jsonb->>'run_uid' = d.run_uid AND o->>'operation_id' = ANY (d.ops))
      WHERE d.decision = 'approve'""",
    "UPDATE decided SET calls = '{}'::jsonb WHERE decision <> 'approve'",
    DECIDE_14,
    GUARD_REGISTER_14,
    # CREATE OR REPLACE keeps a function's owner and grants but not its SET clauses: pin the
    # decision function's search path again, and the guards' (SECURITY INVOKER, so the caller's
    # temporary tables came first: a temporary store_roles or decided shadowed the real ones).
    "DO $$ BEGIN\n"
    + "\n".join(
        f"    EXECUTE format('{_PIN.format(f)}', current_schema());"
        for f in (
            "resolver_decide(text, bigint, jsonb, int[], text[], int[], text[], text[], int[], bigint[], jsonb)",
            "resolver_guard_register()",
            "resolver_guard_runs()",
            "resolver_guard_marks()",
        )
    )
    + "\nEND $$",
)
"""Migration 14 (the register's guard binds the arguments): ``decided.calls`` (filled
for the decisions already recorded), :data:`DECIDE_14` and :data:`GUARD_REGISTER_14` in place
of migration 12's functions (same names and signatures, so a store already set up keeps their
owner, the tables' role, and their grants), and every guard's ``search_path`` pinned."""


GUARD_MODEL_CALLS = f"""CREATE FUNCTION resolver_guard_model_calls() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    who text;
BEGIN
    IF current_user = {_OWNING} OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        NEW.written_by := COALESCE(NEW.written_by, session_user);
        RETURN NEW;
    END IF;
    SELECT a.name INTO who FROM approvers a WHERE a.db_user = session_user ORDER BY a.n LIMIT 1;
    IF who IS NOT NULL THEN
        RAISE EXCEPTION 'The database user % is approver %''s, and only the agent''s runner writes the journal of model calls; nothing was written.',
            session_user, who USING ERRCODE = 'RS403';
    END IF;
    NEW.written_by := session_user;
    RETURN NEW;
END
$$"""
"""The journal's guard (``SECURITY INVOKER``, so ``session_user`` and ``current_user`` are the
writer's): every row inserted or changed is stamped in ``written_by`` with the ``session_user``
that wrote it, whatever the writer put there, and a writer mapped to an approver's entry
(``approvers.db_user``, revoked or not) is refused with SQLSTATE ``RS403``. Why: a resume takes a
journaled answer as the model's turn, which becomes the run's proposal, and only the agent's
runner proposes (a trial had an agent entry's user insert step 3's answer, a 24.00 refund,
which the runner's resume then proposed and the same user approved). The grants of ``setup`` give
INSERT and UPDATE on ``model_calls`` to the runner alone; the guard holds on a store whose grants
an earlier release made. The tables' role and a superuser may set ``written_by`` (a copy's rows,
a repair by hand): they can drop the guard anyway."""


def migration_17() -> tuple[str, ...]:
    """Migration 17, the journal speaks only for the runner: ``model_calls.written_by`` and
    :data:`GUARD_MODEL_CALLS` with its trigger (:data:`JOURNAL_TRIGGER`), made on every store,
    not only one set up: the stamp is written from then on, and the refusal bites once approvers
    are mapped. Rows from before keep NULL (written before the stamp existed: taken as the
    runner's). The guard's ``search_path`` is pinned (a temporary ``approvers`` of the writer's
    cannot stand in for the real one), nobody but the owner may call it, and on a store already
    set up it belongs to the tables' role, as migration 16's trigger does."""
    return (
        f"ALTER TABLE model_calls ADD COLUMN written_by {C}",
        GUARD_MODEL_CALLS,
        JOURNAL_TRIGGER,
        """DO $$
DECLARE
    owning text;
BEGIN
    EXECUTE format('ALTER FUNCTION resolver_guard_model_calls() SET search_path = %I, pg_catalog, pg_temp', current_schema());
    REVOKE ALL ON FUNCTION resolver_guard_model_calls() FROM PUBLIC;
    SELECT tables_role INTO owning FROM store_roles;
    IF owning IS NOT NULL THEN
        EXECUTE format('ALTER FUNCTION resolver_guard_model_calls() OWNER TO %I', owning);
    END IF;
END
$$""",
    )
