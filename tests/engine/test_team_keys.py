"""Each approver's encrypted private key lives on their machine, not in the team store (role
separation builds on it). Two or three home folders pointed at one fresh PostgreSQL schema stand
for machines. After every path the store's rows hold no key material (a SQL check); the two-step
add (``approvers key`` on the approver's machine, ``approvers add --public-key`` on the owner's),
``add`` on the spot, ``recover``, a missing or mismatched key file, a malformed public key, the
upgrade of a store whose rows still hold keys (the frozen ``team_store_schema_4``), and ``store
copy`` from a SQLite shop."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import psycopg
import pytest
from core.engine.keyfiles import KeyFiles

from helpers import T65273_RUN, shop_cli
from pg import fresh_schema, restore_frozen

GRACE, ANA, BOB = "grace-passphrase", "ana-passphrase", "bob-s long passphrase"


@pytest.fixture
def url():
    with fresh_schema() as made:
        yield made


def _machine(root: Path, url: str, capsys, monkeypatch):
    """The CLI of one machine: its own folder ``root``, the team store at ``url``."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    root.chmod(0o700)
    run = shop_cli(root, capsys, monkeypatch)

    def on_store(*argv: str, **kw: str | None) -> tuple[int, str, str]:
        return run(*argv, "--store", url, **kw)

    on_store.root = root  # type: ignore[attr-defined]
    return on_store


