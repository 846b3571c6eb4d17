"""A shop home that cannot be downgraded (issue 28): each row of the issue's table replayed as
written, in a shop home with the owner Grace, the team lead Tomás and the agent Bot, T-65273
waiting (119.00 CAD, team lead or above); each test counts the refunds the world holds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from core import signing
from core.cli import main
from core.errors import ResolverError
from core.homekind import home_kind

from helpers import T65273_RUN, T90104_RUN, run_process

GRACE, TOMAS, BOT = "grace-passphrase", "tomas-passphrase", "bot-passphrase"


@pytest.fixture
def shop(tmp_path, capsys, monkeypatch):
    """A shop home (Grace owner, Tomás team lead, Bot agent) with T-65273 waiting.

    ``shop(*argv, passphrase=..., owner=...)`` runs the CLI in this process with those
    passphrases in the environment and returns ``(code, out, err)``; ``shop.root`` is the home."""
    root = tmp_path / "shop"
    monkeypatch.delenv(signing.PASSPHRASE_ENV, raising=False)
    monkeypatch.delenv(signing.OWNER_PASSPHRASE_ENV, raising=False)

    def run(*argv: str, passphrase: str | None = None, owner: str | None = None) -> tuple[int, str, str]:
        for env, value in ((signing.PASSPHRASE_ENV, passphrase), (signing.OWNER_PASSPHRASE_ENV, owner)):
            if value is None:
                monkeypatch.delenv(env, raising=False)
            else:
                monkeypatch.setenv(env, value)
        code = main([*argv, "--home", str(root)])
        out, err = capsys.readouterr()
        return code, out, err

    assert run("init", "--shop")[0] == 0
    assert run("approvers", "init", passphrase=GRACE)[0] == 0
    assert run("approvers", "add", "Tomás", "--role", "team_lead", passphrase=TOMAS, owner=GRACE)[0] == 0
    assert run("approvers", "add", "Bot", "--role", "agent", passphrase=BOT, owner=GRACE)[0] == 0
    assert run("run", "T-65273")[0] == 0
    run.root = root
    return run


def refunds(root: Path) -> int:
    """How many refunds the practice world holds (the money moved)."""
    with sqlite3.connect(root / "larkfield.sqlite") as conn:
        return conn.execute("SELECT COUNT(*) FROM refunds").fetchone()[0]


def _clean_env() -> dict[str, str]:
    return {signing.PASSPHRASE_ENV: "", signing.OWNER_PASSPHRASE_ENV: ""}


# -- row 1: a downgrade to a practice home ---------------------------------------------------------


@pytest.mark.parametrize("change", ["removed", "practice"])
def test_a_shop_home_without_its_home_json_stays_a_shop_and_pays_nothing(shop, change):
    kind_file = shop.root / "home.json"
    if change == "removed":
        kind_file.unlink()  # rm HOME/home.json
    else:
        kind_file.write_text('{"kind": "practice"}', encoding="utf-8")
    for argv in (
        ("approve", T65273_RUN, "--as", "grace", "--name", "Grace"),
        ("manual-refund", "manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2"),
        ("reset", "--all"),
        ("runs",),
        ("show", T65273_RUN),
        ("audit", "verify"),
    ):
        done = run_process(shop.root, *argv, env=_clean_env())
        assert done.returncode == 1, (argv, done.stdout, done.stderr)
        said = "is missing" if change == "removed" else "says practice"
        assert done.stderr.startswith(f"{shop.root} is a shop home (it holds approvers.sqlite, approvers.json, audit.head)"), argv
        assert f"its home.json {said}: a shop home stays one" in done.stderr and done.stderr.count("\n") == 1, argv
    assert refunds(shop.root) == 0
    doctor = run_process(shop.root, "doctor")
    assert doctor.returncode == 1 and f"FAIL  {shop.root} is a shop home" in doctor.stdout, doctor.stdout
    # the owner puts it back; the queue is whole and Tomás approves with his key
    assert shop("init", "--shop")[:2] == (0, f"{shop.root} is a shop home again: home.json says so.\n")
    assert home_kind(shop.root) == "shop"
    code, _, err = shop("approve", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)
    assert code == 0, err
    assert refunds(shop.root) == 1


def test_signed_audit_rows_alone_make_a_folder_a_shop(shop):
    """Every shop file removed but runs.sqlite: its Ed25519-signed rows still say shop."""
    assert shop("approve", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)[0] == 0
    assert shop("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")[0] == 0
    for name in ("home.json", "approvers.sqlite", "approvers.json", "audit.head"):
        (shop.root / name).unlink()
    with pytest.raises(ResolverError, match=r"it holds Ed25519-signed audit rows"):
        home_kind(shop.root)
    done = run_process(shop.root, "approve", T90104_RUN, "--as", "grace")
    assert done.returncode == 1 and "a shop home stays one" in done.stderr
    assert refunds(shop.root) == 1  # Tomás's 119.00, nothing more


def test_a_practice_home_stays_a_practice_home(home):
    """A practice home holds none of a shop's files and no signed row: no home.json is needed."""
    home.run("T-65273")
    assert home_kind(home.root) == "practice" and not (home.root / "home.json").exists()


def test_a_shop_home_resumes_a_signed_run_without_approval_key(shop):
    """Issue 28: a shop home never needs approval.key: Tomás's approval, interrupted before the
    write, is resumed after approval.key is gone."""
    code, _, err = shop("approve", T65273_RUN, "--name", "Tomás", "--interrupt", "before-write", passphrase=TOMAS)
    assert code == 3, err
    key = shop.root / "approval.key"
    if key.exists():
        key.unlink()
    code, _, err = shop("resume", T65273_RUN)
    assert code == 0, err
    assert refunds(shop.root) == 1
