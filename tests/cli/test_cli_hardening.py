"""The command line and the home folder hardened: every bad input on the command line gets one
sentence, a documented exit code and changes nothing; no escape sequence from data reaches a
terminal; the home's place, modes, log, doctor, prune, backup and restore."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest
from core.cli import EXIT_CODES, EXIT_ERROR, EXIT_HANDED, EXIT_REFUSED, EXIT_USAGE, main

from helpers import T65273_RUN, run_process

FRIDAY = "2026-10-09T17:00:00-04:00"
CONTROL = {*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F}


def _no_control(text: str) -> None:
    """Every character: no C0 control but newline and tab, no DEL, no C1 control."""
    bad = [hex(ord(c)) for c in text if ord(c) in CONTROL or 0x80 <= ord(c) <= 0x9F]
    assert not bad, bad


def _state(home, run_id=T65273_RUN):
    from helpers import store_at

    return store_at(home / "runs.sqlite").load(run_id)


@pytest.fixture
def waiting(cli):
    """A home with T-65273 waiting for approval at the lesson's Friday."""
    assert cli("clock", "set", FRIDAY)[0] == 0
    assert cli("run", "T-65273")[0] == 0
    return cli


def test_every_exit_code_is_documented_in_the_command_lines_page():
    from pathlib import Path

    page = (Path(__file__).parent.parent.parent / "docs" / "command-line.md").read_text(encoding="utf-8")
    codes = page.split("## Exit codes", 1)[1]
    for code in EXIT_CODES:
        assert f"| {code} |" in codes


# -- bad input: one sentence, nothing saved -----------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ("reject", T65273_RUN, "--as", "agent", "--reason", "re\udce7u"),
        ("approve", T65273_RUN, "--as", "team_lead", "--name", "Andr\udce9"),
        ("runs", "--search", "Andr\udce9"),
    ],
)
def test_arguments_that_are_not_utf8_get_one_sentence_and_nothing_is_saved(waiting, argv):
    before = _state(waiting.home)
    code, out, err = waiting(*argv)
    assert code == EXIT_USAGE and out == ""
    assert len(err.strip().splitlines()) == 1 and "is not UTF-8 text" in err and "\\xe" in err
    after = _state(waiting.home)
    assert (after.status, after.version) == (before.status, before.version) == ("waiting_approval", before.version)


