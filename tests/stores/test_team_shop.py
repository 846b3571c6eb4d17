"""A shop on a team store: what is per shop lives in the store, what is per person on each machine.
Two home folders on one fresh PostgreSQL schema stand for two machines; the second starts as an
empty folder and needs no per-shop file to approve, verify and check. Also: a practice folder never
reaches a shop store (``reset --all``, the lesson's API), and a store whose kind was changed by
hand is refused.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import psycopg
import pytest
from core.contract.audit import HEAD_FILE
from core.engine.approvers import SEAL_FILE
from core.ground.errors import ShopRefused

from helpers import T65273_RUN, shop_cli
from pg import fresh_schema, restore_frozen, with_password

GRACE, ANA = "grace-passphrase", "ana-passphrase"

PER_PERSON = {"resolver.log", ".__resolver.lock", "keys"}
"""What a folder on a team store may hold: the machine's own log, its lock and its approvers' key
files (the config file is elsewhere)."""


@pytest.fixture
def url():
    with fresh_schema() as made:
        yield made


def _machine(root, url, capsys, monkeypatch):
    """The CLI of one machine: its own folder ``root``, the team store at ``url`` by ``--store``."""
    run = shop_cli(root, capsys, monkeypatch)

    def on_store(*argv: str, **kw: str | None) -> tuple[int, str, str]:
        return run(*argv, "--store", url, **kw)

    on_store.root = root  # type: ignore[attr-defined]
    return on_store


def _parts(url: str) -> dict[str, bytes]:
    from core.stores.postgres.database import database

    with database(url).read() as conn:
        return {str(n): bytes(b) for n, b in conn.execute("SELECT name, body FROM shop_parts")}


def test_two_machines_share_one_shop_on_one_team_store(url, tmp_path, capsys, monkeypatch):
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    code, out, err = a("init", "--shop")
    assert code == 0 and out.startswith("Made a shop home on the team store"), err
    code, out, err = a("approvers", "init", passphrase=GRACE)
    assert code == 0, err
    b_root = tmp_path / "b"
    b_root.mkdir(mode=0o700)
    b_root.chmod(0o700)
    b = _machine(b_root, url, capsys, monkeypatch)
    code, out, err = b("approvers", "key", "--name", "Ana", passphrase=ANA)  # on Ana's machine
    assert code == 0, err
    public = out.split("Public key: ")[1].split()[0]
    assert a("approvers", "add", "Ana", "--role", "team_lead", "--public-key", public, owner=GRACE)[0] == 0
    assert a("run", "T-65273")[0] == 0
    assert {p.name for p in a.root.iterdir()} <= PER_PERSON  # the kind, seal and head are in the store
    stored = _parts(url)
    assert set(stored) == {SEAL_FILE, HEAD_FILE}
    assert json.loads(stored[SEAL_FILE])["version"] == 2  # init and add

    code, out, _ = b("show", T65273_RUN)
    assert code == 0 and "Status: waiting_approval" in out
    code, out, err = b("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 0 and "Status: done" in out, err
    assert {p.name for p in b_root.iterdir()} <= PER_PERSON
    head = json.loads(_parts(url)[HEAD_FILE])
    assert head["signer"] == "Ana" and head["length"] == 3  # init, add, the approval

    for machine in (a, b):
        code, out, err = machine("audit", "verify")
        assert code == 0 and "chain whole" in out, err
        code, out, err = machine("doctor")
        assert code == 0, out
        assert "kind: shop (recorded in the team store)" in out and "Approvers: registry verifies." in out
        assert "audit: 3 row(s), chain whole" in out
    assert b("clock", "set", "2026-10-12T09:00:00-04:00")[0] == 4  # a shop's clock is real time, whichever folder
    assert b("reset", "--all")[0] == 4
    assert b("show", T65273_RUN)[1].count("Status: done") == 1


def test_the_head_in_the_store_catches_deleted_rows_from_either_machine(url, tmp_path, capsys, monkeypatch):
    """The signed head is the store's, so a writer who deletes the newest rows (triggers dropped)
    is found by every machine: the head records more rows than the audit has."""
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    a("init", "--shop")
    a("approvers", "init", passphrase=GRACE)
    a("approvers", "add", "Ana", "--role", "team_lead", passphrase=ANA, owner=GRACE)
    a("run", "T-65273")
    from core.stores.postgres.database import database

    with database(url).transaction() as conn:
        conn.execute("ALTER TABLE audit DISABLE TRIGGER audit_no_delete")
        conn.execute("DELETE FROM audit WHERE id = (SELECT MAX(id) FROM audit)")
        conn.execute("ALTER TABLE audit ENABLE TRIGGER audit_no_delete")
    b_root = tmp_path / "b"
    b_root.mkdir(mode=0o700)
    b_root.chmod(0o700)
    b = _machine(b_root, url, capsys, monkeypatch)
    for machine in (a, b):
        code, out, err = machine("audit", "verify")
        assert code == 1 and "audit.head records 2 row(s) but the audit has 1: the newest rows were deleted" in out + err


def test_a_practice_folder_pointed_at_a_shop_store_is_refused(url, tmp_path, capsys, monkeypatch):
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    assert a("init", "--shop")[0] == 0
    assert a("run", "T-65273")[0] == 0
    practice = shop_cli(tmp_path / "lesson", capsys, monkeypatch)
    assert practice("run", "T-90104")[0] == 0  # a practice home in use, on SQLite
    p = _machine(tmp_path / "lesson", url, capsys, monkeypatch)
    for argv in (("reset", "--all"), ("clock", "set", "2026-10-12T09:00:00-04:00"), ("runs",), ("init",)):
        code, out, err = p(*argv)
        assert code != 0 and out == "", argv
        assert "practice home" in err and ("made for a shop home" in err or "never changes kind" in err), (argv, err)
    code, _, err = a("init")
    assert code == 1 and "a home never changes kind" not in err and "was made for a shop home" in err
    assert a("show", T65273_RUN)[1].count("Status: waiting_approval") == 1  # nothing was reset


def test_reset_all_never_reaches_a_shop_store_from_an_empty_folder(url, tmp_path, capsys, monkeypatch):
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    a("init", "--shop")
    a("run", "T-65273")
    b = _machine(tmp_path / "b", url, capsys, monkeypatch)
    code, _, err = b("reset", "--all")
    assert code == 4 and "is a shop home: `reset` runs only in a practice home" in err
    code, _, err = b("manual-refund", "manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    assert code == 4 and "is a shop home" in err
    assert a("show", T65273_RUN)[1].count("Status: waiting_approval") == 1


def test_the_lesson_api_refuses_a_shop_store(url, tmp_path, capsys, monkeypatch):
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    a("init", "--shop")
    monkeypatch.setenv("RESOLVER_STORE", url)
    monkeypatch.setenv("RESOLVER_HOME", str(tmp_path / "lesson"))
    from core.trainer.lesson_api import CheckpointStore, World

    with pytest.raises(ShopRefused, match=r"made for a shop home|is a shop home: the lesson"):
        CheckpointStore()
    with pytest.raises(ShopRefused, match=r"made for a shop home|is a shop home: the lesson"):
        World()
    with pytest.raises(ShopRefused, match=r"made for a shop home|is a shop home: the lesson"):
        World(url)


def test_a_store_whose_kind_was_changed_by_hand_is_refused(url, tmp_path, capsys, monkeypatch):
    """A writer who sets store_meta's kind to practice (to reset, or to pay on an HMAC approval)
    finds the store refused: it holds a shop's seal and signed head."""
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    a("init", "--shop")
    a("approvers", "init", passphrase=GRACE)
    from core.stores.postgres.database import database

    with database(url).transaction() as conn:
        conn.execute("UPDATE store_meta SET value = 'practice' WHERE key = 'kind'")
    b = _machine(tmp_path / "b", url, capsys, monkeypatch)
    for machine in (a, b):
        code, _, err = machine("reset", "--all")
        assert code == 1 and "holds a shop's approvers.json and audit.head but records the kind practice" in err


