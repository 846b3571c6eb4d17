"""The team store chosen by URL: the lesson's Python API and the command line see one store and one
world; the store keeps the kind it was made with, so a practice folder never reaches a shop store;
``resolver doctor`` says which store and checks it."""

from __future__ import annotations

import pytest
from core.cli import main

from pg import fresh_schema


@pytest.fixture
def url():
    with fresh_schema() as made:
        yield made


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_lessons_python_and_its_commands_see_one_team_store(url, monkeypatch, capsys):
    from core.stores.postgres.store import PostgresStore
    from core.trainer.lesson_api import CheckpointStore, World, practice_db
    from resolver.data import load_task
    from resolver.runner import new_state

    monkeypatch.setenv("RESOLVER_STORE", url)
    assert practice_db() == url  # the lesson's PRACTICE_DB is the team store
    refund = World(ticket_id="phone-call").request_refund("manual-1", "LK-507862", 119.00, "RFD-DOUBLE", "PAY-507862-2")
    assert refund["refund_id"] == "RF-4CFEAE8E"
    code, out, _ = _cli(capsys, "changes")
    assert code == 0 and "RF-4CFEAE8E" in out  # the command line's world is the Python's
    store = CheckpointStore()
    assert isinstance(store, PostgresStore)
    store.save(new_state(load_task("T-65273"), "agent", "chat-small", "T-65273-crash-1"))
    code, out, _ = _cli(capsys, "runs")
    assert code == 0 and "T-65273-crash-1" in out


def test_a_practice_folder_never_reaches_a_shop_store(url, tmp_path, monkeypatch, capsys):
    shop, practice = tmp_path / "shop", tmp_path / "practice"
    assert _cli(capsys, "init", "--shop", "--home", str(shop), "--store", url)[0] == 0
    assert _cli(capsys, "run", "T-65273", "--home", str(shop), "--store", url)[0] == 0
    for argv in (("reset", "--all"), ("clock", "set", "2026-10-12T09:00:00-04:00"), ("class", "friday")):
        code, out, err = _cli(capsys, *argv, "--home", str(practice), "--store", url)
        # an empty folder takes the store's kind (shop) and is refused as a shop home; a practice one is told the store's kind
        assert code != 0 and ("was made for a shop home" in err or "is a shop home" in err) and "Traceback" not in err, (
            argv,
            err,
        )
    monkeypatch.setenv("RESOLVER_HOME", str(practice))
    monkeypatch.setenv("RESOLVER_STORE", url)
    from core.ground.errors import ShopRefused
    from core.trainer.lesson_api import CheckpointStore, World

    with pytest.raises(ShopRefused):
        CheckpointStore()
    with pytest.raises(ShopRefused):
        World()
    code, out, _ = _cli(capsys, "runs", "--home", str(shop), "--store", url)
    assert code == 0 and "T-65273-agent-chat-small-1" in out  # the shop's run is still there


def test_a_shop_folder_never_takes_a_practice_store(url, tmp_path, capsys):
    assert _cli(capsys, "run", "T-65273", "--home", str(tmp_path / "p"), "--store", url)[0] == 0
    assert _cli(capsys, "init", "--shop", "--home", str(tmp_path / "s"))[0] == 0
    code, _, err = _cli(capsys, "runs", "--home", str(tmp_path / "s"), "--store", url)
    assert code == 1 and "is a shop home, but the team store" in err and "was made for a practice home" in err


def test_doctor_says_which_store_and_checks_it(url, tmp_path, capsys):
    home = str(tmp_path / "h")
    assert _cli(capsys, "run", "T-65273", "--home", home, "--store", url)[0] == 0
    code, out, _ = _cli(capsys, "doctor", "--home", home, "--store", url)
    assert code == 0, out
    assert "Store: postgresql://" in out and "(from --store)" in out
    assert "team store: the PostgreSQL database" in out and "schema version" in out and "audit: " in out
    assert "runs.sqlite" not in out
    # the postgres extra is checked against its own floor (psycopg's is 3.2.1, not psycopg-pool's 3.2)
    assert "psycopg " in out and "(>= 3.2.1)" in out and "psycopg-pool " in out


def test_doctor_of_a_sqlite_home_does_not_list_the_postgres_extra(tmp_path, capsys):
    home = str(tmp_path / "h")
    assert _cli(capsys, "run", "T-65273", "--home", home)[0] == 0
    code, out, _ = _cli(capsys, "doctor", "--home", home)
    assert code == 0 and "psycopg" not in out and "sqlite-utils " in out


def test_doctor_on_an_unreachable_team_store_is_a_fail_line(tmp_path, capsys):
    (tmp_path / "h").mkdir(mode=0o700)
    code, out, err = _cli(capsys, "doctor", "--home", str(tmp_path / "h"), "--store", "postgresql://nobody:pw@127.0.0.1:1/none")
    assert code == 1 and "FAIL  team store: cannot reach" in out and "pw" not in out + err and "Traceback" not in err
    # a new user's trial: it said "ok kind: practice (recorded in the team store)" of a store it never read
    assert "ok    kind:" not in out and "kind: not known (the team store cannot be read" in out


def test_doctor_on_an_empty_team_store_says_it_has_no_tables_yet(tmp_path, capsys):
    """A new user's trial: a reachable store with no resolver tables was "cannot be read" in the
    kind's line, beside its own "ok" line for the server."""
    with fresh_schema() as url:
        (tmp_path / "h").mkdir(mode=0o700)
        code, out, _ = _cli(capsys, "doctor", "--home", str(tmp_path / "h"), "--store", url)
        assert code == 0 and "no resolver tables yet" in out and "cannot be read" not in out, out


@pytest.mark.parametrize("argv", [("backup", "BK"), ("restore", "BK")])
def test_backup_and_restore_of_a_team_store_home_say_what_to_use(url, tmp_path, capsys, argv):
    """A new user's finding: ``resolver backup`` on a team store said "Backed up … : ." over nothing."""
    home = str(tmp_path / "h")
    assert _cli(capsys, "run", "T-65273", "--home", home, "--store", url)[0] == 0
    (tmp_path / "BK").write_bytes(b"") if argv[0] == "restore" else None
    code, out, err = _cli(capsys, argv[0], str(tmp_path / argv[1]), "--home", home, "--store", url)
    assert code == 1 and "pg_dump" in err and "resolver store copy" in err and "Nothing was written" in err, (out, err)
    if argv[0] == "backup":
        assert not (tmp_path / "BK").exists()
