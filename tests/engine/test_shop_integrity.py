"""A shop home that cannot be downgraded: each way to downgrade it replayed as an attacker would
try it, in a shop home with the owner Grace, the team lead Tomás and the agent Bot, T-65273 waiting
(119.00 CAD, team lead or above); each test counts the refunds the world holds."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from core.api.homekind import home_kind
from core.cli import main
from core.engine import signing
from core.engine.approvers import KEY_COST, Registry
from core.ground.errors import ResolverError

from helpers import T65273_RUN, T90104_RUN, run_process, shop_cli

GRACE, TOMAS, BOT = "grace-passphrase", "tomas-passphrase", "bot-passphrase"


@pytest.fixture
def shop(tmp_path, capsys, monkeypatch):
    """A shop home (Grace owner, Tomás team lead, Bot agent) with T-65273 waiting.

    ``shop(*argv, passphrase=..., owner=...)`` runs the CLI in this process with those
    passphrases in the environment and returns ``(code, out, err)``; ``shop.root`` is the home."""
    root = tmp_path / "shop"
    run = shop_cli(root, capsys, monkeypatch)

    assert run("init", "--shop")[0] == 0
    assert run("approvers", "init", passphrase=GRACE)[0] == 0
    assert run("approvers", "add", "Tomás", "--role", "team_lead", passphrase=TOMAS, owner=GRACE)[0] == 0
    assert run("approvers", "add", "Bot", "--role", "agent", passphrase=BOT, owner=GRACE)[0] == 0
    assert run("run", "T-65273")[0] == 0
    return run


def refunds(root: Path) -> int:
    """How many refunds the practice world holds (the money moved)."""
    with sqlite3.connect(root / "larkfield.sqlite") as conn:
        return conn.execute("SELECT COUNT(*) FROM refunds").fetchone()[0]


def _clean_env() -> dict[str, str]:
    return {signing.PASSPHRASE_ENV: "", signing.OWNER_PASSPHRASE_ENV: ""}


# -- a downgrade to a practice home ----------------------------------------------------------------


@pytest.mark.parametrize("change", ["removed", "practice"])
def test_a_shop_home_without_its_home_json_stays_a_shop_and_pays_nothing(shop, change):
    kind_file = shop.root / "home.json"
    if change == "removed":
        kind_file.unlink()  # rm HOME/home.json
    else:
        kind_file.write_text('{"kind": "practice"}', encoding="utf-8")
    for argv in (
        ("approve", "--yes", T65273_RUN, "--as", "grace", "--name", "Grace"),
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
    code, _, err = shop("approve", "--yes", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)
    assert code == 0, err
    assert refunds(shop.root) == 1


def test_signed_audit_rows_alone_make_a_folder_a_shop(shop):
    """Every shop file removed but runs.sqlite: its Ed25519-signed rows still say shop."""
    assert shop("approve", "--yes", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)[0] == 0
    assert shop("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")[0] == 0
    for name in ("home.json", "approvers.sqlite", "approvers.json", "audit.head"):
        (shop.root / name).unlink()
    with pytest.raises(ResolverError, match=r"it holds Ed25519-signed audit rows"):
        home_kind(shop.root)
    done = run_process(shop.root, "approve", "--yes", T90104_RUN, "--as", "grace")
    assert done.returncode == 1 and "a shop home stays one" in done.stderr
    assert refunds(shop.root) == 1  # Tomás's 119.00, nothing more


def test_a_practice_home_stays_a_practice_home(home):
    """A practice home holds none of a shop's files and no signed row: no home.json is needed."""
    home.run("T-65273")
    assert home_kind(home.root) == "practice" and not (home.root / "home.json").exists()


def test_a_shop_home_resumes_a_signed_run_without_approval_key(shop):
    """A shop home never needs approval.key: Tomás's approval, interrupted before the write, is
    resumed after approval.key is gone."""
    code, _, err = shop("approve", "--yes", T65273_RUN, "--name", "Tomás", "--interrupt", "before-write", passphrase=TOMAS)
    assert code == 3, err
    key = shop.root / "approval.key"
    if key.exists():
        key.unlink()
    code, _, err = shop("resume", T65273_RUN)
    assert code == 0, err
    assert refunds(shop.root) == 1


# -- a test hook in the product --------------------------------------------------------------------