def test_a_practice_team_store_keeps_its_key_and_the_trainers_clock(url, tmp_path, capsys, monkeypatch):
    """The practice HMAC key and the trainer's clock are the store's: a clock set on one machine
    is the other's, and an approval made on one is executed with the same key on the other."""
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    b = _machine(tmp_path / "b", url, capsys, monkeypatch)
    assert a("clock", "set", "2026-10-09T17:00:00-04:00")[0] == 0
    code, out, _ = b("clock", "show")
    assert code == 0 and out.startswith("Clock: 2026-10-09T17:0") and "(simulated)" in out
    assert b("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")[0] == 0
    run = "T-90104-agent_structured-chat-strong-1"
    assert a("approve", run, "--as", "agent", "--interrupt", "before-write")[0] == 3
    code, out, _ = b("resume", run)
    assert code == 0 and "Status: done" in out
    assert set(_parts(url)) == {"approval.key", "clock.json"}
    assert {p.name for p in (tmp_path / "a").iterdir()} <= PER_PERSON
    assert b("clock", "real")[0] == 0 and "clock.json" not in _parts(url)


FROZEN = Path(__file__).parent.parent / "fixtures" / "team_store_schema_4"


def _restore_schema_4(url: str) -> None:
    """Make the frozen store's tables by migrations 1 to 4 and load its rows."""
    restore_frozen(url, FROZEN, range(1, 5))


