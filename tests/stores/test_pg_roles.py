"""A team store that refuses what a role may not do: ``resolver store roles setup`` gives the
agent's runner, the executor, each approver and the owner a database user of its own, the tables
belong to a NOLOGIN role, and decisions go only through ``resolver_decide``.

Each test makes its roles with unique names and drops them; when the connecting role may not create
roles the tests skip with the reason. What the separation must hold: a database user mapped to an
``agent`` entry cannot record an approval of T-65273's 119.00 refund through the CLI, the code path
the app uses (:meth:`core.api.home.Home.approve` and a forged role under it), or plain SQL (every
table, and a direct call of the function), each try counting 0 refunds; a user that is not the
owner cannot alter the registry or the audit; a team lead mapped to their user approves through the
CLI and the refund is paid once.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from helpers import T65273_RUN, documented_keys, shop_cli
from pg import fresh_schema, played_version, release_upto
from pg_roles import ANA, BOB, GRACE, as_user, refunds_paid, role_shop, role_users, run_status

DECIDE_CALL = (
    "SELECT resolver_decide(%s, %s, %s::jsonb, '{}'::int[], '{}'::text[], '{}'::int[], '{}'::text[], '{}'::text[], "
    "'{}'::int[], '{}'::bigint[], %s::jsonb)"
)
"""A direct call of the decision function with no entries: ``(run_id, version, header, audit)``."""


@pytest.fixture
def users():
    """The shop's database users (:func:`pg_roles.role_users`), dropped after."""
    with role_users() as made:
        yield made


@pytest.fixture
def shop(users, tmp_path, capsys, monkeypatch):
    """The shop with role separation on them (:func:`pg_roles.role_shop`): ``(cli, urls)``."""
    with role_shop(users, tmp_path, capsys, monkeypatch) as made:
        yield made


def _refused(url: str, statement: str, params: tuple = ()) -> str:
    """Run ``statement`` as the user of ``url``; returns the database's refusal (fails if it was not refused)."""
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute(statement, params)
        except psycopg.Error as exc:
            return str(exc.diag.message_primary or exc)
    raise AssertionError(f"not refused: {statement}")


def _approved_refund(cli, admin: str) -> dict:
    """Ana approves T-65273 as her own user, stopped just before the write (the run executing,
    its decision recorded, nothing paid); returns the refund's operation as the header holds it
    (``operation_id``, ``action``)."""
    code, out, err = cli("ana", "approve", "--yes", T65273_RUN, "--name", "Ana", "--interrupt", "before-write", passphrase=ANA)
    assert code == 3, out + err
    with psycopg.connect(admin, autocommit=True) as conn:
        state = json.loads(conn.execute("SELECT state FROM runs WHERE run_id = %s", (T65273_RUN,)).fetchone()[0])  # type: ignore[index]
    return next(op for op in state["operations"] if op["action"]["type"] == "request_refund")


def _approved_header(admin: str, role: str, name: str) -> tuple[int, dict, list[str]]:
    """The waiting run's version and header, with an approval by ``name`` (``role``) and its
    operations as the approval code would plan them, and their IDs."""
    from core.engine.approval import plan_operations
    from core.ground.state import TaskState

    with psycopg.connect(admin, autocommit=True) as conn:
        version, text = conn.execute("SELECT version, state FROM runs WHERE run_id = %s", (T65273_RUN,)).fetchone()  # type: ignore[misc]
    header = json.loads(text)
    state = TaskState.model_validate({**header, "messages": [], "evidence": [], "events": []})
    ops = plan_operations(state)
    header["status"] = "executing"
    header["version"] = version + 1
    header["operations"] = [op.model_dump(mode="json") for op in ops]
    header["approval"] = {
        "role": role, "name": name, "at": header["updated_at"],
        "digest": state.proposal.digest, "signature": "forged", "proposal": None, "world": None,
    }  # fmt: skip
    return version, header, [op.operation_id for op in ops]


def test_an_agent_entry_cannot_record_an_approval_of_the_119_refund_anyhow(shop, users):
    cli, urls = shop
    admin, bob = urls["admin"], urls["bob"]
    assert run_status(admin) == "waiting_approval"

    # The CLI, as Bob with his own key: refused, nothing paid.
    code, _, err = cli("bob", "approve", "--yes", T65273_RUN, "--name", "Bob", passphrase=BOB)
    assert code == 4 and "team lead" in err, err
    assert refunds_paid(admin) == 0

    # The code path the app uses (Home.approve), with a client that lies about Bob's role: the
    # database recomputes the role from the stored proposal and Bob's registry entry.
    from core.api.queue import queue_columns
    from core.engine.approval import approve
    from core.ground.errors import ApprovalRefused
    from core.stores import open_store

    store = open_store(bob, summarize=queue_columns)
    with pytest.raises(ApprovalRefused, match=r"Bob is agent, and run .* needs team_lead or above"):
        approve(store, b"k" * 32, T65273_RUN, "team_lead", "Bob")
    with pytest.raises(ApprovalRefused, match=r"Bob is agent, and run .* needs team_lead or above"):
        approve(store, b"k" * 32, T65273_RUN, "team_lead", "Ana")  # a name and role that are not his entry's
    assert run_status(admin) == "waiting_approval" and refunds_paid(admin) == 0

    # Plain SQL on every table Bob can reach, and a direct call of the function.
    version, header, ops = _approved_header(admin, "team_lead", "Ana")
    text = json.dumps(header)
    for url in (bob, urls["runner"], urls["executor"], urls["owner"]):
        assert "resolver_decide" in _refused(url, "UPDATE runs SET state = %s WHERE run_id = %s", (text, T65273_RUN))
        assert "only through resolver_decide" in _refused(
            url, "UPDATE runs SET status = 'executing' WHERE run_id = %s", (T65273_RUN,)
        )
        assert "may not carry a decision" in _refused(
            url,
            "INSERT INTO runs (run_id, task_id, status, updated_at, version, state) VALUES ('forged', 'T-65273', 'executing', '', 1, %s)",
            (text,),
        )
        world = "permission denied" if url == urls["runner"] else "planned by no recorded approval"  # the runner has no world
        assert world in _refused(
            url,
            "INSERT INTO refunds (refund_id, operation_id, order_id, amount, at, actor) VALUES ('R1', %s, 'LK-507862', '119.00', '', 'x')",
            (ops[0],),
        )
        assert world in _refused(
            url,
            "INSERT INTO operations (operation_id, service, args, result, at, actor, seq) VALUES (%s, 'refund', '{}', '{}', '', 'x', 99)",
            (ops[0],),
        )
    for statement in (
        "INSERT INTO audit (id, run_id, decision, role, name) VALUES (999, 'x', 'approve', 'team_lead', 'Ana')",
        "INSERT INTO decided (audit_id, run_id, run_uid, decision, ops) VALUES (999, 'x', 'x', 'approve', '{}')",
        "UPDATE store_roles SET tables_role = current_user",
        "UPDATE policy_limits SET max_amount = 1000000",
        "DELETE FROM run_marks",
    ):
        assert "permission denied" in _refused(bob, statement)
    call = DECIDE_CALL
    audit = {
        "decision": "approve",
        "role": "agent",
        "name": "Bob",
        "digest": header["approval"]["digest"],
        "at": "",
        "run_uid": header["run_uid"],
    }
    bob_header = {**header, "approval": {**header["approval"], "role": "agent", "name": "Bob"}}
    params = (
        T65273_RUN,
        version,
        json.dumps({"status": "executing", "version": version + 1, "state": json.dumps(bob_header)}),
        json.dumps(audit),
    )
    assert "needs team_lead or above" in _refused(bob, call, params)
    assert "not mapped to an approver" in _refused(urls["runner"], call, params)
    assert run_status(admin) == "waiting_approval" and refunds_paid(admin) == 0