def _key_material(url: str) -> list[tuple[str, str, str | None]]:
    """The approvers rows that hold any key material: ``(name, private_key, recovery_key)``."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT name, private_key, recovery_key FROM approvers WHERE private_key <> '' OR recovery_key IS NOT NULL"
        ).fetchall()
    return [tuple(r) for r in rows]


def _seal_version(url: str) -> int:
    with psycopg.connect(url) as conn:
        body = conn.execute("SELECT body FROM shop_parts WHERE name = 'approvers.json'").fetchone()
    return int(json.loads(bytes(body[0]))["version"])


def _one_sentence(err: str) -> None:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def _owner_machine(tmp_path, url, capsys, monkeypatch):
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    assert a("init", "--shop")[0] == 0
    code, _out, err = a("approvers", "init", passphrase=GRACE)
    assert code == 0, err
    return a


def _public_key(out: str) -> str:
    return out.split("Public key: ")[1].split()[0]


def test_the_two_step_add_keeps_each_key_on_its_machine(url, tmp_path, capsys, monkeypatch):
    a = _owner_machine(tmp_path, url, capsys, monkeypatch)
    grace = KeyFiles(a.root).read("Grace")
    assert grace is not None and grace.recovery_key  # the owner's key and recovery copy, on the owner's machine
    assert stat.S_IMODE(KeyFiles(a.root).path("Grace").stat().st_mode) == 0o600
    assert _key_material(url) == []

    b = _machine(tmp_path / "b", url, capsys, monkeypatch)
    code, out, err = b("approvers", "key", "--name", "Ana", passphrase=ANA)
    assert code == 0, err
    public = _public_key(out)
    assert f"Made a key for Ana on this machine: {KeyFiles(b.root).path('Ana')}" in out
    assert "Fingerprint: SHA256:" in out
    assert f"--public-key {public}" in out
    assert _key_material(url) == []
    code, out, err = b("approvers", "key", "--name", "Ana", passphrase=ANA)  # a second key is not made over the first
    assert code == 1 and "This machine already holds a key for Ana" in err and public in err
    _one_sentence(err)

    code, out, err = a("approvers", "add", "Ana", "--role", "team_lead", "--public-key", public, owner=GRACE)
    assert code == 0 and out.startswith("Added Ana as team lead, key SHA256:"), err
    assert "on this machine" not in out and KeyFiles(a.root).read("Ana") is None
    assert _key_material(url) == []
    code, _, err = b("approvers", "key", "--name", "ana", passphrase=ANA)
    assert code == 1 and "Ana is already in the registry" in err

    assert a("run", "T-65273")[0] == 0
    code, _, err = a("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)  # not Ana's machine
    assert code == 4, err
    assert f"This machine holds no key for Ana (looked for {KeyFiles(a.root).path('Ana')})" in err
    assert "`resolver approvers key --name Ana`" in err and "copy that file here" in err
    _one_sentence(err)
    code, out, err = b("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 0 and "Status: done" in out, err
    assert _key_material(url) == []

    code, out, _ = b("doctor")
    assert f"Key file: {KeyFiles(b.root).path('Ana')} holds Ana's key SHA256:" in out and "(can decide on this machine)" in out
    assert "Keys in the store" not in out
    code, out, _ = a("doctor")
    assert "holds Grace's key" in out and "Ana's key" not in out


def test_a_malformed_or_taken_public_key_is_one_sentence_and_writes_nothing(url, tmp_path, capsys, monkeypatch):
    a = _owner_machine(tmp_path, url, capsys, monkeypatch)
    for bad in ("abc", "zz" * 32, "ab" * 33, ""):
        code, out, err = a("approvers", "add", "Ana", "--role", "agent", "--public-key", bad, owner=GRACE)
        assert code == 2 and out == "", (bad, err)
        assert "A public key is the 64 hex digits `resolver approvers key --name NAME` printed" in err
        assert "Traceback" not in err
    owner = KeyFiles(a.root).read("Grace").public_key
    code, _, err = a("approvers", "add", "Ana", "--role", "agent", "--public-key", owner, owner=GRACE)
    assert code == 1 and "is Grace's already; nothing changed" in err
    _one_sentence(err)
    assert _seal_version(url) == 1
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM approvers").fetchone()[0] == 1


def test_a_key_file_for_another_public_key_is_caught_at_unlock(url, tmp_path, capsys, monkeypatch):
    a = _owner_machine(tmp_path, url, capsys, monkeypatch)
    b = _machine(tmp_path / "b", url, capsys, monkeypatch)
    c = _machine(tmp_path / "c", url, capsys, monkeypatch)
    b("approvers", "key", "--name", "Ana", passphrase=ANA)
    code, out, _ = c("approvers", "key", "--name", "Ana", passphrase=ANA)  # another key of that name elsewhere
    assert a("approvers", "add", "Ana", "--role", "team_lead", "--public-key", _public_key(out), owner=GRACE)[0] == 0
    a("run", "T-65273")
    code, _, err = b("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 4 and f"The key file {KeyFiles(b.root).path('Ana')} on this machine holds the key SHA256:" in err
    assert "but the registry's entry for Ana has the key SHA256:" in err and "the owner added another public key" in err
    _one_sentence(err)
    code, out, _ = b("doctor")
    assert "Key file problem:" in out and "it cannot decide" in out
    code, out, err = c("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 0 and "Status: done" in out, err


def test_add_on_the_spot_on_a_team_store_makes_the_key_file_on_this_machine(url, tmp_path, capsys, monkeypatch):
    a = _owner_machine(tmp_path, url, capsys, monkeypatch)
    code, out, err = a("approvers", "add", "Ana", "--role", "team_lead", passphrase=ANA, owner=GRACE)
    assert code == 0, err
    kept = KeyFiles(a.root).path("Ana")
    assert f"Their encrypted key is on this machine: {kept}. Copy that file" in out
    assert _key_material(url) == []
    a("run", "T-65273")
    b = _machine(tmp_path / "b", url, capsys, monkeypatch)
    (b.root / "keys").mkdir(mode=0o700)
    shutil.copy2(kept, KeyFiles(b.root).path("Ana"))  # as docs/team-stores.md says: the file goes to Ana's machine
    kept.unlink()
    code, out, err = b("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 0 and "Status: done" in out, err
    # a key file left on the owner's machine for a name is never replaced by a key made on the spot
    a("approvers", "key", "--name", "Bob", passphrase=BOB)
    code, _, err = a("approvers", "add", "Bob", "--role", "agent", passphrase=BOB, owner=GRACE)
    assert code == 1 and "This machine already holds a key file for Bob" in err and "--public-key " in err
    assert _seal_version(url) == 2


def test_recover_reads_the_recovery_copy_on_the_owners_machine(url, tmp_path, capsys, monkeypatch):
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    a("init", "--shop")
    code, out, _ = a("approvers", "init", "--json", passphrase=GRACE)
    code_1 = json.loads(out)["recovery_code"]
    b = _machine(tmp_path / "b", url, capsys, monkeypatch)
    monkeypatch.setenv("RESOLVER_RECOVERY_CODE", code_1)
    code, _, err = b("approvers", "recover", passphrase="a new long passphrase")
    assert code == 1 and "This machine holds no key for Grace" in err and "nothing changed" in err
    _one_sentence(err)
    code, out, err = a("approvers", "recover", passphrase="a new long passphrase")
    assert code == 0 and "New recovery code (shown once):" in out, err
    assert _key_material(url) == []
    code, _, err = a("approvers", "add", "Ana", "--role", "agent", passphrase=ANA, owner=GRACE)
    assert code == 1 and "Wrong passphrase for the owner Grace" in err
    code, _, err = a("approvers", "add", "Ana", "--role", "agent", passphrase=ANA, owner="a new long passphrase")
    assert code == 0, err


FIXTURES = Path(__file__).parent.parent / "fixtures"


def _restore(url: str, frozen: Path, upto: int) -> None:
    """Make a frozen store's tables by this resolver's migrations up to ``upto`` (those the old
    release had) and load its rows, each identity going on after the loaded values."""
    restore_frozen(url, frozen, range(1, upto + 1))


@pytest.mark.parametrize("schema", [4, 6])
def test_keys_in_the_rows_of_a_store_of_the_previous_release_move_to_the_machines(schema, url, tmp_path, capsys, monkeypatch):
    """The frozen team stores of the two releases before the key files (schema 4: its seal and
    head in the owner's folder; schema 6, made by 9d8518b: in the store), their rows holding
    Grace's and Ana's encrypted keys: a run waiting over the upgrade is approved by Ana on her
    machine, whose first unlock writes her key file and empties her row; the owner's first
    signing moves Grace's key and recovery copy to the owner's machine. doctor and store
    migrate count what is left; a third machine has no key."""
    frozen = FIXTURES / ("team_store_schema_4" if schema == 4 else "shop_team_store_schema_6")
    _restore(url, frozen, schema)
    assert sorted(r[0] for r in _key_material(url)) == ["Ana", "Grace"]
    if (frozen / "home").is_dir():
        shutil.copytree(frozen / "home", tmp_path / "a")
    a = _machine(tmp_path / "a", url, capsys, monkeypatch)
    for path in a.root.iterdir():
        path.chmod(0o600)
    code, out, err = a("audit", "verify")
    assert code == 0, err
    code, out, _ = a("doctor")
    assert "Keys in the store: 2 approver(s)' encrypted keys are still in the team store's rows" in out
    code, out, _ = a("store", "migrate")
    assert "keys: 2 approver(s)' encrypted keys still in the store's rows" in out
    code, out, _ = a("store", "check")  # a new user's trial: check did not count them
    assert "keys: 2 approver(s)' encrypted keys still in the store's rows" in out

    b = _machine(tmp_path / "b", url, capsys, monkeypatch)
    assert b("refresh", T65273_RUN, "--name", "Ana", passphrase="ana-passphrase")[0] == 0
    code, out, err = b("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase="ana-passphrase")
    assert code == 0 and "Status: done" in out, err
    ana = KeyFiles(b.root).read("Ana")
    assert ana is not None and ana.private_key.startswith("resolver-scrypt-v1$")
    assert [r[0] for r in _key_material(url)] == ["Grace"]

    c = _machine(tmp_path / "c", url, capsys, monkeypatch)
    assert c("run", "T-97580")[0] == 0
    code, _, err = c("approve", "--yes", "T-97580-agent-chat-small-1", "--name", "Ana", passphrase="ana-passphrase")
    assert code == 4 and "This machine holds no key for Ana" in err

    code, _, err = a("approvers", "add", "Bob", "--role", "agent", passphrase=BOB, owner="grace-passphrase")
    assert code == 0, err
    grace = KeyFiles(a.root).read("Grace")
    assert grace is not None and grace.recovery_key
    assert _key_material(url) == []
    code, out, _ = a("store", "migrate")
    assert "keys: none in the store's rows" in out
    assert "keys: none in the store's rows" in a("store", "check")[1]
    for machine in (a, b):
        code, out, err = machine("audit", "verify")
        assert code == 0 and "chain whole" in out, err


def test_store_copy_of_a_sqlite_shop_keeps_the_keys_out_of_the_team_store(tmp_path, capsys, monkeypatch):
    from core.cli import main

    shop = shop_cli(tmp_path / "shop", capsys, monkeypatch)
    assert shop("init", "--shop")[0] == 0
    assert shop("approvers", "init", passphrase=GRACE)[0] == 0
    assert shop("approvers", "add", "Ana", "--role", "team_lead", passphrase=ANA, owner=GRACE)[0] == 0
    assert shop("run", "T-65273")[0] == 0
    assert KeyFiles(shop.root).listing() == []  # a SQLite home keeps its keys in its rows
    with fresh_schema() as team:
        code = main(["store", "copy", "--from", f"sqlite://{shop.root}", "--to", team])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert f"keys: 2 encrypted private key(s) kept out of the team store, as key files in {shop.root / 'keys'}" in out
        assert _key_material(team) == []
        assert {k.name for _p, k, _x in KeyFiles(shop.root).listing() if k} == {"Grace", "Ana"}
        code, out, err = shop("approve", "--yes", T65273_RUN, "--name", "Ana", "--store", team, passphrase=ANA)
        assert code == 0 and "Status: done" in out, err
        # the SQLite home still decides with its rows' keys, as before
        code, out, err = shop("approvers", "list")
        assert code == 0, err
        back = tmp_path / "back"
        code = main(["store", "copy", "--from", team, "--to", f"sqlite://{back}"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert "keys: a team store holds no private keys; copy each approver's key file" in out


def test_a_replaced_owner_key_is_refused_on_a_machine_that_pinned_the_first(url, tmp_path, capsys, monkeypatch):
    """SECURITY.md's limit of a team store: someone who rewrites every table at once replaces the
    registry and the owner key together. Each machine keeps the owner key it first trusted
    (``keys/owner.pin``: the owner's at ``approvers init``, an approver's at their first
    decision); a store whose seal names another owner key is then refused with both fingerprints."""
    a = _owner_machine(tmp_path, url, capsys, monkeypatch)
    b = _machine(tmp_path / "b", url, capsys, monkeypatch)
    code, out, _ = b("approvers", "key", "--name", "Ana", passphrase=ANA)
    a("approvers", "add", "Ana", "--role", "team_lead", "--public-key", _public_key(out), owner=GRACE)
    a("run", "T-65273")
    a("run", "T-97580")
    code, out, err = b("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 0, err
    first = KeyFiles(a.root).pinned_owner()
    assert first == KeyFiles(a.root).read("Grace").public_key == KeyFiles(b.root).pinned_owner()
    assert stat.S_IMODE(KeyFiles(b.root).pin_path.stat().st_mode) == 0o600

    with fresh_schema() as other:  # the attacker's own registry, owner key and Ana entry, moved in whole
        x = _owner_machine(tmp_path / "x", other, capsys, monkeypatch)
        code, out, _ = x("approvers", "key", "--name", "Ana", passphrase=ANA)
        x("approvers", "add", "Ana", "--role", "team_lead", "--public-key", _public_key(out), owner=GRACE)
        with psycopg.connect(other) as src:
            rows = src.execute("SELECT name, role, public_key, added_at, revoked_at, signature FROM approvers").fetchall()
            seal = bytes(src.execute("SELECT body FROM shop_parts WHERE name = 'approvers.json'").fetchone()[0])
        forged = json.loads(seal)["owner_key"]
        with psycopg.connect(url) as conn:
            conn.execute("DELETE FROM approvers")
            for row in rows:
                conn.execute(
                    "INSERT INTO approvers (name, role, public_key, added_at, revoked_at, signature, private_key) "
                    "VALUES (%s, %s, %s, %s, %s, %s, '')",
                    row,
                )
            conn.execute("UPDATE shop_parts SET body = %s WHERE name = 'approvers.json'", (seal,))
        shutil.copy2(KeyFiles(x.root).path("Ana"), KeyFiles(b.root).path("Ana"))  # the attacker's Ana key
    from core.engine.approvers import fingerprint

    code, _, err = b("approve", "--yes", "T-97580-agent-chat-small-1", "--name", "Ana", passphrase=ANA)
    assert code == 4, err
    assert f"the store's owner key {fingerprint(forged)} is not the one this machine trusted first, {fingerprint(first)}" in err
    _one_sentence(err)
    for machine in (a, b):
        code, out, err = machine("doctor")
        assert "is not the one this machine trusted first" in out
    code, _, err = a("approvers", "add", "Bob", "--role", "agent", passphrase=BOB, owner=GRACE)
    assert code == 4 and "is not the one this machine trusted first" in err
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM approvers WHERE name = 'Bob'").fetchone()[0] == 0


def test_a_team_store_whose_rows_hold_keys_is_not_copied_into_another(url, capsys):
    """A team store of the release before (keys in its rows) copied into another team store would
    carry the keys along: refused with one sentence, nothing written."""
    from core.cli import main
    from core.stores import open_rows

    _restore(url, FIXTURES / "shop_team_store_schema_6", 6)
    with fresh_schema() as other:
        code = main(["store", "copy", "--from", url, "--to", other])
        _, err = capsys.readouterr()
        assert code == 1 and "still holds 2 approver(s)' encrypted keys in its rows" in err
        assert "let each approver unlock once on their machine" in err
        _one_sentence(err)
        assert sum(open_rows(other).row_counts().values()) == 0


def test_a_sqlite_shop_home_takes_the_two_step_add_too(tmp_path, capsys, monkeypatch):
    """A SQLite shop home keeps keys in its rows, and reads a key file first: `approvers key` and
    `add --public-key` work there; a key made on the spot is refused while a key file of that
    name is on the machine (the file would win at unlock)."""
    shop = shop_cli(tmp_path / "shop", capsys, monkeypatch)
    assert shop("init", "--shop")[0] == 0
    assert shop("approvers", "init", passphrase=GRACE)[0] == 0
    code, out, err = shop("approvers", "key", "--name", "Ana", passphrase=ANA)
    assert code == 0, err
    code, _, err = shop("approvers", "add", "Ana", "--role", "team_lead", passphrase=ANA, owner=GRACE)
    assert code == 1 and "This machine already holds a key file for Ana" in err
    code, _, err = shop("approvers", "add", "Ana", "--role", "team_lead", "--public-key", _public_key(out), owner=GRACE)
    assert code == 0, err
    assert shop("run", "T-65273")[0] == 0
    code, out, err = shop("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert code == 0 and "Status: done" in out, err
    import sqlite3

    with sqlite3.connect(tmp_path / "shop" / "approvers.sqlite") as conn:
        rows = dict(conn.execute("SELECT name, private_key FROM approvers"))
    assert rows["Ana"] == "" and rows["Grace"].startswith("resolver-scrypt-v1$")  # the owner's stays in its row


def _typo(public: str) -> str:
    """``public`` with one hex digit mistyped, still a well-formed Ed25519 public key (the typo
    check_public_key cannot catch)."""
    from core.engine.approvers import RegistryError, check_public_key

    for i in range(len(public)):
        for digit in "0123456789abcdef":
            if digit == public[i]:
                continue
            typed = public[:i] + digit + public[i + 1 :]
            try:
                return check_public_key(typed)
            except RegistryError:
                continue
    raise AssertionError("no well-formed typo")


def test_a_typo_in_the_public_key_is_caught_by_its_fingerprint_before_anything_is_written(tmp_path, capsys, monkeypatch):
    """A new user's trial: a typo in ``approvers add NAME --public-key HEX`` took the name for
    good (revoked names are not reused). ``approvers key`` prints the ``add`` command with
    ``--fingerprint``; ``add`` refuses a key of another fingerprint (exit 2, both fingerprints,
    nothing written); without it a terminal asks to confirm, and a script is told the fingerprint."""
    import io
    import shlex

    from core.engine.approvers import Registry, fingerprint

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shop = shop_cli(tmp_path / "shop", capsys, monkeypatch)
    assert shop("init", "--shop")[0] == 0
    assert shop("approvers", "init", passphrase=GRACE)[0] == 0
    code, out, err = shop("approvers", "key", "--name", "Ana Lee", passphrase=ANA)
    assert code == 0, err
    public = _public_key(out)
    printed = shlex.split(out.split("adds it with `")[1].split("`")[0])
    assert printed == [
        "resolver", "approvers", "add", "Ana Lee", "--role", "ROLE", "--public-key", public, "--fingerprint", fingerprint(public)
    ]  # fmt: skip
    typo = _typo(public)
    entries = lambda: [e.name for e in Registry(tmp_path / "shop").entries()]  # noqa: E731
    add = ["approvers", "add", "Ana Lee", "--role", "team_lead"]
    code, out, err = shop(*add, "--public-key", typo, "--fingerprint", fingerprint(public), owner=GRACE)
    assert code == 2 and out == "" and entries() == ["Grace"], err
    assert f"fingerprint is {fingerprint(typo)}, not the '{fingerprint(public)}' given with --fingerprint" in err
    _one_sentence(err)
    code, _, err = shop(*add, "--fingerprint", fingerprint(public), owner=GRACE)
    assert code == 2 and "--fingerprint checks the key given with --public-key" in err and entries() == ["Grace"]
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))  # a terminal: the fingerprint shown, No refuses
    code, out, err = shop(*add, "--public-key", typo, owner=GRACE)
    assert code == 4 and f"The public key's fingerprint is {fingerprint(typo)}." in err and entries() == ["Grace"], err
    assert "Not added: the fingerprint was not confirmed. Nothing was written" in err
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # a script: it goes on and says the fingerprint
    code, out, err = shop("approvers", "add", "Bob", "--role", "agent", "--public-key", typo, owner=GRACE)
    assert code == 0 and f"The key added for Bob has the fingerprint {fingerprint(typo)}" in err, err
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))  # the owner compared the fingerprints: yes adds
    from core.engine.approvers import public_hex
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    cy = public_hex(Ed25519PrivateKey.generate())
    code, out, err = shop("approvers", "add", "Cy", "--role", "agent", "--public-key", cy, owner=GRACE)
    assert code == 0 and out.startswith("Added Cy as agent") and "[y/N]" in err + out, err
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    compact = fingerprint(public).removeprefix("SHA256:").replace(" ", "").upper()  # spaces, prefix and case aside
    code, out, err = shop(*add, "--public-key", public, "--fingerprint", compact, owner=GRACE)
    assert code == 0 and out.startswith(f"Added Ana Lee as team lead, key {fingerprint(public)}"), err
    assert entries() == ["Grace", "Bob", "Cy", "Ana Lee"]