def test_a_shop_on_a_schema_4_team_store_moves_its_seal_and_head_into_the_store(url, tmp_path, capsys, monkeypatch):
    """The release before migration 6 kept the seal and the head in the folder of the machine that
    wrote them: the first open of that folder on this release upgrades the store and moves them in,
    and from then on a second machine with an empty folder decides and verifies."""
    from core.stores.postgres.schema import ALL

    _restore_schema_4(url)
    shutil.copytree(FROZEN / "home", tmp_path / "a")
    (tmp_path / "a").chmod(0o700)
    for path in (tmp_path / "a").iterdir():
        path.chmod(0o600)
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    code, out, err = a("audit", "verify")
    assert code == 0 and "Audit: 2 row(s), chain whole" in out, err
    assert _kept_counts(url) == {"waiting_approval": 1}  # migration 7 counted the run already there
    stored = _parts(url)
    for name in (SEAL_FILE, HEAD_FILE):
        assert stored[name] == (FROZEN / "home" / name).read_bytes()
    b_root = tmp_path / "b"
    b_root.mkdir(mode=0o700)
    b = _machine(b_root, url, capsys, monkeypatch)
    assert b("refresh", T65273_RUN, "--name", "Ana", passphrase="ana-passphrase")[0] == 0  # its evidence is old by now
    code, out, err = b("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase="ana-passphrase")
    assert code == 0 and "Status: done" in out, err
    for machine in (a, b):
        code, out, err = machine("audit", "verify")
        assert code == 0 and "Audit: 4 row(s), chain whole" in out, err
    with psycopg.connect(url) as conn:
        assert [r[0] for r in conn.execute("SELECT version FROM resolver_migrations ORDER BY 1")] == sorted(ALL)
    assert _kept_counts(url) == {"done": 1}  # the approval moved it, counted by the counts' triggers


def _kept_counts(url: str) -> dict[str, int]:
    """The queue's counts as the store keeps them: ``run_counts`` (migration 7) and the deltas its
    triggers append since migration 19."""
    with psycopg.connect(url) as conn:
        return {
            s: int(n)
            for s, n in conn.execute(
                "SELECT status, sum(n) FROM (SELECT status, n FROM run_counts UNION ALL "
                "SELECT status, n FROM run_count_deltas) c GROUP BY 1 HAVING sum(n) <> 0"
            )
        }


def test_approvers_init_on_a_team_store_names_the_store_with_its_password_masked(url, tmp_path, capsys, monkeypatch):
    """A new user's trial: ``approvers init`` on a team store said "Made the approvers registry
    of /the/folder", which holds none of it; it names the store as ``doctor`` prints it."""
    from core.ground.masking import mask_url

    with psycopg.connect(url) as conn:
        user = conn.execute("SELECT current_user").fetchone()[0]  # type: ignore[index]
    secret = with_password(url, "s3cret-pw", user)  # trust auth: the password is not checked
    a = _machine(tmp_path / "a", secret, capsys, monkeypatch)
    assert a("init", "--shop")[0] == 0
    shown = mask_url(secret)
    assert "s3cret-pw" not in shown and f"Store: {shown} (from --store)" in a("doctor")[1]
    code, out, err = a("approvers", "init", passphrase=GRACE)
    assert code == 0 and out.startswith(f"Made the approvers registry of the team store {shown}; owner Grace"), err
    assert str(tmp_path) not in out and "s3cret-pw" not in out
    code, out, err = a("approvers", "init", passphrase=GRACE)
    assert code == 1 and err.startswith(f"The team store {shown} already has an approvers registry"), err
    assert "s3cret-pw" not in err
