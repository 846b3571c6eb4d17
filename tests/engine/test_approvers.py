"""Approvers who can prove who they are: the registry, signed decisions, the executor's checks
before every write, and the tamper-evident audit. Every promise of it is a test here (the app's
passphrase dialog is in tests/tui/test_tui_passphrase.py)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from core import cli as cli_module
from core.api.home import Home
from core.cli import main
from core.contract.audit import GENESIS, row_hash
from core.engine import signing
from core.engine.approval import plan_operations, sign
from core.engine.approvers import Registry
from core.engine.executor import REDECIDE
from core.ground.state import Approval
from core.stores.common import _HEADER_EXCLUDE

from helpers import T65273_RUN, copy_frozen_home, shop_cli

GRACE, ANA, BOT = "grace-passphrase", "ana-passphrase", "bot-passphrase"


@pytest.fixture
def shop(tmp_path, capsys, monkeypatch):
    """A shop home with the owner Grace, a team lead Ana and an agent Bot; T-65273 waits.

    ``shop(*argv, passphrase=..., owner=...)`` runs the CLI with those passphrases in the
    environment (as a script would) and returns ``(code, out, err)``."""
    root = tmp_path / "shop"
    run = shop_cli(root, capsys, monkeypatch)

    assert run("init", "--shop")[0] == 0
    return run


@pytest.fixture
def staffed(shop):
    code, out, err = shop("approvers", "init", passphrase=GRACE)
    assert code == 0, err
    shop.init_out = out
    assert shop("approvers", "add", "Ana", "--role", "team_lead", passphrase=ANA, owner=GRACE)[0] == 0
    assert shop("approvers", "add", "Bot", "--role", "agent", passphrase=BOT, owner=GRACE)[0] == 0
    assert shop("run", "T-65273")[0] == 0
    return shop


def _changes(root: Path) -> int:
    with sqlite3.connect(root / "larkfield.sqlite") as conn:
        return conn.execute("SELECT COUNT(*) FROM refunds").fetchone()[0]


def _registry_rows(root: Path) -> list[dict]:
    """The registry's own audit rows (each change of the registry, signed by the owner)."""
    conn = sqlite3.connect(root / "runs.sqlite")
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("SELECT * FROM audit WHERE run_id = '(approvers)' ORDER BY id")]
    conn.close()
    return rows


def _audit(root: Path) -> list[dict]:
    """The audit's rows of runs (decisions and refusals), without the registry's own rows."""
    conn = sqlite3.connect(root / "runs.sqlite")
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute("SELECT * FROM audit WHERE run_id != '(approvers)' ORDER BY id")]
    conn.close()
    return rows


# -- the registry ----------------------------------------------------------------------------------


def test_approvers_init_works_only_in_a_shop_home_and_says_how_to_make_one(cli):
    code, out, err = cli("approvers", "init")
    assert code == 4 and out == ""  # refused (docs/command-line.md, "Exit codes")
    assert "is a practice home: `approvers` works only in a shop home" in err and "resolver init --shop --home DIR" in err


def test_init_prints_the_fingerprint_and_a_recovery_code_and_keeps_keys_encrypted(staffed):
    out = staffed.init_out
    fingerprint = Registry(staffed.root).fingerprint()
    assert f"Owner key fingerprint: {fingerprint}" in out and "Recovery code (shown once): " in out
    code, listing, _ = staffed("approvers", "list")
    assert code == 0 and listing.splitlines()[0] == f"Owner key: {fingerprint}"
    assert [line.split()[:2] for line in listing.splitlines()[1:]] == [["Grace", "grace"], ["Ana", "team_lead"], ["Bot", "agent"]]
    for entry in Registry(staffed.root).entries():
        assert entry.private_key.startswith("resolver-scrypt-v1$")  # scrypt, not the older PBKDF2
    for name in ("approvers.sqlite", "approvers.json", "audit.head"):
        assert (staffed.root / name).stat().st_mode & 0o077 == 0, name
    assert staffed("approvers", "init", passphrase=GRACE)[0] == 1  # once only


def test_add_needs_the_owners_passphrase(staffed):
    code, _, err = staffed("approvers", "add", "Eve", "--role", "grace", passphrase="eve-passphrase", owner="not-graces")
    assert code == 1 and "Wrong passphrase for the owner Grace: nothing changed." in err
    assert [e.name for e in Registry(staffed.root).entries()] == ["Grace", "Ana", "Bot"]