def test_an_agent_entry_cannot_lower_the_proposal_then_approve_it_and_pay(shop, users):
    """A new user's trial paid T-65273's 119.00 CAD as Bob (agent) with plain SQL: rewrite the
    waiting run's proposal to 1.00 (which an agent may approve, under the agent limit of 25.00),
    then ``resolver_decide`` with no ``binds`` (the operations check ran only with them) and a
    made-up operation, then ``operations`` and ``refunds`` rows for it. Migration 15 stamps who
    proposed and refuses a proposal an approver's user wrote; every step now pays nothing."""
    _, urls = shop
    admin, bob = urls["admin"], urls["bob"]
    with psycopg.connect(admin, autocommit=True) as conn:
        version, text = conn.execute("SELECT version, state FROM runs WHERE run_id = %s", (T65273_RUN,)).fetchone()  # type: ignore[misc]
        proposed_by = conn.execute("SELECT proposal_by FROM runs WHERE run_id = %s", (T65273_RUN,)).fetchone()[0]  # type: ignore[index]
        assert proposed_by is None  # proposed before the setup made the guard
    lowered = json.loads(text)
    lowered["proposal"]["actions"][0]["amount"] = "1.00"
    with psycopg.connect(bob, autocommit=True) as conn:  # his rights as an executor let him save a step
        conn.execute("UPDATE runs SET state = %s, version = version + 1 WHERE run_id = %s", (json.dumps(lowered), T65273_RUN))
        assert conn.execute("SELECT proposal_by FROM runs WHERE run_id = %s", (T65273_RUN,)).fetchone()[0] == users["bob"]  # type: ignore[index]
        conn.execute("UPDATE runs SET proposal_by = NULL WHERE run_id = %s", (T65273_RUN,))  # nor can he clear the stamp
        assert conn.execute("SELECT proposal_by FROM runs WHERE run_id = %s", (T65273_RUN,)).fetchone()[0] == users["bob"]  # type: ignore[index]
    header = {
        **lowered,
        "status": "executing",
        "version": version + 2,
        "operations": [{"operation_id": "OP-EVIL-1"}],
        "approval": {"role": "agent", "name": "Bob", "at": lowered["updated_at"], "digest": "d" * 64, "signature": "x"},
    }
    call = DECIDE_CALL
    audit = {
        "decision": "approve",
        "role": "agent",
        "name": "Bob",
        "digest": "d" * 64,
        "at": "",
        "run_uid": lowered["run_uid"],
        "sig": "x",
    }
    params = (
        T65273_RUN,
        version + 1,
        json.dumps({"status": "executing", "version": version + 2, "state": json.dumps(header)}),
        json.dumps(audit),
    )
    assert "an approver's, not the agent's runner" in _refused(bob, call, params)
    with psycopg.connect(admin, autocommit=True) as conn:  # the runner (here the administrator) proposes 1.00 itself
        for state in (text, json.dumps(lowered)):  # back, then 1.00 again: stamped as the administrator's
            conn.execute("UPDATE runs SET state = %s WHERE run_id = %s", (state, T65273_RUN))
    assert "must sign the operations" in _refused(bob, call, params)  # no binds: refused too
    assert "planned by no recorded approval" in _refused(
        bob,
        "INSERT INTO refunds (refund_id, operation_id, order_id, amount, at, actor) VALUES ('RF-EVIL', 'OP-EVIL-1', 'LK-507862', '119.00', '', 'Bob')",
    )
    assert run_status(admin) == "waiting_approval" and refunds_paid(admin) == 0
    with psycopg.connect(admin, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM decided").fetchone()[0] == 0  # type: ignore[index]


def test_setup_refuses_one_user_for_two_approvers_or_an_approver_on_the_runner_s_user(shop, users):
    """A new user's trial: ``--approver Ana=u --approver Bob=u`` printed both mappings and kept
    one; ``--approver Ana=<the runner's user>`` was taken, so the runner could record approvals."""
    cli, urls = shop
    setup = ("store", "roles", "setup", "--tables-role", users["tables"])
    code, _, err = cli("admin", *setup, "--approver", f"Ana={users['stranger']}", "--approver", f"Bob={users['stranger']}")
    assert code == 1 and "given to two approvers, Ana and Bob" in err, err
    code, _, err = cli("admin", *setup, "--runner-user", users["stranger"], "--approver", f"Ana={users['stranger']}")
    assert code == 1 and "the runner's and approver Ana's" in err, err
    code, _, err = cli("admin", *setup, "--approver", f"Ana={users['bob']}")
    assert code == 1 and f"{users['bob']} is already approver Bob's" in err, err
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        mapped = dict(conn.execute("SELECT name, db_user FROM approvers WHERE db_user IS NOT NULL").fetchall())
    assert mapped == {"Ana": users["ana"], "Bob": users["bob"]}  # nothing changed


def test_only_the_owner_alters_the_registry_and_nobody_the_audit(shop, users):
    _, urls = shop
    for kind in ("ana", "bob", "runner", "executor"):
        url = urls[kind]
        for statement in (
            "UPDATE approvers SET role = 'grace' WHERE name = 'Bob'",
            "INSERT INTO approvers (name, role, public_key, added_at, signature, private_key) VALUES ('Eve', 'grace', 'k', '', 's', '')",
            "DELETE FROM approvers WHERE name = 'Ana'",
            "UPDATE approvers SET db_user = current_user WHERE name = 'Ana'",
            "UPDATE shop_parts SET body = 'x' WHERE name = 'approvers.json'",
            "DELETE FROM shop_parts",
            "UPDATE audit SET name = 'Eve'",
            "DELETE FROM audit",
            "INSERT INTO audit (id, run_id, decision) VALUES (999, '(approvers)', 'add')",
        ):
            assert "permission denied" in _refused(url, statement), (kind, statement)
    assert "go back to fewer rows" in _refused(
        urls["ana"], "SELECT resolver_put_head(convert_to('{\"length\": 1}', 'UTF8'))"
    )  # an approver may write the signed head only forward
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()[0]  # type: ignore[index]
    for table in ("runs", "approvers", "audit"):
        assert "permission denied for schema" in _refused(urls["stranger"], f"SELECT count(*) FROM {schema}.{table}")
    cli = shop[0]  # a new user's trial: the CLI told the stranger to create the schema that was there
    for argv in (("runs",), ("store", "check"), ("show", T65273_RUN)):
        code, out, err = cli("stranger", *argv)
        said = out + err
        assert code == 1 and f"has no rights on the schema {schema}" in said and "CREATE SCHEMA" not in said, (argv, said)
    code, out, _ = cli("stranger", "doctor")
    assert f"has no rights on the schema {schema}" in out, out
    owner = urls["owner"]
    assert "permission denied" in _refused(owner, "UPDATE audit SET name = 'Eve'")  # the owner may only append
    assert "permission denied" in _refused(owner, "DELETE FROM audit")
    assert "must be owner" in _refused(owner, "ALTER TABLE audit DISABLE TRIGGER audit_no_delete")
    with psycopg.connect(owner, autocommit=True) as conn:  # the owner's user may change the registry's rows
        assert conn.execute("UPDATE approvers SET added_at = added_at WHERE name = 'Bob'").rowcount == 1
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        owners = {r[0] for r in conn.execute("SELECT tableowner FROM pg_tables WHERE schemaname = current_schema()")}
    assert owners == {users["tables"]}
    owned = _functions_owned(urls["admin"])  # setup at migration 14: the replaced functions too
    assert {owner for owner, _, _ in owned.values()} == {users["tables"]}
    assert owned["resolver_guard_register"][2] and owned["resolver_guard_register"][2][0].startswith("search_path=")


def test_a_team_lead_approves_through_the_cli_as_their_user_and_the_refund_is_paid_once(shop, users):
    cli, urls = shop
    admin = urls["admin"]
    code, out, err = cli("ana", "approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 0 and "Status: done" in out, err
    assert refunds_paid(admin) == 1
    code, _, err = cli("ana", "approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 4 and refunds_paid(admin) == 1
    code, out, err = cli("bob", "audit", "verify")
    assert code == 0 and "chain whole" in out, out + err
    code, out, err = cli("ana", "doctor")
    assert (
        f"role separation on (tables owned by {users['tables']}); this user, {users['ana']}, is approver Ana (team_lead)" in out
    )
    assert "is mapped to no approver" in cli("admin", "doctor")[1]
    with psycopg.connect(admin, autocommit=True) as conn:
        rows = conn.execute("SELECT name, role, db_user FROM approvers ORDER BY n").fetchall()
        decided = conn.execute("SELECT run_id, decision FROM decided").fetchall()
    assert ("Ana", "team_lead") in [(r[0], r[1]) for r in rows]
    assert decided == [(T65273_RUN, "approve")]


def test_marks_name_their_maker_and_the_function_writes_their_audit_row(shop, users):
    """Claims, hand-overs and snoozes on a separated store: made through the CLI as the approver's
    user (their audit rows by ``resolver_note``, as their registry entry); a mark naming someone
    else, written by hand, is refused."""
    cli, urls = shop
    code, out, err = cli("ana", "claim", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 0, err
    code, out, err = cli("ana", "handover", T65273_RUN, "--to", "Bob", "--note", "yours", "--name", "Ana", passphrase=ANA)
    assert code == 4 and err.startswith(f"Bob (role agent) may not decide run {T65273_RUN}: it needs team lead"), err
    code, out, err = cli("ana", "handover", T65273_RUN, "--to", "Grace", "--note", "yours", "--name", "Ana", passphrase=ANA)
    assert code == 0, err
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        rows = conn.execute("SELECT decision, name, role FROM audit WHERE run_id = %s ORDER BY id", (T65273_RUN,)).fetchall()
    assert [tuple(r) for r in rows][-2:] == [("claim", "Ana", "team_lead"), ("handover", "Ana", "team_lead")]
    bob = urls["bob"]
    assert "A mark names its maker" in _refused(
        bob,
        "UPDATE run_marks SET claimed_by = 'Ana', claimed_role = 'team_lead', claimed_at = 'x' WHERE run_id = %s",
        (T65273_RUN,),
    )
    assert "A mark names its maker" in _refused(
        bob, "UPDATE run_marks SET handed_by = 'Ana', handed_to = 'Bob', handed_at = 'y' WHERE run_id = %s", (T65273_RUN,)
    )
    assert "permission denied" in _refused(urls["runner"], "DELETE FROM run_marks")
    assert "Only an approver marks a run" in _refused(
        urls["owner"],  # a user mapped to no entry
        "UPDATE run_marks SET snoozed_by = 'Ana', snoozed_at = 'z' WHERE run_id = %s",
        (T65273_RUN,),
    )
    # A lapse is the one event a user writes (whoever reads the queue first); any other is the triggers'.
    with psycopg.connect(bob, autocommit=True) as conn:
        conn.execute("INSERT INTO queue_events (kind, run_id, at, detail) VALUES ('lapse', %s, '', 'd')", (T65273_RUN,))
    assert "row-level security" in _refused(
        bob, "INSERT INTO queue_events (kind, run_id, at, to_name) VALUES ('handover', %s, '', 'Bob')", (T65273_RUN,)
    )
    assert "permission denied" in _refused(bob, "DELETE FROM queue_events")
    call = "SELECT resolver_note(%s, %s::jsonb)"
    forged = json.dumps({"decision": "claim", "role": "team_lead", "name": "Ana", "digest": "", "at": ""})
    assert "names Ana (team_lead), but the database user" in _refused(bob, call, (T65273_RUN, forged))
    approve = json.dumps({"decision": "approve", "role": "agent", "name": "Bob", "digest": "", "at": ""})
    assert "is not recorded this way" in _refused(bob, call, (T65273_RUN, approve))
    code, out, err = cli("bob", "audit", "verify")
    assert code == 0 and "chain whole" in out, out + err


def test_a_store_at_migration_11_upgrades_and_its_waiting_run_is_approved_through_the_function(
    users, tmp_path, capsys, monkeypatch
):
    """A shop store of the previous format (the frozen schema-6 shop, brought to migration 11 by
    the migrations of the release before this one, as a store in use was), T-65273 waiting over
    the upgrade: migration 12 applies on the next open, role separation is set up, and Ana, as
    her own database user, refreshes and approves it through the CLI; the refund is paid once."""
    from pathlib import Path

    from core.stores.postgres import schema
    from core.stores.postgres.database import forget

    from pg import restore_frozen

    frozen = Path(__file__).parent.parent / "fixtures" / "shop_team_store_schema_6"
    with fresh_schema() as admin:
        restore_frozen(admin, frozen, [1, 2, 3, 4, 6])
        before = tuple(m for m in schema.MIGRATIONS if m[0] <= 11)
        with monkeypatch.context() as m:  # the previous release: migrations up to 11
            m.setattr(schema, "MIGRATIONS", before)
            m.setattr(schema, "ALL", frozenset(v for v, _, _ in before))
            m.setattr(schema, "LATEST", 11)
            from core.stores.postgres import schema_version_of
            from core.stores.postgres.database import database

            database(admin)
            assert schema_version_of(admin) == 11
            forget(admin)
        run = shop_cli(tmp_path / "home", capsys, monkeypatch)
        urls = {kind: as_user(admin, name) for kind, name in users.items()} | {"admin": admin}

        def cli(kind: str, *argv: str, **kw: str | None) -> tuple[int, str, str]:
            return run(*argv, "--store", urls[kind], **kw)

        code, out, err = cli("admin", "show", T65273_RUN)
        assert code == 0 and "Status: waiting_approval" in out, err
        assert schema_version_of(admin) == schema.LATEST  # 12 (roles) and those after it
        with psycopg.connect(admin, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM policy_limits").fetchone()[0] == 8  # type: ignore[index]
        code, out, err = cli(
            "admin", "store", "roles", "setup", "--tables-role", users["tables"], "--approver", f"Ana={users['ana']}"
        )
        assert code == 0, err
        code, out, err = cli("ana", "watch", "--once")  # a reader of the queue, as her user
        assert code == 0, err
        # Ana's first unlock moves her key out of the row: a registry write, made by the administrator's
        # connection (her own user may not write the registry).
        code, _, err = cli("admin", "refresh", T65273_RUN, "--name", "Ana", passphrase=ANA)
        assert code == 0, err
        code, _, err = cli("ana", "refresh", T65273_RUN, "--name", "Ana", passphrase=ANA)
        assert code == 0, err
        code, out, err = cli("ana", "approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
        assert code == 0 and "Status: done" in out, err
        assert refunds_paid(admin) == 1
        code, out, err = cli("ana", "audit", "verify")
        assert code == 0 and "chain whole" in out, out + err


def test_setup_refuses_bad_input_with_one_sentence_and_changes_nothing(shop, users, tmp_path, capsys, monkeypatch):
    cli, urls = shop
    cases = (
        (("--approver", "Ana"), 2, "--approver takes NAME=USER"),
        (("--approver", "Nobody=" + users["bob"]), 1, "No approver named Nobody in the registry"),
        (("--owner-user", "no_such_user_r25"), 1, "There is no database user no_such_user_r25"),
        (("--owner-user", "Robert'); DROP TABLE runs;--"), 1, "is not a plain database role name"),
        (("--tables-role", users["ana"]), 1, f"The role {users['ana']} may log in"),
    )
    for extra, code_wanted, said in cases:
        code, out, err = cli("admin", "store", "roles", "setup", "--tables-role", users["tables"], *extra)
        assert code == code_wanted and said in err and out == "", (extra, code, err)
        assert len(err.strip().splitlines()) == 1, err
    code, out, err = cli("ana", "store", "roles", "setup", "--tables-role", users["tables"])
    assert code == 1 and "run this with a database administrator's URL" in err and "Traceback" not in err, err
    sqlite = shop_cli(tmp_path / "practice", capsys, monkeypatch)
    code, _, err = sqlite("store", "roles", "setup")
    assert code == 2 and "Role separation is for a team store" in err
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        mapped = dict(conn.execute("SELECT name, db_user FROM approvers WHERE db_user IS NOT NULL").fetchall())
    assert mapped == {"Ana": users["ana"], "Bob": users["bob"]}
    code, out, err = cli("admin", "store", "roles", "setup", "--tables-role", users["tables"], "--json")  # again: changes nothing
    assert code == 0, err
    printed = json.loads(out)
    assert printed["ok"] is True and printed["lines"][0].endswith(f"now belong to {users['tables']} (NOLOGIN).")
    assert set(printed) == documented_keys()["store roles"]


def test_the_executors_user_finishes_an_approval_once_and_the_runner_cannot(shop):
    """Ana's approval is recorded, then her process stops before the first write; the executor's
    own database user (mapped to no entry) resumes it and pays the refund once. The runner's user
    cannot write the world."""
    cli, urls = shop
    code, out, err = cli("runner", "run", "T-90104")  # the runner's own user saves a new run's steps
    assert code == 0 and "Approval needed" in out, out + err
    code, out, err = cli("runner", "runs", "--status", "waiting_approval")
    assert code == 0 and "T-90104" in out and T65273_RUN in out, out + err
    code, out, err = cli("ana", "approve", "--yes", T65273_RUN, "--name", "Ana", "--interrupt", "before-write", passphrase=ANA)
    assert code == 3, out + err
    assert run_status(urls["admin"]) == "executing" and refunds_paid(urls["admin"]) == 0
    code, out, err = cli("runner", "resume", T65273_RUN)
    assert code == 4 and "refused this write to its user" in err and len(err.strip().splitlines()) == 1, out + err
    assert refunds_paid(urls["admin"]) == 0
    code, out, err = cli("executor", "resume", T65273_RUN)
    assert code == 0 and "Status: done" in out, out + err
    assert refunds_paid(urls["admin"]) == 1
    code, out, err = cli("executor", "resume", T65273_RUN)
    assert refunds_paid(urls["admin"]) == 1


def test_the_owners_user_changes_the_registry_and_the_new_approver_is_mapped(shop, users):
    """The owner, as the owner's database user, adds an approver (registry row, audit row, seal and
    head); an approver's user may not; the administrator maps the new one, whose claim and
    rejection above their role are refused (the rejection by the database too); audit verify
    passes."""
    cli, urls = shop
    code, _, err = cli("owner", "approvers", "add", "Carl", "--role", "agent", passphrase="carl-passphrase", owner=GRACE)
    assert code == 0, err
    code, _, err = cli("ana", "approvers", "add", "Dora", "--role", "grace", passphrase="dora-passphrase", owner=GRACE)
    assert code == 4 and "refused this write to its user" in err and len(err.strip().splitlines()) == 1, err
    code, _, err = cli(
        "admin", "store", "roles", "setup", "--tables-role", users["tables"], "--approver", f"Carl={users['runner']}"
    )
    assert code == 0, err
    code, _, err = cli("runner", "claim", T65273_RUN, "--name", "Carl", passphrase="carl-passphrase")
    assert code == 4 and "needs team lead or above to claim it" in err, err  # a mark needs the decision's role
    code, _, err = cli("runner", "reject", T65273_RUN, "--reason", "not ours", "--name", "Carl", passphrase="carl-passphrase")
    assert code == 4 and "needs team lead or above" in err, err
    from core.api.queue import queue_columns
    from core.engine.approval import reject
    from core.ground.errors import ApprovalRefused
    from core.stores import open_store

    with pytest.raises(ApprovalRefused, match=r"Carl is agent, and run .* needs team_lead or above"):
        reject(open_store(urls["runner"], summarize=queue_columns), T65273_RUN, "team_lead", "not ours", "Carl")
    assert run_status(urls["admin"]) == "waiting_approval" and refunds_paid(urls["admin"]) == 0
    code, out, err = cli("bob", "audit", "verify")
    assert code == 0 and "chain whole" in out, out + err


def test_the_executors_user_cannot_write_an_approved_operation_with_other_arguments(shop):
    """Under role separation the register's guard binds the arguments (migration 14): Ana's
    approval is recorded and her process stops before the first write; the executor's database
    user, by plain SQL, writes the approved refund's operation ID with 1.00 more, to another
    payment, for another order, as another service or table, with an extra argument, or twice, even
    behind a temporary ``store_roles``/``decided`` of its own: each is refused, 0 refunds. Then the
    executor resumes the approval and 119.00 is paid once."""
    cli, urls = shop
    admin, executor = urls["admin"], urls["executor"]
    refund = _approved_refund(cli, admin)
    op, action = refund["operation_id"], refund["action"]
    assert action["amount"] == "119.00"
    row = "INSERT INTO refunds (refund_id, operation_id, order_id, at, actor, payment_id, amount, reason_code) VALUES (%s, %s, %s, '', 'x', %s, %s, %s)"
    good = ("RF-forged", op, action["order_id"], action["payment_id"], "119.00", action["reason_code"])
    for i, value, field in (
        (4, "120.00", "amount"),
        (3, "PAY-other-1", "payment_id"),
        (2, "LK-000001", "order_id"),
        (5, "OTHER", "reason_code"),
    ):
        forged = tuple(value if n == i else v for n, v in enumerate(good))
        said = _refused(executor, row, forged)
        assert f"differs from what its approval planned (in {field})" in said, said
    register = (
        "INSERT INTO operations (operation_id, service, args, result, at, actor, seq) VALUES (%s, %s, %s, '{}', '', 'x', 99)"
    )
    args = {k: action[k] for k in ("order_id", "amount", "reason_code", "payment_id")}
    assert "in amount" in _refused(executor, register, (op, "request_refund", json.dumps({**args, "amount": "120.00"})))
    assert "in note" in _refused(executor, register, (op, "request_refund", json.dumps({**args, "note": "x"})))
    assert "approved as request_refund, not reship_item" in _refused(executor, register, (op, "reship_item", json.dumps(args)))
    assert "holds no arguments object" in _refused(executor, register, (op, "request_refund", "not json"))
    assert "not a row of reshipments" in _refused(
        executor,
        "INSERT INTO reshipments (reship_id, operation_id, order_id, at, actor, sku, quantity) VALUES ('RS-x', %s, %s, '', 'x', 'S', 1)",
        (op, action["order_id"]),
    )
    with psycopg.connect(executor, autocommit=True) as conn:  # the caller's own tables first in its search path: no way round
        conn.execute("CREATE TEMP TABLE store_roles (tables_role text)")
        conn.execute("INSERT INTO store_roles VALUES (current_user)")
        conn.execute(
            "CREATE TEMP TABLE decided (audit_id bigint, run_id text, run_uid text, decision text, ops text[], calls jsonb)"
        )
        with pytest.raises(psycopg.Error, match="differs from what its approval planned"):
            conn.execute(row, tuple("999.00" if n == 4 else v for n, v in enumerate(good)))
        with pytest.raises(psycopg.Error, match="recorded only by resolver_decide"):
            conn.execute(
                "UPDATE runs SET state = jsonb_set(state::jsonb, '{approval,name}', '\"Bob\"')::text WHERE run_id = %s",
                (T65273_RUN,),
            )
    assert refunds_paid(admin) == 0
    with psycopg.connect(executor) as conn:  # the exact row passes the guard (rolled back: the service writes it)
        conn.execute(row, good)
        assert "one row per approved operation" in _refused_in(conn, row, ("RF-again", *good[1:]))
    assert refunds_paid(admin) == 0
    code, out, err = cli("executor", "resume", T65273_RUN)
    assert code == 0 and "Status: done" in out, out + err
    with psycopg.connect(admin, autocommit=True) as conn:
        paid = conn.execute("SELECT operation_id, amount, payment_id FROM refunds").fetchall()
    assert paid == [(op, "119.00", action["payment_id"])]


def _refused_in(conn: psycopg.Connection, statement: str, params: tuple) -> str:
    """Run ``statement`` in ``conn``'s open transaction; returns the refusal (fails if not refused)."""
    try:
        conn.execute(statement, params)
    except psycopg.Error as exc:
        return str(exc.diag.message_primary or exc)
    raise AssertionError(f"not refused: {statement}")


def _shop_set_up(cli, users: dict[str, str]) -> None:
    """As the administrator: a shop store, Grace the owner, Ana a team lead, T-65273 waiting, and
    role separation set up (the tables' role, the executor's user, Ana's user)."""
    assert cli("admin", "init", "--shop")[0] == 0
    assert cli("admin", "approvers", "init", passphrase=GRACE)[0] == 0
    code, _, err = cli("admin", "approvers", "add", "Ana", "--role", "team_lead", passphrase=ANA, owner=GRACE)
    assert code == 0, err
    assert cli("admin", "run", "T-65273")[0] == 0
    code, _, err = cli(
        "admin", "store", "roles", "setup", "--tables-role", users["tables"], "--executor-user", users["executor"],
        "--approver", f"Ana={users['ana']}",
    )  # fmt: skip
    assert code == 0, err


def _functions_owned(admin: str) -> dict[str, tuple[str, bool, list[str] | None]]:
    """The schema's functions: name -> (owner, SECURITY DEFINER, SET clauses)."""
    with psycopg.connect(admin, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT p.proname, pg_get_userbyid(p.proowner), p.prosecdef, p.proconfig FROM pg_proc p "
            "WHERE p.pronamespace = current_schema()::regnamespace"
        ).fetchall()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def test_a_store_set_up_at_13_keeps_its_owners_through_migration_14_and_its_approval_resumes(
    users, tmp_path, capsys, monkeypatch
):
    """A separated store of the previous format (migrations up to 13, set up, Ana's approval of
    T-65273 recorded before migration 14 and stopped before the first write): an approver's own
    user cannot apply migration 14 (one sentence); ``store migrate`` with the administrator's URL does, the
    replaced functions still belong to the tables' role with their grants and pinned search
    path, the decision's arguments are filled from its run, a forged 120.00 is refused and the
    executor's user pays 119.00 once."""
    from core.stores.postgres import schema, schema_version_of
    from core.stores.postgres.database import forget

    with fresh_schema() as admin:
        run = shop_cli(tmp_path / "home", capsys, monkeypatch)
        urls = {kind: as_user(admin, name) for kind, name in users.items()} | {"admin": admin}

        def cli(kind: str, *argv: str, **kw: str | None) -> tuple[int, str, str]:
            return run(*argv, "--store", urls[kind], **kw)

        with monkeypatch.context() as m:  # the previous release: migrations up to 13
            release_upto(m, 13)
            _shop_set_up(cli, users)
            assert cli("admin", "refresh", T65273_RUN, "--name", "Ana", passphrase=ANA)[0] == 0  # her key leaves the row
            code, out, err = cli(
                "ana", "approve", "--yes", T65273_RUN, "--name", "Ana", "--interrupt", "before-write", passphrase=ANA
            )
            assert code == 3, out + err
            assert played_version(admin) == 13
            for url in urls.values():
                forget(url)
        assert run_status(admin) == "executing" and refunds_paid(admin) == 0
        code, out, err = cli("ana", "show", T65273_RUN)
        assert code != 0 and "migrations 14, 15" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, (
            out + err
        )
        code, out, err = cli("admin", "store", "migrate")  # as the sentence says
        assert code == 0, out + err
        # 14, 15 (who proposed, which replaces decide and the runs guard again), 16, 17 (the journal's writer), 18
        assert schema_version_of(admin) == schema.LATEST
        owned = _functions_owned(admin)
        assert {owner for owner, _, _ in owned.values()} == {users["tables"]}
        assert owned["resolver_decide"][1] is True and owned["resolver_guard_register"][1] is False
        assert owned["resolver_queue_event_forget"][1] is True  # 16: the owner's delete may not touch queue_events
        for name in (
            "resolver_decide", "resolver_guard_register", "resolver_guard_runs", "resolver_guard_marks",
            "resolver_queue_event_forget",
        ):  # fmt: skip
            assert owned[name][2] and owned[name][2][0].startswith("search_path="), (name, owned[name])
        with psycopg.connect(admin, autocommit=True) as conn:
            calls = conn.execute("SELECT calls FROM decided WHERE decision = 'approve'").fetchone()[0]  # type: ignore[index]
            state = json.loads(conn.execute("SELECT state FROM runs WHERE run_id = %s", (T65273_RUN,)).fetchone()[0])  # type: ignore[index]
        assert calls == {op["operation_id"]: op["action"] for op in state["operations"]}
        refund = next(op for op in state["operations"] if op["action"]["type"] == "request_refund")
        a = refund["action"]
        assert "in amount" in _refused(
            urls["executor"],
            "INSERT INTO refunds (refund_id, operation_id, order_id, at, actor, payment_id, amount, reason_code) "
            "VALUES ('RF-x', %s, %s, '', 'x', %s, '120.00', %s)",
            (refund["operation_id"], a["order_id"], a["payment_id"], a["reason_code"]),
        )
        code, out, err = cli("executor", "resume", T65273_RUN)
        assert code == 0 and "Status: done" in out, out + err
        with psycopg.connect(admin, autocommit=True) as conn:
            assert conn.execute("SELECT amount FROM refunds").fetchall() == [("119.00",)]


def test_store_copy_carries_the_database_users_to_a_team_store_and_says_a_sqlite_home_drops_them(shop, users, tmp_path):
    """Role separation and ``store copy``: a separated store copied into another team store keeps
    each approver's database user (the output says the target needs ``store roles setup``, roles
    and grants being per server); copied into a SQLite home the mapping is dropped, and said."""
    cli, urls = shop
    with fresh_schema() as target:
        code, out, err = cli("admin", "store", "copy", "--from", urls["admin"], "--to", target)
        assert code == 0, out + err
        said = [line for line in out.splitlines() if "database users:" in line]
        assert said == [
            f"  database users: 2 approver(s) mapped as in the source (Ana={users['ana']}, Bob={users['bob']}); the target "
            f"has no role separation (the source's tables belong to {users['tables']}) until resolver store roles setup runs "
            "there with its administrator's URL (roles and grants belong to each server)"
        ], out
        with psycopg.connect(target, autocommit=True) as conn:
            mapped = dict(conn.execute("SELECT name, db_user FROM approvers WHERE db_user IS NOT NULL").fetchall())
            assert conn.execute("SELECT count(*) FROM store_roles").fetchone()[0] == 0  # type: ignore[index]
        assert mapped == {"Ana": users["ana"], "Bob": users["bob"]}
    home = tmp_path / "copied"
    code, out, err = cli("admin", "store", "copy", "--from", urls["admin"], "--to", f"sqlite://{home}")
    assert code == 0, out + err
    assert (
        f"  database users: not carried, a SQLite home has none (Ana={users['ana']}, Bob={users['bob']}); the source's "
        f"role separation (the source's tables belong to {users['tables']}) does not go with the copy"
    ) in out.splitlines(), out


def test_an_approved_reship_label_and_reply_pass_the_argument_guard(shop):
    """Migration 14's guard lets the services' own rows through for every kind of action: the
    runner's user runs T-90103 (a reship, a return label and a reply, within an agent's limit),
    Bob approves it as his user, and each service row is written once."""
    cli, urls = shop
    code, out, err = cli("runner", "run", "T-90103")
    assert code == 0 and "Approval needed" in out, out + err
    run_id = T65273_RUN.replace("T-65273", "T-90103")
    code, out, err = cli("bob", "approve", "--yes", run_id, "--name", "Bob", passphrase=BOB)
    assert code == 0 and "Status: done" in out, out + err
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        counts = [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("reshipments", "return_labels", "replies")]  # type: ignore[index]
    assert counts == [1, 1, 1]


def test_an_approval_may_carry_only_the_operations_its_stored_proposal_plans(shop, users):
    """A second trial: Bob (agent) approved T-28166's 9.95 refund, which an agent may approve,
    through ``resolver_decide`` with one more operation, a 119.00 refund of T-65273's order (and
    the same signed with his own key by a patched client): the function took the operations from
    the caller, and the register's guard then paid the extra one. Now they must be exactly what
    the stored proposal plans."""
    from core.engine.approval import plan_operations
    from core.ground.state import TaskState

    cli, urls = shop
    admin, bob = urls["admin"], urls["bob"]
    run = "T-28166-agent-chat-small-1"
    assert cli("runner", "run", "T-28166")[0] == 0
    with psycopg.connect(admin, autocommit=True) as conn:
        version, text = conn.execute("SELECT version, state FROM runs WHERE run_id = %s", (run,)).fetchone()  # type: ignore[misc]
    header = json.loads(text)
    state = TaskState.model_validate({**header, "messages": [], "evidence": [], "events": []})
    planned = [op.model_dump(mode="json") for op in plan_operations(state)]
    extra = {
        **planned[0],
        "operation_id": "op-evil-1",
        "index": len(planned),
        "action": {"type": "request_refund", "order_id": "LK-507862", "amount": "119.00", "reason_code": "RFD-DOUBLE",
                   "payment_id": "PAY-507862-2"},
    }  # fmt: skip
    call = DECIDE_CALL
    for operations in ([*planned, extra], [extra], [planned[-1], *planned[:-1]]):  # one more, another, reordered
        new = {
            **header,
            "status": "executing",
            "version": version + 1,
            "operations": operations,
            "approval": {"role": "agent", "name": "Bob", "at": header["updated_at"], "digest": state.proposal.digest,
                         "signature": "x"},
        }  # fmt: skip
        binds = json.dumps({"head": "0:", "ops": [op["operation_id"] for op in operations]})
        audit = {"decision": "approve", "role": "agent", "name": "Bob", "digest": state.proposal.digest, "at": "",
                 "run_uid": header["run_uid"], "sig": "x", "binds": binds}  # fmt: skip
        params = (
            run,
            version,
            json.dumps({"status": "executing", "version": version + 1, "state": json.dumps(new)}),
            json.dumps(audit),
        )
        assert "not the ones its stored proposal plans" in _refused(bob, call, params), operations
    assert refunds_paid(admin) == 0
    with psycopg.connect(admin, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM decided").fetchone()[0] == 0  # type: ignore[index]
    code, out, err = cli("bob", "approve", "--yes", run, "--name", "Bob", passphrase=BOB)  # what it plans: paid once
    assert code == 0 and "done" in out, out + err
    with psycopg.connect(admin, autocommit=True) as conn:
        paid = conn.execute("SELECT order_id, amount FROM refunds").fetchall()
    assert paid == [(planned[0]["action"]["order_id"], "9.95")]


def test_two_sessions_cannot_both_write_the_row_of_one_approved_operation(shop, users):
    """A second trial: two sessions inserting the refund of one approved operation at once both
    passed the one-row check (neither saw the other's uncommitted row). The check now waits for a
    lock, and the second is refused once the first commits."""
    import threading

    cli, urls = shop
    admin, executor = urls["admin"], urls["executor"]
    refund = _approved_refund(cli, admin)
    a = refund["action"]
    insert = (
        "INSERT INTO refunds (refund_id, operation_id, order_id, at, actor, payment_id, amount, reason_code) "
        "VALUES (%s, %s, %s, '', 'x', %s, %s, %s)"
    )
    second: list[BaseException | None] = []
    with psycopg.connect(executor) as first:  # a transaction left open, its row not committed
        first.execute(
            insert, ("RF-RACE-A", refund["operation_id"], a["order_id"], a["payment_id"], a["amount"], a["reason_code"])
        )

        def other() -> None:
            try:
                with psycopg.connect(executor, autocommit=True) as conn:
                    conn.execute(
                        insert,
                        ("RF-RACE-B", refund["operation_id"], a["order_id"], a["payment_id"], a["amount"], a["reason_code"]),
                    )
                second.append(None)
            except psycopg.Error as exc:
                second.append(exc)

        racer = threading.Thread(target=other)
        racer.start()
        racer.join(1.0)
        assert racer.is_alive()  # it waits for the first one's lock
        first.commit()
    racer.join(30)
    assert second and second[0] is not None and "already has its row" in str(second[0]), second
    assert refunds_paid(admin) == 1


def test_the_sql_policy_sums_the_lines_of_a_kind_as_the_python_one_does(tmp_path):
    """A trial of role separation split T-65273's refund into lines each within an agent's 25.00;
    ``resolver_needed_role`` (migration 15) and :func:`core.engine.policy.proposal_role` both sum a kind's
    lines, and agree on every case."""
    from core.api.home import Home
    from core.engine.policy import proposal_role
    from core.ground.state import ProposedAction
    from pydantic import TypeAdapter

    line = {"type": "request_refund", "order_id": "LK-507862", "amount": "23.80", "reason_code": "RFD-DOUBLE",
            "payment_id": "PAY-507862-2"}  # fmt: skip
    reship = {"type": "reship_item", "order_id": "LK-640436", "sku": "PLANTER", "quantity": 1}
    label = {"type": "create_return_label", "order_id": "LK-640436", "sku": "PLANTER", "reason": "damaged",
             "return_shipping": "free"}  # fmt: skip
    cases = [[], [line], [line] * 5, [line] * 10, [line] * 11, [line, label, label], [reship] * 3, [reship, line]]
    adapter = TypeAdapter(list[ProposedAction])
    with fresh_schema() as url:
        Home(tmp_path / "h", store=url).run("T-90104")  # the store made, migrated to the latest
        with psycopg.connect(url, autocommit=True) as conn:
            for actions in cases:
                sql_role = conn.execute("SELECT resolver_needed_role(%s::jsonb)", (json.dumps(actions),)).fetchone()[0]  # type: ignore[index]
                assert sql_role == proposal_role(adapter.validate_python(actions)), actions
            assert conn.execute("SELECT resolver_needed_role(%s::jsonb)", (json.dumps([line] * 10),)).fetchone()[0] == "team_lead"  # type: ignore[index]


def test_a_lapse_written_by_an_approver_goes_with_its_run_deleted_by_the_owner(shop, users):
    """Migration 16 on a separated store: an approver's user writes a lapse (a compare-and-set
    that holds its run with ``FOR KEY SHARE``); the owner's user, who may delete runs but has no
    right on ``queue_events`` or ``run_marks``, deletes the run; the trigger, run as the tables'
    role, takes the lapse and Ana's claim with it (a trial: the owner's ``reset --run`` deleted
    the run, then failed on its marks in a second transaction, leaving the claim to the next run
    of that ID), and a lapse for the run now gone is not written."""
    from core.api.queue import queue_columns
    from core.ground.clock import FixedClock
    from core.stores import postgres

    cli, urls = shop
    code, _, err = cli("ana", "claim", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 0, err
    bob = postgres.open_store(urls["bob"], FixedClock("2026-10-09T17:00:00-04:00"), summarize=queue_columns)
    digest = bob.load(T65273_RUN).proposal.digest  # type: ignore[union-attr]
    assert bob.record_lapse(T65273_RUN, digest, "2026-10-16T17:00:00-04:00", "team_lead") is True
    assert "permission denied" in _refused(urls["owner"], "DELETE FROM queue_events WHERE kind = 'lapse'")
    assert "permission denied" in _refused(urls["owner"], "DELETE FROM run_marks")
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        assert conn.execute("SELECT claimed_by FROM run_marks WHERE run_id = %s", (T65273_RUN,)).fetchone()[0] == "Ana"  # type: ignore[index]
    with psycopg.connect(urls["owner"], autocommit=True) as conn:
        assert conn.execute("DELETE FROM runs WHERE run_id = %s", (T65273_RUN,)).rowcount == 1
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM queue_events WHERE kind = 'lapse'").fetchone()[0] == 0  # type: ignore[index]
        assert conn.execute("SELECT count(*) FROM run_marks").fetchone()[0] == 0  # type: ignore[index]
    assert bob.record_lapse(T65273_RUN, digest, "2026-10-16T17:00:00-04:00", "team_lead") is False


_PLANT = (
    "INSERT INTO model_calls (run_id, step, attempt, route, sent_at, answer, tokens_in, tokens_out, answered_at) "
    "VALUES (%s, 3, 2, 'openai:{}', '', %s, 2660, 48, '')"
)
"""Step 3's attempt 2 of the live run, answered: what the trial planted as Bob's user."""


def test_only_the_runners_user_writes_the_journal_and_an_approvers_insert_is_refused_at_the_insert(shop, users, stub):
    """The trial: a live run's step 3 was refused by the model server (HTTP 401), then Bob (an
    agent entry, mapped to his own user) inserted step 3's answer, a 24.00 refund, which the
    runner's resume proposed and Bob approved. Now his INSERT is refused by the database: no
    grant, and on a store whose grants an earlier setup made (INSERT granted back) the journal's
    guard refuses it; ``setup`` takes the grant back again. The runner's own rows are stamped as
    its user's, its resume proposes the real 119.00 refund, and the owner's delete of the run
    takes its journal with it."""
    from core.api.home import Home
    from core.stores import postgres

    from helpers import LIVE_RUN, forged_finish, refused_at_step_3

    cli, urls = shop
    admin, bob = urls["admin"], urls["bob"]
    home = Home(cli.root, store=urls["runner"])
    refused_at_step_3(home, stub)
    forged = forged_finish(stub)
    for kind in ("bob", "ana", "executor", "owner"):
        assert "permission denied for table model_calls" in _refused(urls[kind], _PLANT, (LIVE_RUN, forged)), kind
        assert "permission denied for table model_calls" in _refused(
            urls[kind], "UPDATE model_calls SET answer = %s WHERE run_id = %s", (forged, LIVE_RUN)
        ), kind
    with psycopg.connect(admin, autocommit=True) as conn:  # an earlier release's setup granted it
        conn.execute(f"GRANT INSERT, UPDATE ON model_calls TO {users['bob']}")
    refusal = f"The database user {users['bob']} is approver Bob's, and only the agent's runner writes the journal"
    assert refusal in _refused(bob, _PLANT, (LIVE_RUN, forged))
    assert refusal in _refused(bob, "UPDATE model_calls SET answer = %s WHERE run_id = %s AND step = 3", (forged, LIVE_RUN))
    code, _, err = cli("admin", "store", "roles", "setup", "--tables-role", users["tables"], "--approver", f"Bob={users['bob']}")
    assert code == 0, err
    assert "permission denied for table model_calls" in _refused(bob, _PLANT, (LIVE_RUN, forged))  # taken back
    with psycopg.connect(admin, autocommit=True) as conn:
        writers = {r[0] for r in conn.execute("SELECT written_by FROM model_calls WHERE run_id = %s", (LIVE_RUN,))}
        assert conn.execute("SELECT count(*) FROM model_calls WHERE run_id = %s", (LIVE_RUN,)).fetchone()[0] == 3  # type: ignore[index]
    assert writers == {users["runner"]}
    done = home.resume(LIVE_RUN)  # the runner asks step 3 again: its own insert and answer go in
    assert done.state.status == "waiting_approval" and str(done.state.proposal.actions[0].amount) == "119.00"  # type: ignore[union-attr]
    assert [(c["step"], c["attempt"], c["trusted"]) for c in home.store.model_calls(LIVE_RUN)][-2:] == [
        (3, 1, True),
        (3, 2, True),
    ]
    postgres.open_store(urls["owner"], summarize=_columns()).delete(LIVE_RUN)
    with psycopg.connect(admin, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM model_calls WHERE run_id = %s", (LIVE_RUN,)).fetchone()[0] == 0  # type: ignore[index]
    assert refunds_paid(admin) == 0


def _columns():
    from core.api.queue import queue_columns

    return queue_columns


def test_a_journal_answer_an_approvers_user_wrote_refuses_the_resume_and_doctor_names_it(shop, users, stub):
    """Without any grant, a row planted by a superuser as Bob's user (``written_by``: the guard
    lets a superuser set it, and a superuser could drop the guard anyway): the runner's resume
    takes nothing from it, asks nothing, proposes nothing and gives the lease back, with one
    sentence; ``doctor`` names the run in a FAIL line."""
    from core.api.home import Home

    from helpers import LIVE_RUN, forged_finish, refused_at_step_3

    cli, urls = shop
    admin = urls["admin"]
    home = Home(cli.root, store=urls["runner"])
    refused_at_step_3(home, stub)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(_PLANT.replace("answered_at)", "answered_at, written_by)").replace("'')", "'', %s)"),
                     (LIVE_RUN, forged_finish(stub), users["bob"]))  # fmt: skip
        assert conn.execute("SELECT written_by FROM model_calls WHERE attempt = 2").fetchone()[0] == users["bob"]  # type: ignore[index]
    calls = stub.calls
    why = f"it was written by the database user {users['bob']}, approver Bob's"
    sentence = (
        f"The journal of run {LIVE_RUN} holds an answer to step 3 (attempt 2) that its runner did not write ({why}), "
        "so the resume is refused and nothing was asked or proposed; `resolver doctor` lists it."
    )
    code, out, err = cli("runner", "resume", LIVE_RUN)
    assert code == 1 and err.strip() == sentence, out + err
    assert stub.calls == calls
    with psycopg.connect(admin, autocommit=True) as conn:
        status, state, lease = conn.execute(
            "SELECT status, state, lease_owner FROM runs WHERE run_id = %s", (LIVE_RUN,)
        ).fetchone()  # type: ignore[misc]
    assert (status, json.loads(state)["proposal"], lease) == ("running", None, None)
    code, out, err = cli("runner", "doctor")
    assert code == 1, out + err
    assert (
        f"FAIL  journal of run {LIVE_RUN}: 1 row(s) its runner did not write (step 3 attempt 2: {why}), so its resume is "
        "refused; delete those rows from model_calls (the step is asked again) or the run."
    ) in out.splitlines(), out
    assert refunds_paid(admin) == 0


def test_a_store_set_up_at_18_takes_migration_19_with_its_owners_and_an_approver_counts_and_folds(
    users, tmp_path, capsys, monkeypatch
):
    """A separated store of the release before (migrations up to 18, set up) upgraded by ``store
    migrate``: migration 19's replaced count functions keep the tables' role as owner, SECURITY
    DEFINER and a pinned search path; an approver's own user rejects (the triggers append deltas
    as the tables' role), reads the counts and folds them."""
    from core.stores.postgres import schema
    from core.stores.postgres.database import forget
    from core.stores.postgres.schema import FOLD_AT

    with fresh_schema() as admin:
        run = shop_cli(tmp_path / "home", capsys, monkeypatch)
        urls = {kind: as_user(admin, name) for kind, name in users.items()} | {"admin": admin}

        def cli(kind: str, *argv: str, **kw: str | None) -> tuple[int, str, str]:
            return run(*argv, "--store", urls[kind], **kw)

        before = tuple(m for m in schema.MIGRATIONS if m[0] <= 18)
        with monkeypatch.context() as m:  # the release before: no migration 19
            m.setattr(schema, "MIGRATIONS", before)
            m.setattr(schema, "ALL", frozenset(v for v, _, _ in before))
            m.setattr(schema, "LATEST", 18)
            _shop_set_up(cli, users)
            for url in urls.values():
                forget(url)
        code, out, err = cli("admin", "store", "migrate")
        assert code == 0, out + err
        owned = _functions_owned(admin)
        for name in (*(f"resolver_run_counts_{f}" for f in ("added", "removed", "moved", "cleared", "fold")),):
            owner, definer, config = owned[name]
            assert owner == users["tables"] and definer and config and config[0].startswith("search_path="), (name, owned[name])
        code, out, err = cli("ana", "reject", "--yes", T65273_RUN, "--reason", "a duplicate", "--name", "Ana", passphrase=ANA)
        assert code == 0, out + err
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO run_count_deltas (status, n) SELECT 'done', CASE WHEN g %% 2 = 0 THEN 1 ELSE -1 END "
                "FROM generate_series(1, %s) g",
                (FOLD_AT + 2,),
            )
        code, out, err = cli("ana", "runs")
        assert code == 0 and "Traceback" not in err, out + err
        from core.api.queue import queue_columns
        from core.stores.postgres.store import PostgresStore

        theirs = PostgresStore(urls["ana"], summarize=queue_columns)
        assert theirs.counts() == {"handed_to_person": 1}
        with psycopg.connect(admin, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM run_count_deltas").fetchone()[0] == 0  # type: ignore[index]
