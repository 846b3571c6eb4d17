"""Claim, hand over, set aside on the CLI: ``resolver claim``, ``handover`` and ``snooze`` checked
as decisions are (exit 4 for a refusal, 2 for a time that cannot be read), shown by ``runs`` and
``show`` with untrusted text made safe, told before approve; in a shop home signed by their maker
and verified by ``audit verify``; a home of the previous store format upgrades and its waiting run
is claimed and still approves."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from core.api.home import Home
from core.cli import main
from core.engine.marks import CLAIM_MINUTES, claim_minutes
from core.ground.clock import FixedClock
from core.stores.sqlite.files import STORE_FORMAT

from helpers import shop_cli

RUN = "T-65273-agent-chat-small-1"


@pytest.fixture
def cli(tmp_path, capsys):
    root = tmp_path / "home"

    def run(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--home", str(root)])
        out, err = capsys.readouterr()
        return code, out, err

    assert run("run", "T-65273")[0] == 0
    return run


def test_claim_handover_snooze_on_the_cli_with_refusals_as_sentences(cli):
    code, out, _ = cli("claim", RUN, "--as", "team_lead", "--name", "Tomás")
    assert code == 0 and out.startswith(f"Claimed {RUN}.\nTomás is on it (claimed ")
    code, _, err = cli("claim", RUN, "--as", "grace", "--name", "Grace")
    assert code == 4 and err.startswith("Tomás is on it (claimed ") and err.count("\n") == 1
    code, out, _ = cli("runs")
    assert out.rstrip().endswith("(claimed by Tomás)")
    code, _, err = cli("claim", RUN, "--as", "grace")
    assert code == 4 and "--name NAME" in err
    code, _, err = cli("snooze", RUN, "--as", "team_lead", "--name", "Ana", "--until", "tomorrowish")
    assert code == 2 and err.startswith("Cannot read the time 'tomorrowish'")
    code, _, err = cli("snooze", RUN, "--as", "team_lead", "--name", "Ana", "--until", "99999999h")  # a new user's trial
    assert code == 2 and "past any date resolver keeps" in err and "OverflowError" not in err
    code, _, err = cli("snooze", RUN, "--as", "team_lead", "--name", "Ana", "--until", "2020-01-01T09:00:00")
    assert code == 4 and "is not after now" in err
    code, out, _ = cli("handover", RUN, "--as", "team_lead", "--name", "Tomás", "--to", "Ana", "--note", "see [/]\x1b[31mred")
    assert code == 0 and "Handed to Ana by Tomás at " in out and ": see [/]red" in out and "\x1b" not in out
    assert cli("runs", "--mine", "--as", "grace", "--name", "Grace")[1].startswith("None of the 1 saved run(s)")
    assert cli("runs", "--mine", "--as", "team_lead", "--name", "ana")[1].startswith(RUN)
    code, out, _ = cli("snooze", RUN, "--as", "team_lead", "--name", "Ana", "--until", "2h")
    assert code == 0 and "Set aside by Ana until " in out
    assert cli("runs", "--status", "waiting_approval")[1].startswith("No runs match status waiting_approval")
    code, out, _ = cli("show", RUN)
    assert "Handed to Ana by Tomás" in out and "Set aside by Ana until " in out and "\x1b" not in out
    audit = cli("audit", RUN)[1]
    assert [w for w in ("claim by Tomás", "handover by Tomás", "snooze by Ana") if w in audit] == [
        "claim by Tomás",
        "handover by Tomás",
        "snooze by Ana",
    ]


def test_approve_tells_of_a_colleagues_claim_first_then_decides(cli):
    assert cli("claim", RUN, "--as", "team_lead", "--name", "Tomás")[0] == 0
    code, out, _ = cli("approve", RUN, "--as", "grace", "--name", "Grace")
    assert code == 0 and out.startswith("Tomás is on it (claimed ")
    assert cli("claim", RUN, "--as", "team_lead", "--name", "Tomás")[0] == 4  # settled: nothing to claim


def test_claim_minutes_comes_from_the_config_file(tmp_path, capsys, monkeypatch):
    assert claim_minutes({}) == CLAIM_MINUTES == 30 and claim_minutes({"claim_minutes": 5}) == 5
    config = tmp_path / "config.toml"
    config.write_text("claim_minutes = 0\n", encoding="utf-8")
    monkeypatch.setenv("RESOLVER_CONFIG", str(config))
    root = tmp_path / "home"
    assert main(["run", "T-65273", "--home", str(root)]) == 0
    capsys.readouterr()
    assert main(["claim", RUN, "--as", "team_lead", "--name", "Ana", "--home", str(root)]) == 4
    assert "claim_minutes must be a whole number of minutes from 1 to 1440, not 0" in capsys.readouterr().err
    config.write_text("claim_minutes = 5\n", encoding="utf-8")
    assert main(["claim", RUN, "--as", "team_lead", "--name", "Ana", "--home", str(root)]) == 0
    out = capsys.readouterr().out
    start, until = out.split("(claimed ")[1].split(")")[0].split(", until ")
    h1, m1 = map(int, start.split(":"))
    h2, m2 = map(int, until.split(":"))
    assert (h2 * 60 + m2 - h1 * 60 - m1) % 1440 == 5


ANA, GRACE = "ana-passphrase", "grace-passphrase"


def test_in_a_shop_home_marks_are_signed_by_their_maker_and_the_audit_verifies(tmp_path, capsys, monkeypatch):
    shop = shop_cli(tmp_path / "shop", capsys, monkeypatch)
    assert shop("init", "--shop")[0] == 0
    assert shop("approvers", "init", passphrase=GRACE)[0] == 0
    assert shop("approvers", "add", "Ana", "--role", "team_lead", passphrase=ANA, owner=GRACE)[0] == 0
    assert shop("run", "T-65273")[0] == 0
    code, _, err = shop("claim", RUN, "--as", "team_lead", "--name", "Ana", passphrase=ANA)
    assert code == 4 and "--as is refused in a shop home" in err
    code, _, err = shop("claim", RUN, "--name", "Zed", passphrase=ANA)
    assert code == 4 and "Zed" in err
    code, _, err = shop("claim", RUN, "--name", "Ana", passphrase="wrong")
    assert code == 4
    assert shop("claim", RUN, "--name", "Ana", passphrase=ANA)[0] == 0
    code, _, err = shop("handover", RUN, "--name", "Ana", "--to", "Nobody", "--note", "yours", passphrase=ANA)
    assert code == 4 and "Nobody" in err
    assert shop("handover", RUN, "--name", "Ana", "--to", "grace", "--note", "over 100", passphrase=ANA)[0] == 0
    assert shop("snooze", RUN, "--name", "Grace", "--until", "1h", passphrase=GRACE)[0] == 0
    conn = sqlite3.connect(tmp_path / "shop" / "runs.sqlite")
    rows = conn.execute("SELECT decision, name, detail, sig FROM audit WHERE run_id = ? ORDER BY id", (RUN,)).fetchall()
    conn.close()
    assert [(d, n) for d, n, _, _ in rows] == [("claim", "Ana"), ("handover", "Ana"), ("snooze", "Grace")]
    assert rows[1][2] == "to Grace: over 100" and all(sig for *_, sig in rows)
    code, out, err = shop("audit", "verify")
    assert code == 0 and "chain whole" in out, err
    # a note edited in the table no longer verifies: the note is signed
    conn = sqlite3.connect(tmp_path / "shop" / "runs.sqlite")
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET detail = 'to Grace: refund 1000' WHERE decision = 'handover'")
    conn.commit()
    conn.close()
    code, out, err = shop("audit", "verify")
    assert code != 0 and "its signature does not verify" in out + err, out + err


FIXTURE = Path(__file__).parent.parent / "fixtures" / "store_before_audit_tip"


def test_a_home_of_the_previous_store_format_upgrades_and_its_waiting_run_is_claimed_and_approves(tmp_path):
    """The frozen format-3 home (made by the release before the audit's stored length, see its
    README) gets ``run_marks`` on open; its waiting run takes a claim and still approves and
    executes."""
    root = tmp_path / "home"
    shutil.copytree(FIXTURE, root)
    for path in root.iterdir():
        path.chmod(0o600)
    with sqlite3.connect(root / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'run_marks'").fetchone()
    home = Home(root, clock=FixedClock("2026-10-09T17:00:00-04:00"))
    with sqlite3.connect(root / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_FORMAT == 7
    assert home.store.run_marks() == {}
    home.mark("claim", "T-65273-waiting-2", "team_lead", "Tomás")
    assert home.approve("T-65273-waiting-2", "team_lead", "Grace").status == "done"
    from core.engine.auditchain import verify_audit

    assert verify_audit(home.store).problems == []


def test_a_hand_over_to_oneself_or_with_a_note_too_long_is_refused(cli):
    """A new user's trial: ``handover RUN --name Bea --to bea`` was taken, and so was a 5,000-character note."""
    from core.engine.marks import NOTE_MAX

    code, _, err = cli("handover", RUN, "--as", "team_lead", "--name", "Bea", "--to", "bea", "--note", "yours")
    assert code == 4 and "cannot hand a run to themself" in err
    code, _, err = cli("handover", RUN, "--as", "team_lead", "--name", "Bea", "--to", "Ana", "--note", "x" * (NOTE_MAX + 1))
    assert code == 4 and f"at most {NOTE_MAX} characters" in err
    assert "to Ana" not in cli("runs")[1] and "to Bea" not in cli("runs")[1]
    code, out, _ = cli("show", RUN)
    assert "Handed to" not in out
    code, out, _ = cli("handover", RUN, "--as", "team_lead", "--name", "Bea", "--to", "Ana", "--note", "x" * NOTE_MAX)
    assert code == 0


