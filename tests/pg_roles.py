"""A shop on a team store with role separation, shared by the store's tests of it
(``tests/stores/test_pg_roles.py``) and the app's (``tests/tui/test_tui_pg_roles.py``): its
database users, the shop set up on them, and the two reads the tests check a refusal by.

Each test module makes its own fixtures from :func:`role_users` and :func:`role_shop` (two lines
each), so no test module imports another's fixtures and every fixture a test asks for is
defined in its own module.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from helpers import T65273_RUN, shop_cli
from pg import database_roles, fresh_schema

GRACE, ANA, BOB = "grace-passphrase", "ana-passphrase", "bob-passphrase"
"""The passphrases of the shop's approvers: Grace (owner), Ana (team lead), Bob (agent)."""


def as_user(url: str, user: str) -> str:
    """``url`` (a libpq URL choosing a schema) connecting as ``user`` instead."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, f"{user}@{host}", parts.path, parts.query, parts.fragment))


@contextmanager
def role_users() -> Iterator[dict[str, str]]:
    """Seven roles with unique names (tables' owner, owner, runner, executor, Ana, Bob, and a
    stranger the setup names nowhere), by kind, dropped after; skips the test with the reason
    when the connecting role may not create roles (:func:`pg.database_roles`)."""
    with database_roles("r25", ("tables", "owner", "runner", "executor", "ana", "bob", "stranger")) as made:
        yield made


@contextmanager
def role_shop(users: dict[str, str], tmp_path: Path, capsys: Any, monkeypatch: Any) -> Iterator[tuple[Any, dict[str, str]]]:
    """A shop on a fresh schema: registry Grace (owner), Ana (team lead), Bob (agent); T-65273
    waiting; role separation set up by the administrator's URL with the roles ``users``
    (:func:`role_users`). Yields ``(cli, urls)``: ``cli(kind, *argv, **passphrases)`` runs the
    CLI connected as that kind's user (``cli.root`` is the home folder), ``urls`` each kind's
    URL and ``admin``'s."""
    with fresh_schema() as admin:
        run = shop_cli(tmp_path / "home", capsys, monkeypatch)
        urls = {kind: as_user(admin, name) for kind, name in users.items()} | {"admin": admin}

        def cli(kind: str, *argv: str, **kw: str | None) -> tuple[int, str, str]:
            return run(*argv, "--store", urls[kind], **kw)

        cli.root = run.root  # type: ignore[attr-defined]
        assert cli("admin", "init", "--shop")[0] == 0
        assert cli("admin", "approvers", "init", passphrase=GRACE)[0] == 0
        for name, role, phrase in (("Ana", "team_lead", ANA), ("Bob", "agent", BOB)):
            code, _, err = cli("admin", "approvers", "add", name, "--role", role, passphrase=phrase, owner=GRACE)
            assert code == 0, err
        assert cli("admin", "run", "T-65273")[0] == 0
        code, out, err = cli(
            "admin", "store", "roles", "setup", "--tables-role", users["tables"], "--owner-user", users["owner"],
            "--runner-user", users["runner"], "--executor-user", users["executor"],
            "--approver", f"Ana={users['ana']}", "--approver", f"Bob={users['bob']}",
        )  # fmt: skip
        assert code == 0, err
        assert f"approver Bob is database user {users['bob']}" in out
        yield cli, urls


def refunds_paid(admin: str) -> int:
    """The rows of the world's ``refunds`` table, read as the administrator (``admin``'s URL)."""
    with psycopg.connect(admin, autocommit=True) as conn:
        return int(conn.execute("SELECT count(*) FROM refunds").fetchone()[0])  # type: ignore[index]


def run_status(admin: str) -> str:
    """T-65273's run's status, read as the administrator (``admin``'s URL)."""
    with psycopg.connect(admin, autocommit=True) as conn:
        return str(conn.execute("SELECT status FROM runs WHERE run_id = %s", (T65273_RUN,)).fetchone()[0])  # type: ignore[index]
