"""Choosing a store: ``--store URL``, ``$RESOLVER_STORE`` or ``store`` in the config file, in the
home's precedence; ``sqlite:///FOLDER`` (the home folder) is the default and ``postgresql://…`` the
team store. Values that cannot be taken are one sentence (exit 2), never a traceback, and a
password in a URL is never printed. The team store itself is tested on PostgreSQL in
``tests/conformance`` and ``tests/stores/test_team_store.py``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from core.cli import main
from core.ground.errors import BadArgument
from core.ground.homepath import locate_home, locate_store, parse_store_url
from core.ground.masking import mask_url

from helpers import T65273_RUN, run_process


def test_the_default_is_sqlite_in_the_home_folder():
    where = locate_home()
    assert where.store.url is None and where.store.backend == "sqlite" and where.store.source == "default"


def test_flag_then_environment_then_config(monkeypatch, approver_config_dir):
    (approver_config_dir / "config.toml").write_text('store = "postgresql:///from_config"\n', encoding="utf-8")
    assert locate_store()[0].url == "postgresql:///from_config" and locate_store()[0].source == "config"
    monkeypatch.setenv("RESOLVER_STORE", "postgresql:///from_env")
    assert locate_store()[0].url == "postgresql:///from_env" and locate_store()[0].source == "environment"
    assert locate_store("postgres://h/from_flag")[0].url == "postgres://h/from_flag"
    assert locate_store("postgres://h/from_flag")[0].source == "flag"


def test_a_sqlite_store_names_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("RESOLVER_HOME")
    where = locate_home(None, f"sqlite://{tmp_path}/shop")
    assert where.path == tmp_path / "shop" and where.store.url is None and where.source == "flag"
    assert locate_home(tmp_path / "shop", f"sqlite://{tmp_path}/shop").path == tmp_path / "shop"  # the same folder twice
    with pytest.raises(BadArgument, match="name two different folders"):
        locate_home(tmp_path / "other", f"sqlite://{tmp_path}/shop")


def test_of_a_home_and_a_sqlite_store_the_higher_precedence_is_the_home(tmp_path, monkeypatch):
    monkeypatch.setenv("RESOLVER_HOME", str(tmp_path / "env-home"))
    assert locate_home(None, f"sqlite://{tmp_path}/flag-store").path == tmp_path / "flag-store"
    monkeypatch.setenv("RESOLVER_STORE", f"sqlite://{tmp_path}/env-store")
    assert locate_home(tmp_path / "flag-home").path == tmp_path / "flag-home"
    with pytest.raises(BadArgument, match="name two different folders"):
        locate_home()  # both from the environment


def test_a_relative_sqlite_store_in_the_config_file_is_from_the_files_folder(approver_config_dir, monkeypatch):
    monkeypatch.delenv("RESOLVER_HOME")
    (approver_config_dir / "config.toml").write_text('store = "sqlite://shop"\n', encoding="utf-8")
    assert locate_home().path == approver_config_dir / "shop"


@pytest.mark.parametrize(
    "value, says",
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("runs.sqlite", "is not a URL"),
        ("mysql://h/db", "has the scheme 'mysql'"),
        ("sqlite://", "names no folder"),
        ("postgresql://h/db\x1b[2J", "control character"),
        ("postgresql://h/my db", "a space"),
    ],
)
def test_a_store_that_cannot_be_taken_is_one_sentence(value, says):
    with pytest.raises(BadArgument, match=says):
        parse_store_url(value, "--store")


def test_the_cli_refuses_a_bad_store_with_exit_2_and_writes_nothing(tmp_path, capsys):
    for argv in (["runs"], ["run", "T-65273"], ["doctor"]):
        code = main([*argv, "--home", str(tmp_path / "h"), "--store", "mysql://h/db"])
        out, err = capsys.readouterr()
        assert code == 2 and "has the scheme 'mysql'" in err and "Traceback" not in err, (argv, out, err)
    assert not (tmp_path / "h").exists()


def test_a_password_in_the_url_is_never_printed(tmp_path):
    assert mask_url("postgresql://grace:s3cret@db.larkfield/shop") == "postgresql://grace:***@db.larkfield/shop"
    done = run_process(tmp_path / "h", "doctor", env={"RESOLVER_STORE": "postgresql://grace:s3cret@127.0.0.1:1/none"})
    assert "s3cret" not in done.stdout + done.stderr and "postgresql://grace:***@127.0.0.1:1/none" in done.stdout


def test_a_run_saved_through_a_sqlite_store_url_is_in_that_folder(tmp_path, capsys):
    folder = tmp_path / "shopfolder"
    assert main(["run", "T-65273", "--store", f"sqlite://{folder}"]) == 0
    assert (folder / "runs.sqlite").is_file()
    capsys.readouterr()
    assert main(["show", T65273_RUN, "--store", f"sqlite://{folder}"]) == 0
    assert "119.00" in capsys.readouterr().out


def test_the_lesson_api_follows_a_sqlite_store_choice(tmp_path, monkeypatch):
    from core.trainer.lesson_api import CheckpointStore, World, practice_db

    monkeypatch.delenv("RESOLVER_HOME")
    monkeypatch.setenv("RESOLVER_STORE", f"sqlite://{tmp_path}/lesson")
    assert practice_db() == tmp_path / "lesson" / "larkfield.sqlite"
    store = CheckpointStore()
    assert Path(store.path) == tmp_path / "lesson" / "runs.sqlite"
    assert World().request_refund("manual-1", "LK-507862", 119.00, "RFD-DOUBLE", "PAY-507862-2")["refund_id"] == "RF-4CFEAE8E"
    assert os.environ["RESOLVER_STORE"].startswith("sqlite:")