def test_a_claim_that_ends_on_another_day_says_the_day():
    """A new user's trial: with ``claim_minutes = 1440`` the claim read "claimed 08:39, until 08:39"."""
    from core.engine.marks import RunMarks
    from core.ground.clock import parse_time

    at = parse_time("2026-10-12T08:39:00-04:00")
    later = parse_time("2026-10-13T08:39:00-04:00")
    marks = RunMarks(RUN, claimed_by="Bea", claimed_at=at, claim_until=later)
    assert marks.claim_line(at) == "Bea is on it (claimed 08:39, until 2026-10-13 08:39)."
    same_day = RunMarks(RUN, claimed_by="Bea", claimed_at=at, claim_until=parse_time("2026-10-12T09:09:00-04:00"))
    assert same_day.claim_line(at) == "Bea is on it (claimed 08:39, until 09:09)."


@pytest.mark.parametrize("decide", [("approve",), ("reject", "--reason", "a typo")])
def test_a_claim_or_snooze_of_a_decided_run_says_its_state_and_that_there_is_nothing_to_mark(cli, decide):
    """A new user's trial: a claim of a done run answered "already approved", as if the claim were
    a decision; it says the run's status and that there is nothing to claim."""
    assert cli(*decide, RUN, "--as", "grace", "--name", "Grace", "--yes")[0] in (0, 5)
    status, did = ("done", "approved") if decide[0] == "approve" else ("handed_to_person", "rejected")
    for verb, argv in (("claim", ("claim",)), ("snooze", ("snooze", "--until", "1h")), ("release", ("claim", "--release"))):
        code, out, err = cli(*argv[:1], RUN, *argv[1:], "--as", "team_lead", "--name", "Tomás")
        assert code == 4 and out == "", err
        assert err.startswith(f"Run {RUN} is {status} ({did} by Grace (role grace) at "), err
        assert err.rstrip().endswith(f"; there is nothing to {verb}. Nothing changed.") and err.count("\n") == 1, err
        assert "already" not in err


