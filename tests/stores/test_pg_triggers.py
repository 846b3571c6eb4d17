"""One missing or altered trigger of the team store locks nobody out.

Observed before: on a store with role separation, dropping one audit trigger locked every
approver's database user out of every command, ``runs`` and ``audit verify`` included, with a
sentence about their rights that never named the trigger (the store's open tried to create it
again, which only the tables' role may). Now ``doctor`` names each expected trigger that is
missing or altered, a write is refused with a sentence naming it, and reads and ``audit verify``
still work.
"""

from __future__ import annotations

import psycopg
import pytest

from helpers import T65273_RUN, shop_cli
from pg import database_roles, fresh_schema

GRACE, ANA = "grace-passphrase", "ana-passphrase"


def _as_user(url: str, user: str) -> str:
    """``url`` (choosing a schema) connecting as ``user``."""
    return url.replace("postgresql://", f"postgresql://{user}@", 1) if "@" not in url.split("/")[2] else url


@pytest.fixture
def users():
    """Five roles with unique names (tables' owner, owner, runner, executor, Ana), dropped after."""
    with database_roles("r38", ("tables", "owner", "runner", "executor", "ana")) as made:
        yield made


@pytest.fixture
def shop(users, tmp_path, capsys, monkeypatch):
    """A shop on a fresh schema with role separation, T-65273 waiting. Yields ``(cli, urls)``:
    ``cli(kind, *argv, **passphrases)`` runs the CLI connected as that kind's user."""
    with fresh_schema() as admin:
        run = shop_cli(tmp_path / "home", capsys, monkeypatch)
        urls = {kind: _as_user(admin, name) for kind, name in users.items()} | {"admin": admin}

        def cli(kind: str, *argv: str, **kw: str | None) -> tuple[int, str, str]:
            return run(*argv, "--store", urls[kind], **kw)

        assert cli("admin", "init", "--shop")[0] == 0
        assert cli("admin", "approvers", "init", passphrase=GRACE)[0] == 0
        code, _, err = cli("admin", "approvers", "add", "Ana", "--role", "team_lead", passphrase=ANA, owner=GRACE)
        assert code == 0, err
        assert cli("admin", "run", "T-65273")[0] == 0
        code, _, err = cli(
            "admin", "store", "roles", "setup", "--tables-role", users["tables"], "--owner-user", users["owner"],
            "--runner-user", users["runner"], "--executor-user", users["executor"], "--approver", f"Ana={users['ana']}",
        )  # fmt: skip
        assert code == 0, err
        yield cli, urls


def _forget_connections() -> None:
    """Close this process's pools, as a new command's process starts without them."""
    from core.stores.postgres.database import _databases, forget

    for url in list(_databases):
        forget(url)


def _status(admin: str) -> str:
    with psycopg.connect(admin, autocommit=True) as conn:
        return str(conn.execute("SELECT status FROM runs WHERE run_id = %s", (T65273_RUN,)).fetchone()[0])  # type: ignore[index]


def _reject(cli) -> tuple[int, str, str]:
    return cli("ana", "reject", T65273_RUN, "--reason", "not now", "--name", "Ana", "--yes", passphrase=ANA)


def test_a_dropped_audit_trigger_is_named_and_refuses_writes_while_reads_work(shop):
    cli, urls = shop
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        conn.execute("DROP TRIGGER audit_no_update ON audit")
    _forget_connections()
    code, out, err = cli("ana", "runs")
    assert code == 0 and T65273_RUN in out, err
    code, out, err = cli("ana", "show", T65273_RUN)
    assert code == 0 and "119.00" in out, err
    code, out, err = cli("ana", "audit", "verify")
    assert "audit_no_update" in out + err and "Traceback" not in err, (code, out, err)
    code, out, err = cli("ana", "doctor")
    assert code == 1 and "FAIL  team store: trigger audit_no_update is missing from audit; every write is refused" in out, out
    code, out, err = _reject(cli)
    assert code == 4 and "audit_no_update is missing from audit" in err and "nothing was written" in err, (code, out, err)
    assert "Traceback" not in err and _status(urls["admin"]) == "waiting_approval"
    _forget_connections()
    code, out, err = cli("admin", "doctor")  # the administrator's user may make it again: it does, and says so
    assert "warn  team store: trigger audit_no_update was missing or altered; made again" in out, out
    _forget_connections()
    code, out, err = cli("ana", "doctor")
    assert "ok    team store: every trigger as the schema makes it" in out and "audit_no_update" not in out, out
    code, out, err = _reject(cli)
    assert code == 0 and _status(urls["admin"]) == "handed_to_person", (code, out, err)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("ALTER TABLE runs DISABLE TRIGGER runs_counted_insert", "runs_counted_insert is disabled on runs"),
        (
            "CREATE OR REPLACE FUNCTION resolver_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN RETURN NEW; END $$",
            "audit_no_delete is altered: its function resolver_audit_append_only is not the one the schema makes",
        ),
        ("DROP TRIGGER runs_guard ON runs", "runs_guard is missing from runs"),
    ],
)
def test_a_disabled_or_altered_trigger_is_named_and_refuses_writes(shop, change, named):
    cli, urls = shop
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        conn.execute(change)
    _forget_connections()
    code, out, err = cli("ana", "doctor")
    assert code == 1 and f"FAIL  team store: trigger {named}; every write is refused" in out, out
    code, out, err = cli("ana", "runs")
    assert code == 0 and T65273_RUN in out, err
    code, out, err = _reject(cli)
    assert code == 4 and named in err and _status(urls["admin"]) == "waiting_approval", (code, out, err)


def test_every_trigger_of_a_fresh_store_is_as_the_schema_makes_it(shop):
    from core.stores.postgres.triggers import expected_triggers, trigger_problems

    _, urls = shop
    with psycopg.connect(urls["ana"], autocommit=True) as conn:
        expected = expected_triggers(conn)
        assert trigger_problems(conn) == {}
    assert {"audit_no_update", "audit_no_delete", "audit_no_truncate", "runs_counted_insert", "runs_guard"} <= set(expected)
    with psycopg.connect(urls["admin"], autocommit=True) as conn:
        held = {r[0] for r in conn.execute("SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                                            "WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal")}  # fmt: skip
    assert set(expected) == held