@pytest.mark.parametrize("target", ["step:1", "save:1", "row:1"])
def test_the_installed_product_ignores_resolver_kill_at(tmp_path, target):
    """``RESOLVER_KILL_AT=step:1 resolver run T-24410`` runs to its end: only the test suite's
    entry point (tests/crash_entry.py) arms a kill point."""
    installed = Path(sys.executable).parent / "resolver"
    env = {**os.environ, "RESOLVER_KILL_AT": target}
    for command in ([str(installed)], [sys.executable, "-m", "core"]):
        root = tmp_path / f"{target}-{len(command)}"
        done = subprocess.run(
            [*command, "run", "T-24410", "--home", str(root)], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, (command, done.returncode, done.stderr)
        assert "T-24410-agent-chat-small-1" in done.stdout
        listed = subprocess.run([*command, "runs", "--home", str(root)], capture_output=True, text=True, env=env, timeout=60)
        assert "waiting_approval" in listed.stdout


def test_the_crash_entry_point_of_the_tests_still_kills_where_it_is_told(tmp_path):
    killed = run_process(tmp_path / "h", "run", "T-24410", env={"RESOLVER_KILL_AT": "step:1"})
    assert killed.returncode == -signal.SIGKILL


# -- every bad input is one sentence with a documented exit code ----------------------------------


def _head_a_folder(root: Path) -> None:
    (root / "audit.head").unlink()
    (root / "audit.head").mkdir()


def _seal_count_x(root: Path) -> None:
    seal = json.loads((root / "approvers.json").read_text(encoding="utf-8"))
    seal["count"] = "x"
    (root / "approvers.json").write_text(json.dumps(seal), encoding="utf-8")


APPROVE = ("approve", "--yes", T65273_RUN, "--name", "Tomás")
BAD_INPUTS = [
    # (case, prepare the home, argv, what is handed on fd 3 (None: nothing), exit codes, words of the sentence)
    ("fd not open", None, (*APPROVE, "--passphrase-fd", "9"), None, {2}, "File descriptor 9 is not open"),
    ("fd negative", None, (*APPROVE, "--passphrase-fd", "-1"), None, {2}, "File descriptor -1 cannot exist"),
    ("fd huge", None, (*APPROVE, "--passphrase-fd", "99999999999"), None, {2}, "cannot exist"),
    ("passphrase not UTF-8", None, (*APPROVE, "--passphrase-fd", "3"), b"tomas-\xff\xfe-phrase\n", {2}, "is not UTF-8 text"),
    ("the product's own file", None, (*APPROVE, "--passphrase-fd", "3"), "approvers.sqlite", {2, 4}, ""),
    ("head a folder", _head_a_folder, APPROVE, None, {1}, f"resolver resume {T65273_RUN}` executes it"),
    ("seal count x", _seal_count_x, ("doctor",), None, {1}, "its count is not a whole number"),
    ("home too long", None, ("runs", "--home", "/tmp/" + "x" * 300 + "/h"), None, {2}, "name is too long for this system"),
    ("home path too long", None, ("show", "--home", "/tmp/" + "/".join(["y" * 200] * 30)), None, {2}, "too long"),
]


@pytest.mark.parametrize(("case", "prepare", "argv", "fd3", "codes", "words"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_every_bad_input_is_one_sentence_with_a_documented_exit_code(shop, case, prepare, argv, fd3, codes, words):
    if prepare is not None:
        prepare(shop.root)
    env = {**os.environ, signing.PASSPHRASE_ENV: TOMAS, signing.OWNER_PASSPHRASE_ENV: ""}
    env.pop("RESOLVER_KILL_AT", None)
    if "--passphrase-fd" in argv:
        env.pop(signing.PASSPHRASE_ENV)
    command = [sys.executable, "-m", "core", *argv]
    if "--home" not in argv:
        command += ["--home", str(shop.root)]
    fds: tuple[int, ...] = ()
    if fd3 is not None:
        # the passphrase's descriptor is handed down under its own number: this process's fd 3
        # may be someone else's (a test runner's worker talks to its parent on low descriptors)
        if isinstance(fd3, bytes):
            r, w = os.pipe()
            os.write(w, fd3)
            os.close(w)
        else:
            r = os.open(shop.root / fd3, os.O_RDONLY)
        fds = (r,)
        command = [str(r) if word == "3" and command[i - 1] == "--passphrase-fd" else word for i, word in enumerate(command)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, pass_fds=fds)
    finally:
        for fd in fds:
            os.close(fd)
    said = done.stderr + (done.stdout if argv[0] == "doctor" else "")
    assert done.returncode in codes, (case, done.returncode, done.stdout, done.stderr)
    assert words in said, (case, said)
    assert "unexpected error" not in said and "Traceback" not in said, (case, said)
    if argv[0] != "doctor":
        assert done.stderr.count("\n") == 1, (case, done.stderr)
    assert refunds(shop.root) == 0


def test_an_approval_whose_head_could_not_be_written_is_finished_by_resume(shop):
    _head_a_folder(shop.root)
    code, _, err = shop(*APPROVE, passphrase=TOMAS)
    assert code == 1 and "Tomás's approval of" in err and "is saved" in err
    (shop.root / "audit.head").rmdir()
    code, _, err = shop("resume", T65273_RUN)
    assert code == 0, err
    assert refunds(shop.root) == 1


SETPRIV = shutil.which("setpriv")


@pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="runs the commands as the user nobody: needs root and setpriv")
@pytest.mark.parametrize("argv", [("runs",), ("show", T65273_RUN), ("doctor",), APPROVE])
def test_another_users_home_cannot_be_read_is_one_sentence(shop, argv):
    """Another OS user (nobody) runs each command on this home: one sentence, exit 1."""
    done = subprocess.run(
        [
            str(SETPRIV),
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-m",
            "core",
            *argv,
            "--home",
            str(shop.root),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, signing.PASSPHRASE_ENV: TOMAS, "RESOLVER_CONFIG": "/nonexistent/config.toml"},
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 1, (argv, done.stdout, done.stderr)
    assert done.stderr.startswith(f"The home {shop.root} cannot be read by this user"), (argv, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert refunds(shop.root) == 0


# -- a voided approval written back ------------------------------------------------------------------


def _write_header(root: Path, state) -> None:
    """Write ``state`` over its run's checkpoint with SQL, as someone editing runs.sqlite would."""
    from core.stores.common import _HEADER_EXCLUDE

    with sqlite3.connect(root / "runs.sqlite") as conn:
        conn.execute(
            "UPDATE runs SET state = ?, status = ? WHERE run_id = ?",
            (state.model_dump_json(exclude=_HEADER_EXCLUDE), state.status, state.run_id),
        )


def test_an_approval_voided_by_a_refresh_and_written_back_never_executes(shop):
    from core.api.home import Home

    assert shop("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")[0] == 0
    code, _, err = shop("approve", "--yes", T90104_RUN, "--name", "Bot", "--interrupt", "before-write", passphrase=BOT)
    assert code == 3, err
    version_1 = Home(shop.root).store.load(T90104_RUN)
    assert version_1.status == "executing" and version_1.approval is not None
    waiting = version_1.model_copy(deep=True)
    waiting.status, waiting.approval, waiting.operations = "waiting_approval", None, []
    _write_header(shop.root, waiting)  # the run set back to waiting by SQL
    code, out, err = shop("refresh", T90104_RUN, "--name", "Bot", passphrase=BOT)  # a refresh is signed like a decision
    assert code == 0 and "proposal version 2" in out, err
    _write_header(shop.root, version_1)  # the version-1 proposal and its signed approval written back
    code, out, err = shop("resume", T90104_RUN)
    assert refunds(shop.root) == 0
    assert "voided by the refresh" in out + err, (code, out, err)
    assert Home(shop.root).store.load(T90104_RUN).status == "handed_to_person"
    code, out, err = shop("audit", "verify")
    assert code != 0 and "(refresh) with no refusal between" in out + err, (out, err)


# -- a shop home saved by the previous release ------------------------------------------------------

FROZEN_SHOP = Path(__file__).parent.parent / "fixtures" / "shop_before_registry_versions"


def copy_frozen_shop(dst: Path) -> Path:
    """A copy of the frozen shop home at ``dst``, with the modes the release left (0700, 0600)."""
    shutil.copytree(FROZEN_SHOP, dst, ignore=shutil.ignore_patterns("README.md"))
    dst.chmod(0o700)
    for each in dst.iterdir():
        each.chmod(0o600)
    return dst


def test_a_shop_home_of_the_previous_release_opens_verifies_resumes_and_approves(tmp_path, capsys, monkeypatch):
    root = copy_frozen_shop(tmp_path / "shop")

    def run(*argv: str, passphrase: str | None = None) -> tuple[int, str, str]:
        if passphrase is None:
            monkeypatch.delenv(signing.PASSPHRASE_ENV, raising=False)
        else:
            monkeypatch.setenv(signing.PASSPHRASE_ENV, passphrase)
        code = main([*argv, "--home", str(root)])
        out, err = capsys.readouterr()
        return code, out, err

    assert home_kind(root) == "shop"
    code, out, err = run("audit", "verify")
    assert code == 0 and "chain whole" in out, (out, err)
    assert refunds(root) == 1  # Bot's 9.95 of T-90104
    assert run("resume", T65273_RUN)[0] == 0  # shows the waiting request again
    assert run("refresh", T65273_RUN, "--name", "Bot", passphrase=BOT)[0] == 0  # its evidence is older than 7 days by now
    assert Registry(root).entries()[1].private_key.startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")  # PBKDF2
    code, out, err = run("approve", "--yes", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)
    assert code == 0, err
    assert refunds(root) == 2
    tomas = Registry(root).entries()[1]
    assert tomas.name == "Tomás" and tomas.private_key.startswith("resolver-scrypt-v1$")  # encrypted again at its unlock
    assert Registry(root).unlock("Tomás", TOMAS).name == "Tomás"
    code, out, err = run("audit", "verify")
    assert code == 0 and "chain whole" in out, (out, err)
    assert run("approve", "--yes", T90104_RUN, "--name", "Bot", passphrase=BOT)[0] == 4  # decided once
    # its seal has no version (counts as 0); the next change writes version 1 and its audit row
    monkeypatch.setenv(signing.OWNER_PASSPHRASE_ENV, GRACE)
    assert run("approvers", "revoke", "Bot")[0] == 0
    assert json.loads((root / "approvers.json").read_text())["version"] == 1
    code, out, err = run("audit", "verify")
    assert code == 0 and "chain whole" in out, (out, err)


# -- nothing older than what was seen --------------------------------------------------------------


def _fold_wal(path: Path) -> None:
    """Fold a database's write-ahead log into it, so copying the one file copies it whole."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def test_a_revocation_undone_by_putting_the_registry_back_pays_nothing(shop, tmp_path):
    assert shop("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")[0] == 0
    _fold_wal(shop.root / "approvers.sqlite")
    saved = tmp_path / "saved"
    saved.mkdir()
    for name in ("approvers.sqlite", "approvers.json"):
        shutil.copy2(shop.root / name, saved / name)  # copy approvers.sqlite and approvers.json
    revoked = run_process(shop.root, "approvers", "revoke", "Bot", env={signing.OWNER_PASSPHRASE_ENV: GRACE})
    assert revoked.returncode == 0, revoked.stderr
    for name in ("approvers.sqlite", "approvers.json"):
        shutil.copy2(saved / name, shop.root / name)  # put the two files back
    done = run_process(shop.root, "approve", "--yes", T90104_RUN, "--name", "Bot", env={signing.PASSPHRASE_ENV: BOT})
    assert done.returncode in (4, 5), (done.stdout, done.stderr)
    assert "the audit records version 4" in done.stdout + done.stderr
    assert refunds(shop.root) == 0
    verify = run_process(shop.root, "audit", "verify")
    assert verify.returncode == 1 and "registry: the approvers registry is version 3 but the audit records version 4" in (
        verify.stdout + verify.stderr
    )
    doctor = run_process(shop.root, "doctor")
    assert doctor.returncode == 1 and "the audit records version 4" in doctor.stdout


@pytest.mark.parametrize("change", ["delete the newest row", "edit the newest row's detail"])
def test_history_rolled_back_with_the_head_is_found_by_audit_verify(shop, tmp_path, change):
    old_head = (shop.root / "audit.head").read_bytes()  # copy audit.head
    assert shop("approve", "--yes", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)[0] == 0
    assert refunds(shop.root) == 1  # Tomás's 119.00, approved as it should be
    with sqlite3.connect(shop.root / "runs.sqlite") as conn:
        newest = conn.execute("SELECT MAX(id) FROM audit").fetchone()[0]
        if change == "delete the newest row":
            conn.execute("DROP TRIGGER audit_no_delete")
            conn.execute("DELETE FROM audit WHERE id = ?", (newest,))
            conn.execute(
                "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END"
            )
        else:
            conn.execute("DROP TRIGGER audit_no_update")
            conn.execute("UPDATE audit SET detail = 'nothing to see' WHERE id = ?", (newest,))
            conn.execute(
                "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END"
            )
    (shop.root / "audit.head").write_bytes(old_head)  # put the old audit.head back
    verify = run_process(shop.root, "audit", "verify")
    said = verify.stdout + verify.stderr
    assert verify.returncode == 1, said
    if change == "delete the newest row":
        assert f"run {T65273_RUN} holds an approval by Tomás that no audit row records" in said
    else:
        assert "the head was put back from an older copy" in said
    assert refunds(shop.root) == 1


# -- read-only files -----------------------------------------------------------------------------------


def test_databases_the_owner_made_read_only_stay_so_and_pay_nothing(shop):
    """The owner makes both databases 0444; approve twice: each is one sentence, the modes stay
    0444 (resolver never changes a file's mode it did not make), nothing is written."""
    for name in ("runs.sqlite", "larkfield.sqlite"):
        _fold_wal(shop.root / name)
        (shop.root / name).chmod(0o444)
    for _ in range(2):
        done = run_process(shop.root, *APPROVE, env={signing.PASSPHRASE_ENV: TOMAS})
        assert done.returncode == 1, (done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "is read-only (mode 0444)" in done.stderr and "Traceback" not in done.stderr
        assert {n: (shop.root / n).stat().st_mode & 0o777 for n in ("runs.sqlite", "larkfield.sqlite")} == {
            "runs.sqlite": 0o444,
            "larkfield.sqlite": 0o444,
        }
    assert refunds(shop.root) == 0
    listed = run_process(shop.root, "runs")
    assert listed.returncode == 0 and T65273_RUN in listed.stdout  # reading still works
    for name in ("runs.sqlite", "larkfield.sqlite"):
        (shop.root / name).chmod(0o600)
    done = run_process(shop.root, *APPROVE, env={signing.PASSPHRASE_ENV: TOMAS})
    assert done.returncode == 0, done.stderr
    assert refunds(shop.root) == 1


def test_a_log_that_cannot_be_written_is_one_sentence_once(tmp_path):
    root = tmp_path / "h"
    assert run_process(root, "run", "T-24410").returncode == 0
    (root / "resolver.log").unlink()
    (root / "resolver.log").mkdir()
    done = run_process(root, "show", "T-24410-agent-chat-small-1")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert (
        done.stderr
        == f"The home's log {root / 'resolver.log'} cannot be written (Is a directory); the command went on without it.\n"
    )


def test_files_keep_the_modes_their_owner_set(tmp_path):
    """The owner gives the group read access to the log and the world database: no command
    changes a mode back (resolver never chmods a file it did not make in this run)."""
    root = tmp_path / "h"
    assert run_process(root, "run", "T-65273").returncode == 0
    modes = {"resolver.log": 0o640, "larkfield.sqlite": 0o640, "runs.sqlite": 0o600, ".__resolver.lock": 0o640}
    for name, mode in modes.items():
        (root / name).chmod(mode)
    assert run_process(root, "approve", "--yes", T65273_RUN, "--as", "grace").returncode == 0
    assert refunds(root) == 1
    assert {name: (root / name).stat().st_mode & 0o777 for name in modes} == modes


# -- offline guessing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("passphrase", "why"),
    [
        ("12345678", "too short: use at least 12 characters"),
        ("eleven-char", "too short"),
        ("123qweasdzxc", "one of the commonest passwords"),
        ("Password1234!", "one of the commonest passwords"),
        ("dragondragon", "one of the commonest passwords"),
        ("aaaaaaaaaaaa", "one short piece repeated"),  # a new user's finding: accepted
        ("abcabcabcabc", "one short piece repeated"),  # a new user's finding: accepted
        ("ab12ab12ab1212", "fewer than 5 different characters"),
    ],
)
def test_a_weak_passphrase_is_refused_for_a_new_key(shop, passphrase, why):
    code, out, err = shop("approvers", "add", "Eve", "--role", "agent", passphrase=passphrase, owner=GRACE)
    assert code == 1 and why in err and err.count("\n") == 1, (out, err)
    assert [e.name for e in Registry(shop.root).entries()] == ["Grace", "Tomás", "Bot"]


def test_a_key_made_by_the_product_costs_a_guess_about_a_quarter_second(shop):
    """The product (a process of its own, without the tests' cheaper cost) encrypts with scrypt
    at n = 2**16, r = 8, p = 1 (benchmarks/bench_keys.py prints the time a guess takes here)."""
    done = run_process(
        shop.root,
        "approvers",
        "add",
        "Priya",
        "--role",
        "team_lead",
        env={signing.PASSPHRASE_ENV: "priya's long passphrase", signing.OWNER_PASSPHRASE_ENV: GRACE},
    )
    assert done.returncode == 0, done.stderr
    priya = Registry(shop.root).entries()[-1]
    assert priya.name == "Priya" and priya.private_key.startswith(f"resolver-scrypt-v1${KEY_COST.n}$8$1$")
    assert KEY_COST.n == 2**16
    assert Registry(shop.root).unlock("Priya", "priya's long passphrase").role == "team_lead"


# -- the head in the next signed row, the world and the operations in the approval's ---------------


def _delete_rows_after(root: Path, length: int) -> None:
    """Delete every audit row after the first ``length``, with the delete trigger dropped and made again."""
    with sqlite3.connect(root / "runs.sqlite") as conn:
        conn.execute("DROP TRIGGER audit_no_delete")
        conn.execute("DELETE FROM audit WHERE id > (SELECT id FROM audit ORDER BY id LIMIT 1 OFFSET ?)", (length - 1,))
        conn.execute(
            "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END"
        )


def test_a_signed_decision_binds_the_chain_before_it_its_world_and_its_operations(shop):
    from core.api.home import Home
    from core.contract import audit as audit_rows

    assert shop("approve", "--yes", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)[0] == 0
    home = Home(shop.root)
    all_rows = home.store.audit_rows()
    approve = next(r for r in all_rows if r["decision"] == "approve")
    position = all_rows.index(approve)
    binds = audit_rows.read_binds(approve)
    state = home.store.load(T65273_RUN)
    assert binds == {
        "head": f"{position}:{approve['prev']}",
        "ops": [op.operation_id for op in state.operations],
        **({"world": state.approval.world.fingerprint} if state.approval.world else {}),
    }
    assert all(audit_rows.read_binds(r) for r in all_rows if r["sig"])  # registry rows bind the head too
    code, out, err = shop("audit", "verify")
    assert code == 0 and "chain whole" in out, (out, err)


def test_history_run_and_head_rolled_back_together_are_found_by_the_register(shop, tmp_path):
    """Nothing older than what was seen, carried one step further: the attacker also puts the run
    back as it was before Tomás approved, so no run holds an orphan approval. The register (the
    payment service's own record) still holds the 119.00 refund, and no signed approval binds
    it."""
    from core.api.home import Home

    old_head = (shop.root / "audit.head").read_bytes()
    length = json.loads(old_head)["length"]
    before = Home(shop.root).store.load(T65273_RUN)
    assert shop("approve", "--yes", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)[0] == 0
    assert refunds(shop.root) == 1
    _delete_rows_after(shop.root, length)
    (shop.root / "audit.head").write_bytes(old_head)
    _write_header(shop.root, before)  # the run put back to waiting, its approval gone
    verify = run_process(shop.root, "audit", "verify")
    said = verify.stdout + verify.stderr
    assert verify.returncode == 1, said
    assert f"written by run {T65273_RUN}" in said and "that no signed approval in the audit binds" in said
    assert "request_refund" in said and "send_reply" in said  # the refund and the reply, each said once
    assert refunds(shop.root) == 1


def test_a_manual_refund_is_not_held_against_the_audit(shop):
    """Writes a person made by hand are recorded as ``manual`` in the register; they are not the
    executor's, so ``audit verify`` holds nothing against them (a shop home refuses
    ``manual-refund``: the write is made here as the payment service would record it)."""
    from core.api.home import Home

    Home(shop.root).world().request_refund("phone-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    code, out, err = shop("audit", "verify")
    assert code == 0 and "chain whole" in out, (out, err)


@pytest.mark.parametrize("rewrite", ["world", "operations"])
def test_an_approval_whose_state_was_rewritten_after_signing_never_executes(shop, rewrite):
    from core.api.home import Home

    code, _, err = shop("approve", "--yes", T65273_RUN, "--name", "Tomás", "--interrupt", "before-write", passphrase=TOMAS)
    assert code == 3, err
    store = Home(shop.root).store
    state = store.load(T65273_RUN)
    assert state.status == "executing" and state.approval is not None
    if rewrite == "world":
        assert state.approval.world is not None and len(state.approval.world.lookups) > 1
        before = state.approval.world.fingerprint
        state.approval.world.lookups = state.approval.world.lookups[:-1]  # a lookup it saw, gone
        assert state.approval.world.fingerprint != before
        _write_header(shop.root, state)
        expected = "the world the approval was made against is not the one its signature binds"
    else:
        state.operations = state.operations[1:]  # the refund dropped: only the reply would go out
        _write_header(shop.root, state)
        assert len(store.load(T65273_RUN).operations) == 1
        expected = "the run's operations are not the ones the approval's signature binds"
    code, out, err = shop("resume", T65273_RUN)
    assert expected in out + err, (code, out, err)
    assert refunds(shop.root) == 0


def test_a_row_signed_at_another_place_in_the_chain_is_reported():
    """A signed row whose ``binds`` records a chain length other than the rows before it: found
    by ``verify_audit`` whatever its signature (the signature itself is checked by the shop's
    row check). SQLite-only: it builds an audit table by hand."""
    from core.contract import audit as audit_rows
    from core.engine import auditchain
    from core.stores.sqlite import audit as sqlite_audit

    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE audit (id INTEGER PRIMARY KEY, run_id TEXT, decision TEXT, role TEXT, name TEXT, digest TEXT, "
        "at TEXT, detail TEXT, run_uid TEXT)"
    )
    for name, event in (("audit_no_update", "UPDATE"), ("audit_no_delete", "DELETE")):
        conn.execute(f"CREATE TRIGGER {name} BEFORE {event} ON audit BEGIN SELECT RAISE(ABORT, 'append-only'); END")
    base = {"decision": "refused:expired", "role": "agent", "name": "Bot", "digest": "d", "at": "2026-12-01T09:00:00-05:00"}
    first = sqlite_audit.append(conn, "r1", base)
    sqlite_audit.append(conn, "r2", {**base, "decision": "approve", "binds": audit_rows.make_binds(1, first["hash"])})
    assert auditchain.verify_audit(sqlite_audit.SqliteAudit(conn)).ok
    second = sqlite_audit.last_hash(conn)[0]
    sqlite_audit.append(conn, "r3", {**base, "decision": "approve", "binds": audit_rows.make_binds(7, second)})
    report = auditchain.verify_audit(sqlite_audit.SqliteAudit(conn))
    assert report.problems == [
        "row 3 (r3, approve): it was signed when the chain had 7 row(s) ending as its prev says, but 2 row(s) stand "
        "before it: rows before it were deleted, inserted or rewritten"
    ]


# -- a shop home saved before the head was signed into each row --------------------------------------

FROZEN_SIGNED_HEAD = Path(__file__).parent.parent / "fixtures" / "shop_before_signed_head"


def test_a_shop_home_saved_before_rows_bound_the_head_verifies_and_approves(tmp_path, capsys, monkeypatch):
    from core.api.home import Home

    root = tmp_path / "shop"
    shutil.copytree(FROZEN_SIGNED_HEAD, root, ignore=shutil.ignore_patterns("README.md"))
    root.chmod(0o700)
    for each in root.iterdir():
        each.chmod(0o600)
    run = shop_cli(root, capsys, monkeypatch)
    code, out, err = run("audit", "verify")
    assert code == 0 and "Audit: 4 row(s), chain whole" in out, (out, err)  # registry init, two adds, Bot's approval
    assert refunds(root) == 1  # Bot's 9.95 of T-90104, bound by a row signed without binds
    assert run("refresh", T65273_RUN, "--name", "Bot", passphrase=BOT)[0] == 0  # its evidence is older than 7 days by now
    code, out, err = run("approve", "--yes", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)
    assert code == 0, err
    assert refunds(root) == 2
    rows = Home(root).store.audit_rows()
    assert [r["binds"] is not None for r in rows] == [False, False, False, False, True, True]  # refresh, approve
    code, out, err = run("audit", "verify")
    assert code == 0 and "chain whole" in out, (out, err)


# -- found by trying to break the binds --------------------------------------------------------------


@pytest.fixture
def later(monkeypatch):
    """``later(hours)`` moves a shop home's real-time clock forward by ``hours`` in this process;
    ``later(hours, frozen=True)`` also stops it there, so every row written after it has one time
    (the clock keeps seconds: rows a second apart or in one second are both real)."""
    from datetime import timedelta

    from core.ground.clock import SystemClock

    real = SystemClock.now

    def move(hours: float, frozen: bool = False) -> None:
        if frozen:
            at = real(SystemClock()) + timedelta(hours=hours)
            monkeypatch.setattr(SystemClock, "now", lambda self: at)
        else:
            monkeypatch.setattr(SystemClock, "now", lambda self: real(self) + timedelta(hours=hours))

    return move


def _lapsed_before_write(shop, later, frozen: bool = False) -> None:
    """T-90104 approved by Bot, crashed before its write, resumed 2 hours later: the approval
    lapsed. ``frozen``: the clock stays at the lapse's second afterwards (see ``later``)."""
    assert shop("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")[0] == 0
    assert shop("approve", "--yes", T90104_RUN, "--name", "Bot", "--interrupt", "before-write", passphrase=BOT)[0] == 3
    later(2, frozen=frozen)
    code, out, err = shop("resume", T90104_RUN)
    assert "lapsed" in out + err, (code, out, err)


def test_a_lapsed_approval_written_back_after_a_rejection_never_executes(shop, later):
    """A new user's finding: an approval that lapsed, of a run a team lead then rejected, was
    written back by SQL with one operation marked as called (so it could not lapse again), and
    ``resume`` paid 9.95. Any row that ends an approval now voids it, not only a refresh."""
    from core.api.home import Home

    assert shop("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")[0] == 0
    assert shop("approve", "--yes", T90104_RUN, "--name", "Bot", "--interrupt", "before-write", passphrase=BOT)[0] == 3
    approved = Home(shop.root).store.load(T90104_RUN)
    later(2)
    assert "lapsed" in "".join(shop("resume", T90104_RUN)[1:])
    code, _, err = shop("reject", "--yes", T90104_RUN, "--name", "Tomás", "--reason", "customer withdrew", passphrase=TOMAS)
    assert code == 0, err
    approved.version = Home(shop.root).store.load(T90104_RUN).version
    approved.operations[0].calls = 1  # "started": it cannot lapse again
    _write_header(shop.root, approved)
    code, out, err = shop("resume", T90104_RUN)
    assert "voided by the refused:expiry row" in out + err, (code, out, err)  # the lapse ended it
    assert refunds(shop.root) == 0


def test_a_lapsed_approval_does_not_bind_a_later_write_rolled_back_out_of_the_audit(shop, later, tmp_path):
    """A new user's finding: operation IDs are the same across a lapse, so the lapsed approval's
    binds seemed to cover the write of the next approval once that was rolled back. An approval
    binds only writes made while it stood, including a write in the lapse's own second (the clock
    keeps seconds): the clock is frozen there, so the check is the same on every run (CI's mutant
    run once wrote a second later and so passed without the guard)."""
    _lapsed_before_write(shop, later, frozen=True)
    _fold_wal(shop.root / "runs.sqlite")
    saved = tmp_path / "saved"
    saved.mkdir()
    for name in ("runs.sqlite", "audit.head"):
        shutil.copy2(shop.root / name, saved / name)
    assert shop("approve", "--yes", T90104_RUN, "--name", "Bot", passphrase=BOT)[0] == 0
    assert refunds(shop.root) == 1
    for name in ("runs.sqlite", "audit.head"):
        shutil.copy2(saved / name, shop.root / name)
    for name in ("runs.sqlite-wal", "runs.sqlite-shm"):
        (shop.root / name).unlink(missing_ok=True)
    verify = run_process(shop.root, "audit", "verify")  # a new process: this one holds the old file open
    said = verify.stdout + verify.stderr
    assert verify.returncode == 1 and f"written by run {T90104_RUN}" in said and "no signed approval in the audit binds" in said


@pytest.mark.parametrize(
    "sql",
    ["ALTER TABLE operations RENAME TO ops_archive", "ALTER TABLE operations RENAME COLUMN actor TO who"],
    ids=["table renamed", "column renamed"],
)
def test_a_register_made_unreadable_is_said_not_taken_as_empty(shop, sql):
    assert shop("approve", "--yes", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)[0] == 0
    with sqlite3.connect(shop.root / "larkfield.sqlite") as conn:
        conn.execute(sql)
    code, out, err = shop("audit", "verify")
    assert code == 1 and "the world's operations register cannot be read" in out + err, (out, err)


@pytest.mark.parametrize(
    "junk",
    ["not json", '{"head": "3:x", "ops": 5}', '{"head": "3:x", "ops": null}', '{"head": 3}', "[1]", "deep", "blob"],
)
def test_junk_in_a_rows_binds_is_reported_never_a_crash(shop, junk):
    assert shop("approve", "--yes", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)[0] == 0
    with sqlite3.connect(shop.root / "runs.sqlite") as conn:
        newest = conn.execute("SELECT MAX(id) FROM audit WHERE decision = 'approve'").fetchone()[0]
        conn.execute("DROP TRIGGER audit_no_update")
        if junk == "blob":
            conn.execute("UPDATE audit SET binds = x'7b7d' WHERE id = ?", (newest,))
        else:
            value = '{"head":"3:x","ops":' + "[" * 100_000 if junk == "deep" else junk
            conn.execute("UPDATE audit SET binds = ? WHERE id = ?", (value, newest))
    for argv in (("audit", "verify"), ("doctor",)):
        code, out, err = shop(*argv)
        assert code == 1 and "unexpected error" not in out + err, (argv, out, err)
    code, out, err = shop("audit", "verify")
    assert "(T-65273-agent-chat-small-1, approve)" in out + err, (out, err)
    assert shop("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")[0] == 0
    code, out, err = shop("approve", "--yes", T90104_RUN, "--name", "Bot", passphrase=BOT)  # the chain moves on
    assert "unexpected error" not in out + err, (out, err)


def test_a_blob_in_an_older_column_is_reported_never_a_crash(shop):
    with sqlite3.connect(shop.root / "runs.sqlite") as conn:
        conn.execute("DROP TRIGGER audit_no_update")
        conn.execute("UPDATE audit SET detail = x'00ff' WHERE id = 2")
    code, out, err = shop("audit", "verify")
    assert code == 1 and "unexpected error" not in out + err and "row 2 " in out + err, (out, err)