def _config(text: str) -> None:
    import os

    Path(os.environ["RESOLVER_CONFIG"]).write_text(text, encoding="utf-8")


def test_watch_without_name_is_the_config_files_name(cli):
    """A new user's trial: ``watch`` without ``--name`` ignored the config file's ``name``, so its
    position was no one's. A hand-over to Ana is hers; one to Tomás reaches her too, as it takes
    the run out of her "mine" and her role may decide it."""
    _config('name = "Ana"\n')
    assert cli("watch", "--once", "--as", "team_lead")[0] == 0
    assert cli("handover", RUN, "--as", "grace", "--name", "Grace", "--to", "Tomás", "--note", "yours")[0] == 0
    code, out, _ = cli("watch", "--once", "--as", "team_lead")
    assert code == 0 and out.endswith("handed to Tomás by Grace: yours\n"), out  # it leaves Ana's "mine": she may decide it
    assert cli("handover", RUN, "--as", "grace", "--name", "Grace", "--to", "Ana", "--note", "yours now")[0] == 0
    code, out, _ = cli("watch", "--once", "--as", "team_lead")
    assert code == 0 and out.endswith("handed to Ana by Grace: yours now\n"), out
    assert cli("watch", "--once", "--as", "team_lead", "--name", "Ana")[1] == ""  # the same watcher: its position


def test_runs_mine_in_a_shop_home_without_name_says_to_give_a_name_not_as(tmp_path, capsys, monkeypatch):
    """A new user's trial: ``runs --mine`` without ``--name`` in a shop home said "... not --as"
    when no ``--as`` was given; with the config file's name it lists that approver's runs."""
    shop = shop_cli(tmp_path / "shop", capsys, monkeypatch)
    assert shop("init", "--shop")[0] == 0
    assert shop("approvers", "init", passphrase=GRACE)[0] == 0
    assert shop("run", "T-65273")[0] == 0
    code, out, err = shop("runs", "--mine")
    assert code == 2 and out == "" and "--as" not in err and err.count("\n") == 1, err
    assert err.startswith("In a shop home --mine needs your name: --mine --name NAME")
    code, _, err = shop("runs", "--mine", "--as", "grace", "--name", "Grace")
    assert code == 2 and "not --as" in err
    _config('name = "Grace"\n')
    code, out, _ = shop("runs", "--mine")
    assert code == 0 and out.startswith(RUN), out


def test_a_failing_notify_command_is_one_sentence_with_single_spaces(cli, tmp_path):
    """A new user's trial: the notify-failure sentence had a double space (an empty stderr left
    ``: `` before the CLI's next sentence)."""
    import sys

    from core.engine.watch import Event, run_notify

    event = Event(id=7, kind="claim", run_id=RUN, at="2026-10-12T09:00:00-04:00", name="Ana")
    silent = run_notify([sys.executable, "-c", "raise SystemExit(3)"], event)
    said = run_notify([sys.executable, "-c", "import sys; sys.exit('disk full')"], event)
    assert silent == "The notify command exited 3 for event #7."
    assert said == "The notify command exited 1 for event #7: disk full."
    _config(f'notify = "{sys.executable} -c \\"raise SystemExit(3)\\""\n')
    cli("watch", "--once")
    assert cli("claim", RUN, "--as", "team_lead", "--name", "Tomás")[0] == 0
    code, _, err = cli("watch", "--once")
    assert code == 1 and "  " not in err and err.startswith("The notify command exited 3 for event #"), err