def test_a_shop_home_refuses_every_decision_until_its_registry_exists(shop):
    shop("run", "T-65273")
    code, _, err = shop("approve", "--yes", T65273_RUN, "--name", "Grace", passphrase=GRACE)
    assert code == 4 and "no approvers registry yet" in err
    assert _changes(shop.root) == 0


# -- --as refused, a name without its passphrase refused -------------------------------------------


def test_approve_as_grace_is_refused_in_a_shop_home(staffed):
    code, out, err = staffed("approve", "--yes", T65273_RUN, "--as", "grace", passphrase=GRACE)
    assert code == 4 and out == "" and err.startswith("--as is refused in a shop home")
    code, _, err = staffed("reject", "--yes", T65273_RUN, "--as", "grace", "--reason", "no", passphrase=GRACE)
    assert code == 4 and err.startswith("--as is refused in a shop home")
    assert _changes(staffed.root) == 0


def test_approve_by_name_without_graces_passphrase_is_refused(staffed, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, _, err = staffed("approve", "--yes", T65273_RUN, "--name", "Grace")
    assert code == 1 and "No passphrase" in err
    code, _, err = staffed("approve", "--yes", T65273_RUN, "--name", "Grace", passphrase=ANA)
    assert code == 4 and err == "Wrong passphrase for Grace: nothing was decided.\n"
    assert staffed("show", T65273_RUN)[1].count("Status: waiting_approval") == 1
    assert _changes(staffed.root) == 0 and _audit(staffed.root) == []


def test_the_role_comes_from_the_registry(staffed):
    code, _, err = staffed("approve", "--yes", T65273_RUN, "--name", "Bot", passphrase=BOT)
    assert code == 4 and err == f"You are agent: run {T65273_RUN} needs team lead or above.\n"


def test_a_team_lead_approves_with_a_signed_decision_and_the_audit_verifies(staffed):
    code, out, err = staffed("approve", "--yes", T65273_RUN, "--name", "ana", passphrase=ANA)
    assert code == 0, err
    assert "approved by Ana (role team lead)" in out and "Status: done" in out
    assert _changes(staffed.root) == 1
    [row] = _audit(staffed.root)
    registry_rows = _registry_rows(staffed.root)  # init, add Ana, add Bot, before it
    assert [r["decision"] for r in registry_rows] == ["registry:init", "registry:add", "registry:add"]
    assert registry_rows[0]["prev"] == GENESIS
    assert (row["decision"], row["role"], row["name"], row["prev"]) == (
        "approve",
        "team_lead",
        "Ana",
        row_hash(registry_rows[-1]),
    )
    state = Home(staffed.root).queue.load(T65273_RUN)
    assert state.approval is not None and state.approval.signature == signing.PREFIX + row["sig"]
    head = json.loads((staffed.root / "audit.head").read_text())
    assert head["length"] == 4 and head["signer"] == "Ana"
    assert staffed("audit", "verify") == (0, f"Audit: 4 row(s), chain whole, latest {head['hash'][:16]}.\n", "")


def test_the_passphrase_comes_from_a_file_descriptor(staffed):
    read, write = os.pipe()
    os.write(write, (ANA + "\n").encode())
    os.close(write)
    try:
        code, out, err = staffed("approve", "--yes", T65273_RUN, "--name", "Ana", "--passphrase-fd", str(read))
    finally:
        os.close(read)
    assert code == 0, err
    assert "Status: done" in out


def test_a_signed_rejection_is_audited_and_verifies(staffed):
    # a reject needs the role the proposal needs: T-65273's 119.00 needs a team lead
    code, out, _ = staffed("reject", "--yes", T65273_RUN, "--name", "Ana", "--reason", "the customer called back", passphrase=ANA)
    assert code == 0 and "Status: handed_to_person" in out  # a reject did what it was asked: exit 0
    [row] = _audit(staffed.root)
    assert row["decision"] == "reject" and row["sig"] and row["detail"] == "the customer called back"
    assert staffed("audit", "verify")[0] == 0


# -- a forged approval executes nothing ------------------------------------------------------------


def _forge(root: Path, signature: str | None = None) -> None:
    """Write an approval by Grace into the waiting run with SQL, as an attacker holding the
    shared HMAC key would: the header's JSON and the status column, no audit row."""
    home = Home(root)
    state = home.queue.load(T65273_RUN)
    at = home.clock.now()
    digest = state.proposal.digest
    sig = signature or sign(home.approval_key(), state.run_uid, digest, "grace", "Grace", at)
    state.approval = Approval(role="grace", name="Grace", at=at, digest=digest, signature=sig)
    state.status = "executing"
    state.operations = plan_operations(state)
    with sqlite3.connect(root / "runs.sqlite") as conn:
        conn.execute(
            "UPDATE runs SET state = ?, status = 'executing' WHERE run_id = ?",
            (state.model_dump_json(exclude=_HEADER_EXCLUDE), T65273_RUN),
        )


def test_an_approval_forged_by_sql_with_a_valid_hmac_executes_nothing_and_the_audit_says_why(staffed):
    _forge(staffed.root)
    code, out, _ = staffed("resume", T65273_RUN)
    assert code == 0 and "Status: waiting_approval" in out
    assert _changes(staffed.root) == 0
    [row] = _audit(staffed.root)
    assert row["decision"] == "refused" and row["name"] == "Grace"
    assert "execution refused: the approval was not signed by an approver of this shop home" in row["detail"]
    trace = staffed("trace", T65273_RUN)[1]
    assert "back_to_waiting" in trace and "nothing written" in trace
    # the run waits again and a real approver can decide it
    assert staffed("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)[0] == 0
    assert _changes(staffed.root) == 1
    assert staffed("audit", "verify")[0] == 0  # the system's refused row is chained, unsigned, and accepted


def test_a_forged_ed25519_looking_approval_without_an_audit_row_goes_to_a_person(staffed):
    _forge(staffed.root, signature=signing.PREFIX + "00" * 64)
    code, out, _ = staffed("resume", T65273_RUN)
    assert code == 5 and "Status: handed_to_person" in out  # handed to a person (exit 5)
    assert _changes(staffed.root) == 0
    assert "no audit row records this approval" in _audit(staffed.root)[-1]["detail"]


def test_the_redecide_marker_is_the_executors(staffed):
    assert signing.REDECIDE == REDECIDE


# -- revoked after deciding, before execution ------------------------------------------------------


def test_an_approver_revoked_after_deciding_but_before_execution_writes_nothing(staffed):
    code, out, _ = staffed("approve", "--yes", T65273_RUN, "--name", "Ana", "--interrupt", "before-write", passphrase=ANA)
    assert code == 3
    code, out, err = staffed("approvers", "revoke", "Ana", owner=GRACE)
    assert code == 0 and out.startswith("Revoked Ana at ")
    code, out, _ = staffed("resume", T65273_RUN)
    assert code == 5 and "Status: handed_to_person" in out  # handed to a person (exit 5)
    assert _changes(staffed.root) == 0
    assert "Ana was revoked at" in _audit(staffed.root)[-1]["detail"]
    code, _, err = staffed("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 4 and "Ana was revoked at" in err


# -- a registry entry edited by SQL ----------------------------------------------------------------


def test_a_registry_entry_edited_by_sql_is_detected_and_refused(staffed):
    with sqlite3.connect(staffed.root / "approvers.sqlite") as conn:
        conn.execute("UPDATE approvers SET role = 'grace' WHERE name = 'Bot'")
    code, _, err = staffed("approve", "--yes", T65273_RUN, "--name", "Bot", passphrase=BOT)
    assert (
        code == 4
        and "The approvers registry does not verify" in err
        and "the entry of Bot is not signed by the owner's key" in err
    )
    code, _, err = staffed("approvers", "list")
    assert code == 1 and "does not verify" in err
    assert _changes(staffed.root) == 0


def test_an_approval_whose_approver_was_raised_by_sql_before_execution_is_refused(staffed):
    assert staffed("approve", "--yes", T65273_RUN, "--name", "Ana", "--interrupt", "before-write", passphrase=ANA)[0] == 3
    with sqlite3.connect(staffed.root / "approvers.sqlite") as conn:
        conn.execute("UPDATE approvers SET role = 'grace' WHERE name = 'Ana'")
    assert "Status: handed_to_person" in staffed("resume", T65273_RUN)[1]
    assert _changes(staffed.root) == 0


def test_an_un_revoke_replayed_with_sql_does_not_verify(staffed):
    old = {e.name: e for e in Registry(staffed.root).entries()}["Bot"]
    assert staffed("approvers", "revoke", "Bot", owner=GRACE)[0] == 0
    with sqlite3.connect(staffed.root / "approvers.sqlite") as conn:  # the older, validly signed entry back
        conn.execute("UPDATE approvers SET revoked_at = NULL, signature = ? WHERE name = 'Bot'", (old.signature,))
    assert any("not the one the owner sealed" in p for p in Registry(staffed.root).problems())


def test_the_recovery_code_gives_the_owner_a_new_passphrase_once(staffed):
    code = staffed.init_out.split("Recovery code (shown once): ")[1].split()[0]
    registry = Registry(staffed.root)
    new_code = registry.recover(code, "a-new-grace-passphrase")
    assert new_code != code
    assert registry.unlock("Grace", "a-new-grace-passphrase").role == "grace"
    with pytest.raises(Exception, match="Wrong recovery code"):
        registry.recover(code, "another-passphrase")


# -- the audit finds a deleted, edited or inserted row, a dropped trigger --------------------------


@pytest.fixture
def audited(staffed):
    """Two decisions in the audit: Ana approved T-65273, Bot rejected a second run."""
    assert staffed("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)[0] == 0
    assert staffed("run", "T-90104")[0] == 0
    assert (
        staffed("reject", "--yes", "T-90104-agent-chat-small-1", "--name", "Bot", "--reason", "wrong order", passphrase=BOT)[0]
        == 0
    )
    assert staffed("audit", "verify")[0] == 0
    return staffed


def _sql(root: Path, *statements: str) -> None:
    with sqlite3.connect(root / "runs.sqlite") as conn:
        for s in statements:
            conn.execute(s)


def test_a_dropped_trigger_is_found(audited):
    _sql(audited.root, "DROP TRIGGER audit_no_update")
    code, _, err = audited("audit", "verify")
    assert code == 1 and "the append-only trigger audit_no_update is missing" in err


def test_an_edited_row_is_found(audited):
    _sql(audited.root, "DROP TRIGGER audit_no_update", "UPDATE audit SET name = 'Grace', role = 'grace' WHERE id = 4")
    code, _, err = audited("audit", "verify")
    assert code == 1 and "row 5 (T-90104-agent-chat-small-1, reject) does not follow the row before it" in err
    assert "row 4 (T-65273-agent-chat-small-1, approve): Grace" in err or "its signature does not verify" in err


def test_a_deleted_row_in_the_middle_is_found(audited):
    _sql(audited.root, "DROP TRIGGER audit_no_delete", "DELETE FROM audit WHERE id = 4")
    code, _, err = audited("audit", "verify")
    assert code == 1 and "does not follow the row before it" in err


def test_deleting_the_newest_row_is_found_by_the_head(audited):
    _sql(
        audited.root,
        "DROP TRIGGER audit_no_delete",
        "DELETE FROM audit WHERE id = 5",
        "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END",
    )
    code, _, err = audited("audit", "verify")
    assert code == 1 and "audit.head records 5 row(s) but the audit has 4: the newest rows were deleted" in err


def test_an_inserted_row_with_a_recomputed_chain_is_found_by_its_signature(audited):
    rows = _audit(audited.root)
    prev = row_hash(rows[-1])
    _sql(
        audited.root,
        "INSERT INTO audit (run_id, decision, role, name, digest, at, detail, run_uid, prev, sig) VALUES "
        f"('X', 'approve', 'grace', 'Grace', 'd', '2026-11-29T10:00:00-05:00', '', 'u', '{prev}', '{'00' * 64}')",
    )
    code, _, err = audited("audit", "verify")
    assert code == 1 and "row 6 (X, approve): its signature does not verify" in err


def test_doctor_shows_the_owner_fingerprint_the_registry_and_the_audit(audited):
    code, out, _ = audited("doctor")
    fp = Registry(audited.root).fingerprint()
    assert code == 0
    assert f"Owner key: {fp} (compare with the one written down at `approvers init`)" in out
    assert "Approvers: registry verifies." in out
    assert "audit: 5 row(s), chain whole" in out


# -- practice homes --------------------------------------------------------------------------------


def test_a_practice_home_decides_with_as_and_chains_its_audit(cli):
    cli("run", "T-65273")
    assert cli("approve", "--yes", T65273_RUN)[0] == 1  # who decides must be said
    code, out, _ = cli("approve", "--yes", T65273_RUN, "--as", "team_lead", "--name", "Grace")
    assert code == 0 and "Status: done" in out
    assert cli("audit", "verify") == (0, f"Audit: 1 row(s), chain whole, latest {row_hash(_audit(cli.home)[0])[:16]}.\n", "")
    assert not (cli.home / "audit.head").exists()


def test_the_0_1_0_home_keeps_its_audit_rows_as_an_unchained_prefix(tmp_path, capsys):
    root = copy_frozen_home(tmp_path / "old")
    before = len(_audit(root))
    assert main(["audit", "verify", "--home", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"Audit: {before} row(s), chain whole" in out
    home = Home(root)
    waiting = [r.run_id for r in home.queue.pages("waiting_approval").__next__().rows]
    home.approve(waiting[0], "grace", "Grace")
    rows = _audit(root)
    assert before > 0 and rows[-2]["prev"] is None  # 0.1.0's rows, unchained
    assert rows[-1]["prev"] == row_hash(rows[-2])
    assert main(["audit", "verify", "--home", str(root)]) == 0


def test_the_cli_spells_the_passphrase_variables_as_core_does():
    assert (cli_module.PASSPHRASE_ENV, cli_module.OWNER_PASSPHRASE_ENV) == (signing.PASSPHRASE_ENV, signing.OWNER_PASSPHRASE_ENV)


def test_a_decision_that_meets_another_between_signing_and_saving_is_signed_again(staffed, monkeypatch):
    assert staffed("run", "T-90104")[0] == 0
    home = Home(staffed.root)
    ana, bot = home.unlock("Ana", ANA), home.unlock("Bot", BOT)
    seal = signing.DecisionSigner.seal
    calls = []

    def racing(self, store, *args, **kwargs):
        sealed = seal(self, store, *args, **kwargs)
        if not calls:  # Bot's rejection lands between Ana's signature and her save
            calls.append(1)
            home.reject("T-90104-agent-chat-small-1", "agent", "wrong order", signer=bot)
        return sealed

    monkeypatch.setattr(signing.DecisionSigner, "seal", racing)
    assert home.approve(T65273_RUN, "team_lead", signer=ana).status == "done"
    assert [r["decision"] for r in _audit(staffed.root)] == ["reject", "approve"]
    monkeypatch.undo()
    assert staffed("audit", "verify")[0] == 0


def test_a_shop_homes_next_line_names_an_approver_not_a_role(staffed):
    """In a shop home `--as` is refused, so the request's Next: line says --name."""
    code, out, _ = staffed("show", T65273_RUN)
    assert code == 0
    code, out, _ = staffed("resume", T65273_RUN)
    assert code == 0 and f"Next: resolver approve {T65273_RUN} --name NAME (an approver who is team lead or above)" in out
    assert "--as" not in out.split("Next:")[-1]


def test_resolver_doctor_shows_the_owner_key_fingerprint_in_a_shop_home(staffed):
    """A new user's finding: the docs say doctor shows the owner key's fingerprint, to
    compare with the one written down; it never did."""
    _code, out, _ = staffed("doctor")
    fingerprint = Registry(staffed.root).fingerprint()
    assert f"Owner key: {fingerprint}" in out and "Approvers: registry verifies." in out


def test_refresh_in_a_shop_home_is_made_by_a_named_approver_and_signed(staffed):
    """A new user's finding: `refresh` voids approvals, yet it was anonymous (audited with an
    empty name) and anyone could run it in a shop home. Now it needs --name and the approver's
    passphrase, its audit row names them, its signature verifies, and a forged name does not."""
    run = "T-65273-agent-chat-small-1"
    code, _, err = staffed("refresh", run)
    assert code == 4 and "--name" in err
    code, _, err = staffed("refresh", run, "--as", "grace")
    assert code == 4 and "--as is refused" in err
    code, _, err = staffed("refresh", run, "--name", "Ana", passphrase=BOT)
    assert code == 4
    code, out, err = staffed("refresh", run, "--name", "Ana", passphrase=ANA)
    assert code == 0, err
    rows = [r for r in _audit(staffed.root) if r["decision"] == "refresh"]
    assert len(rows) == 1 and rows[0]["name"] == "Ana" and rows[0]["role"] == "team_lead" and rows[0]["sig"]
    code, out, err = staffed("audit", "verify")
    assert code == 0, out + err
    conn = sqlite3.connect(staffed.root / "runs.sqlite")
    triggers = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit'")]
    for name in triggers:
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("UPDATE audit SET name = 'Bot', role = 'agent' WHERE decision = 'refresh'")
    conn.commit()
    conn.close()
    code, out, err = staffed("audit", "verify")
    assert code != 0 and "signature does not verify" in out + err


def test_refresh_in_a_practice_home_records_who_refreshed(cli):
    assert cli("run", "T-65273")[0] == 0
    code, _, err = cli("refresh", "T-65273-agent-chat-small-1", "--as", "team_lead", "--name", "Tomás")
    assert code == 0, err
    rows = [r for r in json.loads(cli("audit", "--json")[1]) if r["decision"] == "refresh"]
    assert [(r["role"], r["name"]) for r in rows] == [("team_lead", "Tomás")]


def test_a_refresh_saved_before_refreshes_were_signed_still_verifies(staffed):
    """A shop home's audit from before: its refresh rows name nobody and carry no signature (the
    old code path, core.engine.refresh.refresh without a signer). audit verify still passes them; a
    refresh row naming an approver without a valid signature does not."""
    from core.api.home import Home
    from core.engine.refresh import refresh

    home = Home(staffed.root)
    refresh(home.store, home.world(), "T-65273-agent-chat-small-1", home.clock)  # as the old command did
    code, out, err = staffed("audit", "verify")
    assert code == 0, out + err
    rows = [r for r in _audit(staffed.root) if r["decision"] == "refresh"]
    assert [(r["name"], r["sig"]) for r in rows] == [("", "")]
    refresh(home.store, home.world(), "T-65273-agent-chat-small-1", home.clock, role="grace", name="Grace")
    code, out, err = staffed("audit", "verify")
    assert code != 0 and "signature does not verify" in out + err


# -- a new user's trial: an approver added with a small-order public key ----------------------------

WEAK_KEYS = (
    "00" * 32,  # order 4
    "01" + "00" * 31,  # the identity
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",  # order 8
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",  # order 8
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # order 2
    "0000000000000000000000000000000000000000000000000000000000000080",  # order 4, the other sign
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # p + 1: the identity, not canonical
)


@pytest.mark.parametrize("weak", WEAK_KEYS)
def test_a_small_order_public_key_is_refused_at_add_and_never_verifies(staffed, weak):
    """A new user's finding: ``approvers add Ann --public-key 0100…00`` was taken, and with it the
    signature ``01 00…00`` + 32 zero bytes verifies for every message (OpenSSL accepts it), so a
    refund was paid in Ann's name with no key held by anyone."""
    from core.engine.approvers import verify_hex, weak_public_key

    before = _registry_rows(staffed.root)
    code, _, err = staffed("approvers", "add", "Ann", "--role", "team_lead", "--public-key", weak, owner=GRACE)
    assert code == 2 and "is refused" in err and "Traceback" not in err
    assert _registry_rows(staffed.root) == before
    assert weak_public_key(bytes.fromhex(weak)) is not None
    assert not verify_hex(weak, "01" + "00" * 63, b"any message at all")
    assert not verify_hex(weak, "00" * 64, b"any message at all")


def test_real_keys_are_not_called_weak():
    from core.engine.approvers import public_hex, verify_hex, weak_public_key
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    for _ in range(50):
        key = Ed25519PrivateKey.generate()
        assert weak_public_key(bytes.fromhex(public_hex(key))) is None
        assert verify_hex(public_hex(key), key.sign(b"m").hex(), b"m")


def test_a_decision_signed_for_a_small_order_key_the_last_release_took_pays_nothing(staffed, monkeypatch):
    """The trial's attack end to end: Ann's entry holds ``01 00…00`` (an owner-signed entry, as the
    release before this check wrote it), and her decision carries the signature that verifies for
    every message under it. Nothing is paid, and ``audit verify`` names the row."""
    from core.engine import approvers as approvers_module
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    weak = "01" + "00" * 31
    monkeypatch.setattr(approvers_module, "check_public_key", lambda text: text)  # the last release's add
    assert staffed("approvers", "add", "Ann", "--role", "team_lead", "--public-key", weak, owner=GRACE)[0] == 0
    monkeypatch.undo()

    forged = approvers_module.Unlocked("Ann", "team_lead", Ed25519PrivateKey.generate())
    monkeypatch.setattr(approvers_module.Unlocked, "sign", lambda self, message: "01" + "00" * 63)
    monkeypatch.setattr(approvers_module.Registry, "key_problem", lambda self, name: None)
    monkeypatch.setattr(approvers_module.Registry, "unlock", lambda self, name, passphrase: forged)
    staffed("approve", "--yes", T65273_RUN, "--name", "Ann", passphrase="anything at all")
    monkeypatch.undo()
    assert _changes(staffed.root) == 0
    code, out, err = staffed("audit", "verify")
    assert code == 1 and "signature does not verify" in out + err