@pytest.mark.slow
def test_latin1_bytes_from_a_terminal_in_a_real_process(proc):
    proc("run", "T-65273")
    done = subprocess.run(
        [sys.executable, "-m", "core", "reject", T65273_RUN, "--as", "agent", "--reason", b"re\xe7u", "--home", str(proc.home)],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == EXIT_USAGE and b"Traceback" not in done.stderr and b"not UTF-8" in done.stderr
    assert _state(proc.home).status == "waiting_approval"


def test_an_empty_digest_is_never_taken_as_no_digest(waiting):
    code, out, err = waiting("approve", T65273_RUN, "--as", "team_lead", "--digest", "")
    assert code == EXIT_USAGE and out == "" and "--digest is empty" in err
    assert _state(waiting.home).status == "waiting_approval"


def test_a_negative_limit_is_refused_not_a_silent_cut(waiting):
    code, out, err = waiting("runs", "--limit", "-2")
    assert code == EXIT_USAGE and out == "" and "--limit -2 is negative" in err


@pytest.mark.parametrize("amount", ["119.005", "\u0661\u0661\u0669.\u0660\u0660", "119,00", "0x77", " 119.00", "1e2"])
def test_amounts_are_taken_as_typed_or_refused(waiting, amount):
    code, out, err = waiting("manual-refund", "manual-1", "LK-507862", amount, "RFD-DOUBLE", "PAY-507862-2")
    assert code == EXIT_USAGE and out == "" and "is not an amount in CAD" in err and "nothing is rounded" in err
    assert waiting("changes")[1].startswith("0 change(s)")


def test_the_lessons_float_amount_through_the_python_api_still_works(tmp_path):
    from core.stores.sqlite.world import SqliteWorld as World

    result = World(tmp_path / "w.sqlite").request_refund("manual-1", "LK-507862", 119.00, "RFD-DOUBLE", "PAY-507862-2")  # type: ignore[arg-type]
    assert result["refund_id"] == "RF-4CFEAE8E"


def test_an_empty_home_is_refused_never_quietly_dot_work(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["runs", "--home", ""]) == EXIT_ERROR
    assert "--home is empty" in capsys.readouterr().err
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("run_id", ["\x1b[31mX", "a b", "../x", "x\x07", ""])
def test_a_hidden_run_id_with_escapes_or_spaces_is_refused(cli, run_id):
    code, out, err = cli("run", "T-65273", "--run-id", run_id)
    assert code == EXIT_USAGE and out == "" and "is not a valid run ID" in err
    _no_control(err)
    assert not (cli.home / "runs.sqlite").exists() or cli("runs")[1].startswith("No saved runs")


@pytest.mark.parametrize("run_id", ["r-1", "T-65273-crash-1"])
def test_the_lessons_own_run_ids_stay_valid(cli, run_id):
    code, out, _ = cli("run", "T-65273", "--run-id", run_id)
    assert code == 0 and "Outcome: resolve (rule W7)" in out


# -- the trainer's clock ------------------------------------------------------------------------


def test_a_clock_file_that_is_a_folder_gets_a_sentence(cli):
    cli("init")
    (cli.home / "clock.json").mkdir()
    for argv in (("clock", "show"), ("clock", "set", FRIDAY), ("clock", "real"), ("run", "T-65273")):
        code, _out, err = cli(*argv)
        assert code == EXIT_ERROR and "Traceback" not in err and "clock.json" in err, argv
        assert len(err.strip().splitlines()) == 1
    code, _out, err = cli("runs")  # a listing reads the queue's columns only, never the trainer's clock
    assert code == 0 and err == ""


@pytest.mark.parametrize(
    "content",
    [
        '{"at": "9999-12-31T23:59:59+00:00", "set_at": "0001-01-02T00:00:00+00:00"}',
        '{"at": "2026-10-09T17:00:00-04:00", "set_at": "9999-12-31T23:59:59+00:00"}',
        '{"at": "2026-10-09T17:00:00-04:00", "set_at": "2026-10',  # torn
        "",
        "[]",
        '{"at": 5, "set_at": null}',
    ],
)
def test_a_damaged_clock_file_gets_a_sentence(cli, content):
    cli("init")
    (cli.home / "clock.json").write_text(content)
    code, _, err = cli("clock", "show")
    assert code == EXIT_ERROR and "clock file" in err and "Traceback" not in err
    assert cli("clock", "real")[0] == 0 and cli("clock", "show")[0] == 0


def test_advancing_the_clock_out_of_range_gets_a_sentence(cli):
    cli("clock", "set", FRIDAY)
    for duration in ("999999999999d", "99999999d"):
        code, _, err = cli("clock", "advance", duration)
        assert code == EXIT_USAGE and ("too long" in err or "leaves the times resolver supports" in err), duration
    assert cli("clock", "show")[1].startswith("Clock: 2026-10-09T17:")


def test_the_clock_file_is_written_atomically_and_private(tmp_path):
    from datetime import timedelta

    from core.ground.clock import FileClock, parse_time
    from core.ground.errors import ResolverError

    clock = FileClock(tmp_path / "clock.json")
    clock.set(parse_time(FRIDAY))
    assert stat.S_IMODE((tmp_path / "clock.json").stat().st_mode) == 0o600
    stop = threading.Event()
    failures: list[str] = []

    def writer() -> None:
        while not stop.is_set():
            clock.advance(timedelta(seconds=1))

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(400):
            try:
                FileClock(tmp_path / "clock.json").now()
            except ResolverError as exc:
                failures.append(str(exc))
    finally:
        stop.set()
        thread.join()
    assert failures == []
    assert [p.name for p in tmp_path.iterdir()] == ["clock.json"]  # no temporary file left


# -- wrong advice, search -----------------------------------------------------------------------


def test_a_locked_world_during_approve_says_resume_finishes_it(waiting, monkeypatch):
    from core.api.home import Home
    from core.ground.errors import StoreBusy

    def locked(self, run_id, **kw):
        raise StoreBusy(f"The practice world {self.world_path} stayed locked by another process for 5 s; try again.")

    monkeypatch.setattr(Home, "execute", locked)
    code, _, err = waiting("approve", T65273_RUN, "--as", "team_lead")
    assert code == EXIT_ERROR and "try again" not in err
    assert f"resolver resume {T65273_RUN}" in err and "finishes" in err
    assert _state(waiting.home).status == "executing"


# -- no escape sequence from data reaches a terminal --------------------------------------------

NASTY = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[31m\x9b1m\r\x08\x00"


def test_the_clis_output_for_a_ticket_full_of_escapes_has_no_control_byte(waiting):
    from helpers import store_at

    store = store_at(waiting.home / "runs.sqlite")
    state = store.load(T65273_RUN)
    p = state.proposal
    assert p is not None
    action = p.actions[0].model_copy(update={"order_id": "LK-507862" + NASTY, "reason_code": "RFD" + NASTY})
    state.proposal = p.model_copy(update={"rule": "W7" + NASTY, "reason": "why" + NASTY, "actions": [action]})
    store.save(state)
    outputs = []
    for argv in (
        ("show", T65273_RUN),
        ("show", T65273_RUN, "--json"),
        ("runs",),
        ("runs", "--json"),
        ("trace", T65273_RUN),
        ("trace", T65273_RUN, "--json"),
        ("resume", T65273_RUN),
        ("resume", T65273_RUN, "--json"),
        ("approve", T65273_RUN, "--as", "grace", "--name", "Grace" + NASTY[:8]),
        ("changes",),
        ("changes", "--json"),
        ("audit",),
        ("audit", "--json"),
        ("show", T65273_RUN),
        ("runs", "--search", "W7\x1b[31m"),
    ):
        code, out, err = waiting(*argv)
        outputs.append((argv, code, out + err))
    for argv, _code, text in outputs:
        assert "Traceback" not in text, argv
        _no_control(text)
        assert "52;c;" not in text or "\\u001b" in text or "\x1b" not in text, argv


# -- where the home lives -----------------------------------------------------------------------


@pytest.mark.parametrize("command", [("runs",), ("show",), ("show", T65273_RUN), ("trace", T65273_RUN), ("changes",), ("audit",)])
def test_read_only_commands_never_make_a_home(tmp_path, capsys, monkeypatch, command, user_data_dir):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RESOLVER_HOME", raising=False)
    monkeypatch.setenv("RESOLVER_CONFIG", str(tmp_path / "none.toml"))
    assert main(list(command)) == EXIT_ERROR
    err = capsys.readouterr().err
    home = user_data_dir / "resolver" / "home"  # the default outside the project folder
    assert "No home folder at" in err and str(home) in err and "--home" in err and "the default: your data folder" in err
    assert not (tmp_path / "work").exists() and not home.exists()


def test_the_config_file_may_name_the_home_and_doctor_says_why(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RESOLVER_HOME", raising=False)
    config = tmp_path / "cfg" / "config.toml"
    config.parent.mkdir()
    config.write_text('name = "Grace"\nrole = "grace"\nhome = "../queue"\n')
    monkeypatch.setenv("RESOLVER_CONFIG", str(config))
    assert main(["init"]) == 0
    assert (tmp_path / "queue" / "runs.sqlite").exists() and not (tmp_path / "work").exists()
    capsys.readouterr()
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Home: ") and f"from `home` in {config}" in out
    monkeypatch.setenv("RESOLVER_HOME", str(tmp_path / "env-home"))
    main(["doctor"])
    assert "from $RESOLVER_HOME" in capsys.readouterr().out
    config.write_text("home = [")
    monkeypatch.delenv("RESOLVER_HOME")
    assert main(["runs"]) == EXIT_USAGE and "is not TOML" in capsys.readouterr().err  # exit 2, as the live model's routes


# -- files: modes, log, doctor ------------------------------------------------------------------


def test_a_new_home_is_0700_and_its_files_0600(waiting):
    waiting("approve", T65273_RUN, "--as", "team_lead")
    home = waiting.home
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    names = sorted(p.name for p in home.iterdir())
    assert {"runs.sqlite", "larkfield.sqlite", "approval.key", "clock.json", "resolver.log"} <= set(names)
    for p in home.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p.name


def test_the_log_has_decisions_and_stack_traces_never_the_screen(waiting, monkeypatch):
    import core.cli.trainer

    waiting("approve", T65273_RUN, "--as", "agent")  # refused: needs team lead
    log = (waiting.home / "resolver.log").read_text()
    assert "approve" in log and "refused:" in log

    def boom(home, args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(core.cli.trainer, "cmd_changes", boom)  # the handler is read from its module when it runs
    code, _out, err = waiting("changes")
    assert code == EXIT_ERROR and "Traceback" not in err and "unexpected error (RuntimeError)" in err
    assert "Traceback" in (waiting.home / "resolver.log").read_text() and "a bug" in (waiting.home / "resolver.log").read_text()


def test_doctor_reports_modes_key_databases_triggers_and_versions(waiting, capsys):
    code, out, _ = waiting("doctor")
    assert code == 0, out
    for words in (
        "Home: ",
        "home folder mode 0700",
        "every file of the home is 0600",
        "approval key" if False else "approval",
        "checkpoint store runs.sqlite: integrity ok",
        "practice world larkfield.sqlite: integrity ok",
        "audit triggers present",
        "pydantic ",
        "sqlite-utils ",
        "Python ",
    ):
        assert words in out, words
    (waiting.home / "clock.json").chmod(0o644)
    code, out, _ = waiting("doctor")
    assert code == EXIT_ERROR and "FAIL  files readable by others: clock.json 0644; run `chmod 600`" in out


# -- exit codes and JSON ------------------------------------------------------------------------


def test_exit_codes_refused_and_handed_to_a_person(waiting):
    assert waiting("approve", T65273_RUN, "--as", "agent")[0] == EXIT_REFUSED
    assert waiting("manual-refund", "manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")[0] == 0
    code, out, _ = waiting("approve", T65273_RUN, "--as", "grace", "--name", "Grace", "--json")
    assert code == EXIT_HANDED and json.loads(out)["status"] == "handed_to_person"
    code, out, _ = waiting("resume", T65273_RUN, "--json")
    assert code == 0 and json.loads(out)["resumed"] == "final"
    for argv in (
        ("show", T65273_RUN, "--json"),
        ("trace", T65273_RUN, "--json"),
        ("changes", "--json"),
        ("audit", "--json"),
        ("show", "--json"),
    ):
        code, out, _ = waiting(*argv)
        assert code == 0 and json.loads(out), argv
    assert [r["decision"] for r in json.loads(waiting("audit", "--json")[1])] == ["approve"]


# -- prune, backup, restore ---------------------------------------------------------------------


def test_prune_deletes_old_finished_runs_and_the_audit_keeps_the_decision(waiting):
    code, _, err = waiting("reject", T65273_RUN, "--as", "team_lead", "--name", "Amira", "--reason", "refunded by phone")
    assert code == 0, err
    waiting("run", "T-90104")
    code, out, _ = waiting("prune", "--older-than", "90d")
    assert code == 0 and out.startswith("No finished run is older than")
    waiting("clock", "advance", "91d")
    code, out, _ = waiting("prune", "--older-than", "90d")
    assert code == 0 and "Removed 1 finished run(s)" in out and "1 handed_to_person" in out and T65273_RUN in out
    assert [r.split()[0] for r in waiting("runs")[1].splitlines()] == ["T-90104-agent-chat-small-1"]
    audit = json.loads(waiting("audit", "--json")[1])
    assert [(r["run_id"], r["decision"], r["name"]) for r in audit] == [(T65273_RUN, "reject", "Amira")]
    assert waiting("prune", "--older-than", "back 1d")[0] == EXIT_USAGE


def test_backup_and_restore_round_trip_while_the_store_is_open(waiting, tmp_path):
    archive = tmp_path / "b.tar.gz"
    code, out, _ = waiting("backup", str(archive))
    assert code == 0 and "runs.sqlite" in out and "approval.key" not in out  # no key made yet
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert {"runs.sqlite", "larkfield.sqlite", "clock.json"} <= names and not any(n.endswith(("-wal", "-shm")) for n in names)
    assert waiting("backup", str(archive))[0] == EXIT_ERROR  # never overwritten
    waiting("reject", T65273_RUN, "--as", "agent", "--reason", "no")
    code, out, _ = waiting("restore", str(archive), "--replace-newer")
    assert code == 0 and out.startswith("Restored")
    assert _state(waiting.home).status == "waiting_approval"


def test_restore_refuses_newer_runs_unless_told_and_keeps_the_replaced_home(waiting, tmp_path):
    """A new user's finding: restore asked nothing and kept no copy, so a run made after the
    backup was gone for good. Now a home with runs saved after the backup is refused (naming
    them, nothing replaced) unless --replace-newer, and the home as it was is kept first."""
    archive = tmp_path / "b.tar.gz"
    assert waiting("backup", str(archive))[0] == 0
    waiting("clock", "advance", "1m")
    assert waiting("run", "T-90104")[0] == 0
    code, _, err = waiting("restore", str(archive))
    assert code == EXIT_ERROR and "T-90104-agent-chat-small-1" in err and "--replace-newer" in err
    assert "Nothing was replaced" in err and "T-90104-agent-chat-small-1" in waiting("runs")[1]
    code, out, err = waiting("restore", str(archive), "--replace-newer", "--json")
    assert code == 0, err
    kept = Path(json.loads(out)["kept"])
    assert kept.parent == waiting.home.parent and kept.name.startswith("home-before-restore-")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert "T-90104" not in waiting("runs")[1]
    code, out, err = waiting("restore", str(kept))  # the kept copy brings the run back
    assert code == 0, err
    assert "T-90104-agent-chat-small-1" in waiting("runs")[1]


def test_a_shop_home_is_restored_by_its_owner_with_their_passphrase(tmp_path, monkeypatch, capsys):
    """Restoring a shop home was refused with a sentence naming an issue number; now the owner's
    passphrase unlocks it, a wrong one is refused, and only a backup of the same owner goes in."""
    from core.engine.signing import OWNER_PASSPHRASE_ENV, PASSPHRASE_ENV

    shop = tmp_path / "shop"
    monkeypatch.setenv(PASSPHRASE_ENV, "owner passphrase one")
    assert main(["init", "--shop", "--home", str(shop)]) == 0
    assert main(["approvers", "init", "--home", str(shop)]) == 0
    archive = tmp_path / "shop.tar.gz"
    assert main(["backup", str(archive), "--home", str(shop)]) == 0
    capsys.readouterr()
    monkeypatch.delenv(PASSPHRASE_ENV)
    monkeypatch.setenv(OWNER_PASSPHRASE_ENV, "not the owner's")
    code = main(["restore", str(archive), "--home", str(shop)])
    err = capsys.readouterr().err
    assert code != 0 and "issue" not in err.lower() and "Restored" not in err
    monkeypatch.setenv(OWNER_PASSPHRASE_ENV, "owner passphrase one")
    assert main(["restore", str(archive), "--home", str(shop)]) == 0
    assert "Restored" in capsys.readouterr().out
    other = tmp_path / "other"
    monkeypatch.setenv(PASSPHRASE_ENV, "owner passphrase two")
    assert main(["init", "--shop", "--home", str(other)]) == 0
    assert main(["approvers", "init", "--home", str(other)]) == 0
    capsys.readouterr()
    monkeypatch.setenv(OWNER_PASSPHRASE_ENV, "owner passphrase two")
    assert main(["restore", str(archive), "--home", str(other)]) == EXIT_REFUSED
    assert "another owner key" in capsys.readouterr().err


def test_restore_checks_before_replacing(waiting, tmp_path):
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not an archive")
    code, _, err = waiting("restore", str(bad))
    assert code == EXIT_ERROR and "Nothing was replaced" in err
    partial = tmp_path / "partial.tar.gz"
    with tarfile.open(partial, "w:gz") as tar:
        tar.add(waiting.home / "clock.json", arcname="clock.json")
    assert "no runs.sqlite" in waiting("restore", str(partial))[2]
    shop_root = tmp_path / "shop"
    assert main(["init", "--shop", "--home", str(shop_root)]) == 0
    archive = tmp_path / "shop.tar.gz"
    assert main(["backup", str(archive), "--home", str(shop_root)]) == 0
    code, _, err = waiting("restore", str(archive))
    assert code == EXIT_ERROR and "never changes a home's kind" in err
    assert main(["restore", str(archive), "--home", str(shop_root)]) == EXIT_ERROR  # no owner yet to unlock it
    assert _state(waiting.home).status == "waiting_approval"


def test_a_folder_in_place_of_a_homes_file_is_never_backed_up_nor_restored_halfway(waiting, tmp_path):
    """A new user's finding: a backup made while approval.key was a folder held `approval.key/`,
    and restoring it replaced both databases, then stopped on FileExistsError with a traceback
    sentence: the home's own runs were gone."""
    key = waiting.home / "approval.key"
    key.mkdir()
    code, _, err = waiting("backup", str(tmp_path / "b.tar.gz"))
    assert code == EXIT_ERROR and "is not a file" in err and not (tmp_path / "b.tar.gz").exists()
    key.rmdir()
    forged = tmp_path / "forged.tar.gz"  # such an archive, made by hand: refused before anything is replaced
    with tarfile.open(forged, "w:gz") as tar:
        for name in ("runs.sqlite", "larkfield.sqlite"):
            tar.add(waiting.home / name, arcname=name)
        folder = tmp_path / "approval.key"
        folder.mkdir()
        tar.add(folder, arcname="approval.key")
    before = _state(waiting.home)
    code, _, err = waiting("restore", str(forged))
    assert code == EXIT_ERROR and "Nothing was replaced" in err and "Traceback" not in err
    assert _state(waiting.home) == before and not key.exists()


# -- the machine --------------------------------------------------------------------------------


def test_windows_is_refused_with_a_sentence():
    from core.ground.errors import ResolverError
    from core.ground.platform import require_posix

    require_posix("posix")
    with pytest.raises(ResolverError, match="POSIX"):
        require_posix("nt")


def test_lowest_constraints_pin_each_floor():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
    from lowest_constraints import lowest

    assert lowest(["pydantic>=2.10,<3", "textual>=8.0,<9", "x", "a[b]>=1.2"]) == ["pydantic==2.10", "textual==8.0", "a==1.2"]


def test_run_process_keeps_working(proc):
    assert run_process(proc.home, "init").returncode == 0


@pytest.mark.parametrize("term", ["GARCÍA", "García", "garcía", "Í", "ÍA", "í"])
def test_search_folds_case_by_unicode_rules(cli, term):
    """Regression: `GARCÍA` and short terms like `Í` missed Mateo García (SQLite's LIKE folds ASCII only)."""
    cli("run", "T-70314")
    cli("run", "T-65273")
    code, out, _ = cli("runs", "--search", term)
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["T-70314-agent-chat-small-1"], term


def test_each_home_has_its_own_log_and_escapes_are_written_as_text(tmp_path):
    from core.api.home import Home

    a, b = Home(tmp_path / "a"), Home(tmp_path / "b")
    a.log.info("only in a \x1b]52;c;eA==\x07")
    b.log.info("only in b")
    text_a, text_b = (tmp_path / "a" / "resolver.log").read_text(), (tmp_path / "b" / "resolver.log").read_text()
    assert "only in a" in text_a and "only in b" not in text_a and "only in a" not in text_b
    assert "\x1b" not in text_a and "\\x1b]52;c;" in text_a
    assert stat.S_IMODE((tmp_path / "a" / "resolver.log").stat().st_mode) == 0o600


def test_the_app_and_the_cli_log_decisions_through_home(waiting):
    waiting("approve", T65273_RUN, "--as", "team_lead", "--name", "Priya")
    log = (waiting.home / "resolver.log").read_text()
    assert f"approve {T65273_RUN} by team_lead (Priya): approved, executing" in log
    assert re.search(rf"execute {T65273_RUN}: operation [0-9a-f]{{16}} request_refund done, 1 call\(s\)", log)


def test_an_empty_digest_through_home_is_refused_too(tmp_path):
    from core.api.home import Home
    from core.ground.errors import ResolverError

    home = Home(tmp_path / "h")
    state = home.run("T-65273")
    with pytest.raises(ResolverError, match="digest is empty"):
        home.approve(state.run_id, "grace", digest=" ")
    assert home.queue.load(state.run_id).status == "waiting_approval"


def test_the_audit_of_an_unknown_run_says_so(waiting):
    """A new user's finding: `resolver audit nosuch` printed "0 decision(s)" and exited 0."""
    code, out, err = waiting("audit", "nosuch")
    assert code == EXIT_ERROR and out == "" and "No run nosuch" in err


def test_a_closed_pipe_ends_quietly(waiting, tmp_path):
    """A new user's finding: `resolver changes | head -1` said "stopped on an unexpected error
    (BrokenPipeError)"."""
    import subprocess
    import sys

    script = (
        f"import subprocess, sys; p = subprocess.Popen([sys.executable, '-m', 'core', 'changes', '--home', {str(waiting.home)!r}], "
        "stdout=subprocess.PIPE, stderr=subprocess.PIPE); p.stdout.close(); err = p.stderr.read(); p.wait(); "
        "sys.stdout.write(err.decode())"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60).stdout
    assert "unexpected error" not in out and "Traceback" not in out


@pytest.mark.parametrize(
    "argv",
    [
        ("reject", T65273_RUN, "--as", "team_lead", "--reason", "fine\nStatus: done\nrequest_refund LK-999: done"),
        ("reject", T65273_RUN, "--as", "team_lead", "--name", "Eve\nStatus: done", "--reason", "no"),
        ("approve", T65273_RUN, "--as", "team_lead", "--name", "Eve\u2028Status: done"),
    ],
)
def test_a_name_or_reason_that_spans_lines_is_refused(waiting, argv):
    """A new user's finding: a reason holding "\nStatus: done" printed a false status line."""
    before = _state(waiting.home)
    code, out, err = waiting(*argv)
    assert code == 4 and "must be one line" in err and "Status: done" not in out
    assert _state(waiting.home) == before


def test_bidirectional_controls_never_reach_the_terminal():
    from core.ground.safetext import safe_text

    assert safe_text("Eve\u202eenod :sutatS") == "Eveenod :sutatS"
    assert safe_text("a\u2066b\u2069c\u200fd") == "abcd"


def _holding(root, needle: bytes) -> list[str]:
    """The files under ``root`` whose bytes hold ``needle``."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes())


@pytest.mark.parametrize("build_default", [0, 1])
def test_prune_removes_the_pruned_tickets_text_from_every_file_of_the_home(cli, monkeypatch, build_default):
    """After prune, no byte of the pruned ticket's customer message (nor the reply sent on it)
    is in any file of the home, whatever SQLite's build default for secure_delete (each new
    connection starts with ``build_default``, as a build without or with SQLITE_SECURE_DELETE
    does): the database files, their -wal, the log. The operations register keeps its entries
    (one effect per ticket still reads them) and the audit keeps who decided what."""
    import json as _json
    import sqlite3 as _sqlite3

    from core.ground.data import load_task

    real_connect = _sqlite3.connect

    def connect(*args, **kwargs):
        conn = real_connect(*args, **kwargs)
        conn.execute(f"PRAGMA secure_delete = {build_default}")
        return conn

    monkeypatch.setattr(_sqlite3, "connect", connect)
    message = load_task("T-90104").message
    for argv in (
        ("clock", "set", "2026-10-09T17:00:00-04:00"),
        ("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong"),
        ("approve", "T-90104-agent_structured-chat-strong-1", "--as", "agent"),
        ("run", "T-65273"),
        ("clock", "advance", "3d"),
    ):
        assert cli(*argv)[0] == 0, argv
    home = cli.home
    with real_connect(home / "larkfield.sqlite") as conn:
        reply = conn.execute("SELECT text FROM replies").fetchone()[0]
    for needle in (message, reply, message[40:80]):
        assert _holding(home, needle.encode()), "the text was never saved: the test proves nothing"
    code, out, err = cli("prune", "--older-than", "1d", "--json")
    assert code == 0, err
    assert _json.loads(out)["removed"] == ["T-90104-agent_structured-chat-strong-1"]
    for needle in (message, reply, message[40:80], message[-30:]):
        assert _holding(home, needle.encode()) == [], needle
    with real_connect(home / "larkfield.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM operations").fetchone()[0] == 2
        assert conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0] == 1
    audit = _json.loads(cli("audit", "T-90104-agent_structured-chat-strong-1", "--json")[1])
    assert [r["decision"] for r in audit][:1] == ["approve"]
    runs_files = b"".join(p.read_bytes() for p in home.glob("runs.sqlite*"))
    assert load_task("T-65273").message.encode() in runs_files  # the waiting run keeps its text


def test_prune_older_than_without_a_unit_is_a_bad_value(proc):
    assert proc("reset", "--all").returncode == 0
    for value in ("90", "90 days", "1.5d", "back 1d", "0d"):
        done = proc("prune", "--older-than", value)
        assert done.returncode == 2, (value, done.stderr)
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_durations_print_as_typed_never_as_python_timedelta(proc):
    assert proc("clock", "set", "2026-10-09T17:00:00-04:00").returncode == 0
    done = proc("prune", "--older-than", "1d")
    assert "older than 1d;" in done.stdout and "day," not in done.stdout
    far = proc("prune", "--older-than", "10000d")
    assert far.returncode == 2 and "10000d before" in far.stderr and "days," not in far.stderr
    moved = proc("clock", "advance", "40000d")
    assert moved.returncode == 2 and "by 40000d from" in moved.stderr and "days," not in moved.stderr


def test_the_audit_of_a_reset_says_what_was_reset(cli):
    """A new user's finding: `reset --all` left no trace in the audit. Now each reset is a row
    naming the runs deleted and whether the world was rebuilt; `reset --run` names its run."""
    assert cli("class", "friday")[0] == 0
    assert cli("run", "T-90104")[0] == 0
    assert cli("reset", "--run", "T-90104-agent-chat-small-1")[0] == 0
    assert cli("reset", "--all")[0] == 0
    assert cli("reset")[0] == 0
    rows = [r for r in json.loads(cli("audit", "--json")[1]) if r["decision"] == "reset"]
    assert [r["run_id"] for r in rows] == ["T-90104-agent-chat-small-1", "*", "*"]
    assert "T-90104-agent-chat-small-1" in rows[0]["detail"]
    assert "deleted 2 run(s) (T-65273-agent-chat-small-1, T-90103-agent-chat-small-1)" in rows[1]["detail"]
    assert "rebuilt the practice world" in rows[1]["detail"] and "reset --all" in rows[1]["detail"]
    assert rows[2]["detail"].startswith("deleted 0 run(s)") and "world" not in rows[2]["detail"]
    out = cli("audit")[1]
    assert "  *  reset: deleted 2 run(s)" in out
    assert cli("audit", "verify")[0] == 0


def test_a_home_the_user_cannot_write_can_still_be_listed_shown_audited_and_backed_up(cli, monkeypatch, tmp_path):
    """A new user's finding: every read of a home the user may not write (a colleague's, a
    backup mounted read-only) stopped on "The home folder ... is read-only". Root may write any
    file, so the test makes the folder unwritable to os.access and opens its databases read-only,
    as SQLite does by itself for a file the process may not write."""
    import sqlite3 as _sqlite3

    from helpers import _real_connect

    assert cli("class", "friday")[0] == 0
    assert cli("approve", "T-90103-agent-chat-small-1", "--as", "grace")[0] == 0
    home = cli.home
    for db in home.glob("*.sqlite"):
        with _real_connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    real_access = os.access

    def access(path, mode, *args, **kwargs):
        if mode & os.W_OK and str(path).startswith(str(home)):
            return False
        return real_access(path, mode, *args, **kwargs)

    opened: list[str] = []

    def connect(database, *args, **kwargs):
        text = str(database)
        if str(home) in text:  # the product opens a file it may not write with mode=ro itself
            opened.append(Path(text.split("?")[0]).name)
        if str(home) in text and "mode=ro" not in text:
            kwargs["uri"] = True
            uri = text if text.startswith("file:") else Path(text).resolve().as_uri()
            return _real_connect(uri + ("&" if "?" in uri else "?") + "mode=ro", *args, **kwargs)
        return _real_connect(database, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(_sqlite3, "connect", connect)

    def files() -> dict[str, bytes]:  # the log and SQLite's shared-memory index (readers mark it) aside
        return {p.name: p.read_bytes() for p in home.iterdir() if p.is_file() and not p.name.endswith(("resolver.log", "-shm"))}

    before = files()
    results: list[tuple[tuple[str, ...], tuple[int, str, str]]] = []
    for argv in (
        ("runs",),
        ("runs", "--status", "waiting_approval", "--json"),
        ("show",),
        ("show", T65273_RUN),
        ("trace", T65273_RUN),
        ("diff", T65273_RUN, "T-90103-agent-chat-small-1"),
        ("changes",),
        ("audit",),
        ("audit", "verify"),
        ("backup", str(tmp_path / "copy.tar.gz")),
    ):
        # a new thread: the database helper keeps one connection per thread and file, and this
        # thread's were opened writable before the patch
        worker = threading.Thread(target=lambda argv=argv: results.append((argv, cli(*argv))))
        worker.start()
        worker.join()
    for argv, (code, out, err) in results:
        assert code == 0 and out and not err, (argv, err)
    assert len(results) == 10 and files() == before
    assert {"runs.sqlite", "larkfield.sqlite"} <= set(opened)  # every database was read through read-only connections
    code, _, err = cli("run", "T-90104")
    assert code == EXIT_ERROR and "read-only" in err


def _sentences(root: Path) -> list[tuple[str, int, str]]:
    """Every string literal of the product's modules under ``root`` that is not a docstring
    (module, class, function or attribute): the texts a person can be shown, f-strings' parts
    included. Comments are not strings."""
    import ast

    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        }
        found += [
            (str(path.relative_to(root.parent)), node.lineno, node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
        ]
    return found


def test_no_user_facing_sentence_names_an_issue_number():
    """A new user's finding: `restore` in a shop home answered with a sentence ending in a number
    from the project's tracker, which means nothing to a user. No string the product can print
    names one (the test reads only those strings, not docstrings or comments)."""
    project = Path(__file__).resolve().parent.parent.parent
    named = [
        f"{where}:{line}: {text[:80]!r}"
        for package in ("core", "resolver", "resolver_tui")
        for where, line, text in _sentences(project / package)
        if re.search(r"\bissues? #?\d+", text, re.I)
    ]
    assert not named, "\n".join(named)
    assert _sentences(project / "core"), "the scan found no string at all"
