"""The seed's stories told through the ``resolver`` command, each step a new process."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys

import pytest

from helpers import T65273_RUN, T90104_RUN


def _usage(home_dir, run_id):
    from helpers import store_at

    return store_at(home_dir / "runs.sqlite").load(run_id).usage


@pytest.mark.slow
def test_friday_to_monday_resume_shows_the_same_request_and_calls_no_model(proc):
    friday = proc("run", "T-65273")
    assert friday.returncode == 0, friday.stderr
    assert "Outcome: resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081" in friday.stdout
    assert f"Next: resolver approve {T65273_RUN} --as team_lead" in friday.stdout
    usage = _usage(proc.home, T65273_RUN)

    monday = proc("resume", T65273_RUN)
    assert monday.returncode == 0
    assert f"Resuming {T65273_RUN} (status waiting_approval)" in monday.stdout
    request = friday.stdout.split("Approval needed", 1)[1]
    assert monday.stdout.split("Approval needed", 1)[1] == request  # the same proposal, digest and all
    assert "  1. request_refund       LK-507862  119.00 CAD  RFD-DOUBLE  payment PAY-507862-2" in request
    assert "Who may approve: team lead or above" in request
    assert _usage(proc.home, T65273_RUN) == usage

    approved = proc("approve", T65273_RUN, "--as", "team_lead")
    assert approved.returncode == 0, approved.stderr
    assert f"\nRun {T65273_RUN} approved by team lead (role team lead): now done." in approved.stdout
    assert re.search(r"request_refund LK-507862: done \(operation [0-9a-f]{16}, 1 call\(s\)\)", approved.stdout)
    assert approved.stdout.strip().endswith("Status: done")
    changes = proc("changes").stdout
    assert changes.count("refund RF-") == 1 and "119.00 CAD of PAY-507862-2" in changes


@pytest.mark.slow
def test_the_weekend_phone_call_makes_the_monday_refund_fail_with_one_refund_in_the_world(proc):
    proc("run", "T-65273")
    call = proc("manual-refund", "manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    assert "RF-4CFEAE8E" in call.stdout
    monday = proc("approve", T65273_RUN, "--as", "grace", "--name", "Grace")
    assert monday.returncode == 5  # handed to a person (the documented exit codes)
    assert re.search(
        r"request_refund LK-507862: failed \(operation [0-9a-f]{16}, 1 call\(s\)\) PAY-507862-2 is not a captured charge of LK-507862",
        monday.stdout,
    )
    assert monday.stdout.strip().endswith("Status: handed_to_person")
    changes = proc("changes").stdout
    assert changes.startswith("1 change(s)") and changes.count("refund RF-") == 1


def _before_or_after(proc, point):
    run = proc("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")
    assert "Who may approve: agent or above" in run.stdout
    stopped = proc("approve", T90104_RUN, "--as", "agent", "--interrupt", point)
    assert stopped.returncode == 3
    m = re.search(
        rf"The process stopped: simulated crash {point.replace('-', ' the ')} of ([0-9a-f]{{16}})\. "
        rf"Resume with: resolver resume {T90104_RUN}",
        stopped.stdout,
    )
    assert m, stopped.stdout
    assert re.search(rf"{T90104_RUN}\s+executing", proc("runs").stdout)
    return m.group(1)


@pytest.mark.slow
def test_a_crash_before_the_write_resumes_to_one_refund_of_9_95(proc):
    op = _before_or_after(proc, "before-write")
    assert proc("changes").stdout.startswith("0 change(s)")
    resumed = proc("resume", T90104_RUN)
    assert f"Resuming {T90104_RUN} (status executing)" in resumed.stdout
    assert f"Run {T90104_RUN} reconciled and finished: executing -> done." in resumed.stdout
    assert f"request_refund LK-793996: done (operation {op}, 1 call(s))" in resumed.stdout
    assert resumed.stdout.strip().endswith("Status: done")
    assert proc("resume", T90104_RUN).stdout.strip() == "Nothing to resume: the run is done."
    changes = proc("changes").stdout
    assert changes.count("refund RF-") == 1 and "9.95 CAD of PAY-793996-1" in changes


@pytest.mark.slow
def test_a_crash_after_the_write_reconciles_and_the_refund_stays_single(proc):
    op = _before_or_after(proc, "after-write")
    assert proc("changes").stdout.count("refund RF-") == 1  # the write happened
    resumed = proc("resume", T90104_RUN)
    assert f"request_refund LK-793996: done (operation {op}, 1 call(s))" in resumed.stdout
    assert resumed.stdout.strip().endswith("Status: done")
    assert proc("changes").stdout.count("refund RF-") == 1
    trace = proc("trace", T90104_RUN).stdout
    assert "found in the register, not called again" in trace


def test_expected_errors_print_one_sentence_and_exit_1(cli):
    code, out, err = cli("resume", "T-00000-agent-chat-small-1")
    assert code == 1 and err.strip() == "No run T-00000-agent-chat-small-1. Run `resolver runs` to see the saved runs."
    code, _, err = cli("run", "T-99999")
    assert code == 1 and err.startswith("No ticket T-99999.") and "Traceback" not in err
    # a new user's trial: an escape typed before a run's ID was removed when printed, so the
    # sentence said "No run T-65273-agent-chat-small-1." beside that very run
    cli("run", "T-65273")
    for typed, odd in ((f"\x1b[31m{T65273_RUN}", "U+001B"), (f"{T65273_RUN}\u200b", "U+200B")):
        code, _, err = cli("show", typed)
        assert code == 1 and f"invisible or control character ({odd})" in err and "type it as plain text" in err, err
    with sqlite3.connect(cli.home / "runs.sqlite") as conn:
        conn.execute("UPDATE runs SET state = '{broken'")
    code, out, err = cli("approve", T65273_RUN, "--as", "grace")
    assert code == 1 and "is corrupt" in err and len(err.strip().splitlines()) == 1
    code, out, _ = cli("runs")
    assert "(corrupt checkpoint)" in out


def test_reject_needs_a_reason_and_hands_the_run_to_a_person(cli):
    cli("run", "T-65273")
    code, _, err = cli("reject", T65273_RUN, "--as", "agent", "--reason", "  ")
    assert code == 4 and "needs a reason" in err
    code, _, err = cli("reject", T65273_RUN, "--as", "agent", "--name", "Amira", "--reason", "Refunded by phone")
    assert code == 4 and "needs team lead or above" in err  # a reject needs the proposal's role
    code, out, _ = cli(
        "reject", T65273_RUN, "--as", "team_lead", "--name", "Amira", "--reason", "Customer already refunded by phone"
    )
    assert code == 0 and (f"\nRun {T65273_RUN} rejected by Amira (role team lead): Customer already refunded by phone" in out)
    assert out.strip().endswith("Status: handed_to_person")
    code, _, err = cli("approve", T65273_RUN, "--as", "grace")
    assert code == 4 and "already rejected by Amira (role team lead) at 2026-" in err


def test_diff_compares_two_runs_of_the_planter_line_by_line(cli):
    cli("run", "T-90103", "--repeat", "1")
    cli("run", "T-90103", "--repeat", "2")
    code, out, _ = cli("diff", "T-90103-agent-chat-small-1", "T-90103-agent-chat-small-2")
    assert code == 0
    assert "  reship_item LK-640436 PLANTER x 1" in out
    assert "- create_return_label LK-640436 PLANTER reason damaged (return shipping: free)" in out
    code, out, _ = cli("runs", "--json")
    assert code == 0 and '"T-90103-agent-chat-small-2"' in out


def test_reset_all_rebuilds_the_world(cli):
    cli("run", "T-65273")
    cli("manual-refund", "manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    code, out, _ = cli("reset", "--all")
    assert code == 0 and "Deleted 1 saved run(s)" in out
    assert cli("changes")[1].startswith("0 change(s)")
    assert cli("runs")[1].startswith("No saved runs.")


def test_a_locked_database_gives_a_clear_sentence_and_loses_nothing(cli, monkeypatch):
    from core.stores.sqlite import database

    cli("run", "T-65273")
    monkeypatch.setattr(database, "BUSY_TIMEOUT_S", 0.2)  # where the connections read it
    holder = sqlite3.connect(cli.home / "runs.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        code, out, err = cli("approve", T65273_RUN, "--as", "grace")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 1 and re.search(r"stayed locked by another process for 0\.\d s", err) and "Traceback" not in err
    code, out, _ = cli("resume", T65273_RUN)
    assert "(status waiting_approval)" in out
    assert cli("approve", T65273_RUN, "--as", "grace")[0] == 0


def test_escape_sequences_in_customer_text_never_reach_the_terminal(cli):
    from core.ground.data import load_task

    assert "\x1b" in load_task("T-17910").message
    code, out, _ = cli("run", "T-17910", "--repeat", "1")
    assert code == 0 and "\x1b" not in out and "\x07" not in out
    assert 'Ticket: "late delivery" from' in out  # the sequence removed, the words kept
    code, out, _ = cli("run", "T-70463", "--repeat", "1")  # a reply only that quotes the escape
    assert code == 0 and "RED ALERT" in out and "\x1b" not in out


def test_bad_input_found_by_a_new_user_gives_one_sentence(cli, tmp_path):
    """Regressions: each of these once printed a traceback."""
    for amount in ("abc", "NaN", "Infinity", "1e400"):
        code, _, err = cli("manual-refund", "m1", "LK-507862", amount, "RFD-DOUBLE", "PAY-507862-1")
        assert code == 2 and "is not an amount in CAD" in err and "Traceback" not in err, amount
    code, _, err = cli("clock", "set", "0001-01-01T00:00:00+00:00")
    assert code == 2 and "outside the times resolver supports" in err  # a time outside the supported range: exit 2
    code, _, err = cli("clock", "advance", "100000000d")
    assert code == 2 and "leaves the times resolver supports" in err
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    from core.cli import main

    assert main(["runs", "--home", str(a_file)]) == 1


def test_an_amount_that_is_not_a_number_in_a_checkpoint_is_corrupt(cli):
    cli("run", "T-65273")
    with sqlite3.connect(cli.home / "runs.sqlite") as conn:
        conn.execute('UPDATE runs SET state = replace(state, \'"amount":"119.00"\', \'"amount":"abc"\')')
    code, _, err = cli("show", T65273_RUN)
    assert code == 1 and "does not match the TaskState schema" in err and "Traceback" not in err
    code, _out, _ = cli("reset", "--run", T65273_RUN)
    assert code == 0 and cli("runs")[1].startswith("No saved runs.")


def test_an_operation_id_names_one_call_only(cli):
    assert cli("manual-refund", "m2", "LK-507862", "5", "RFD-DOUBLE", "PAY-507862-1")[0] == 0
    assert cli("manual-refund", "m2", "LK-507862", "5", "RFD-DOUBLE", "PAY-507862-1")[0] == 0  # the same call: idempotent
    code, _, err = cli("manual-refund", "m2", "LK-507862", "6", "RFD-DOUBLE", "PAY-507862-1")
    assert code == 1 and "was already used for another call" in err
    assert cli("changes")[1].startswith("1 change(s)")


def test_search_wildcards_are_literal_and_no_match_says_so(cli):
    cli("run", "T-65273")
    assert cli("runs", "--search", "%")[1].startswith("No runs match '%'; 1 run(s) saved in all.")
    assert cli("runs", "--search", "_")[1].startswith("No runs match")
    assert T65273_RUN in cli("runs", "--search", "maya")[1]


def test_the_trainer_clock_moves_forward_and_back(cli):
    shown = cli("clock", "set", "2026-10-09T17:00:00-04:00")[1].strip()
    assert shown.startswith("Clock: 2026-10-09T17:0") and shown.endswith("(simulated)")
    assert cli("clock", "advance", "2d16h")[1].startswith("Clock: 2026-10-12T09:00:")
    assert cli("clock", "advance", "back 2d16h")[1].startswith("Clock: 2026-10-09T17:00:")
    code, _, err = cli("clock", "advance", "soon")
    assert code == 2 and "Cannot read the duration" in err
    assert cli("clock", "real")[1].strip().endswith("(real)")


def test_the_parser_spells_the_statuses_and_roles_of_core():
    from core import cli
    from core.ground.data import ROLES
    from core.ground.state import STATUSES

    assert cli.STATUSES == STATUSES and cli.ROLES == ROLES


def test_help_imports_neither_pydantic_nor_sqlite():
    """``resolver --help`` loads only what it needs, so it answers at once: the commands import
    lazily."""
    code = (
        "import sys, runpy\n"
        "sys.argv = ['resolver', '--help']\n"
        "try:\n    runpy.run_module('core', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('pydantic', 'sqlite3', 'sqlite_utils', 'core.ground.state', 'core.api.home') if m in sys.modules)\n"
        "print('HEAVY', ','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "usage: resolver" in out and "simulate a crash" not in out
    assert out.strip().splitlines()[-1] == "HEAVY", out


def test_interrupt_help_says_it_simulates_a_crash(cli, capsys):
    from core.cli import main

    with pytest.raises(SystemExit):
        main(["approve", "--help"])
    assert "simulate a crash" in " ".join(capsys.readouterr().out.split())


def test_runs_prints_page_by_page_and_json_stays_one_array(cli, monkeypatch):
    import json

    from core.api.listing import ListingQueue

    for repeat in ("1", "2", "3"):
        cli("run", "T-90103", "--repeat", repeat)
    pages: list[int] = []

    def counting(real):
        def pages_of(self, *args, **kwargs):
            for page in real(self, *args, **{**kwargs, "limit": 2}):
                pages.append(len(page.rows))
                yield page

        return pages_of

    # `resolver runs` on a current store reads through core.api.listing: printed columns for lines, summaries for JSON
    monkeypatch.setattr(ListingQueue, "pages", counting(ListingQueue.pages))
    monkeypatch.setattr(ListingQueue, "printed_pages", counting(ListingQueue.printed_pages))
    code, out, _ = cli("runs")
    assert code == 0 and pages == [2, 1] and len(out.strip().splitlines()) == 3
    pages.clear()
    code, out, _ = cli("runs", "--json")
    assert code == 0 and sorted(r["run_id"] for r in json.loads(out)) == [f"T-90103-agent-chat-small-{n}" for n in (1, 2, 3)]
    code, out, _ = cli("runs", "--limit", "2", "--json")
    assert len(json.loads(out)) == 2


def test_resolver_tui_passes_every_app_option_through(tmp_path, monkeypatch):
    """A new user's finding: `resolver tui --as grace --name G` said "unrecognized arguments"."""
    import core.cli

    class Execed(Exception):
        pass

    def execv(_exe: str, argv: list[str]) -> None:
        raise Execed(argv)

    monkeypatch.setattr(core.cli.os, "execv", execv)
    home = str(tmp_path / "home")
    for argv, app_argv in (
        (
            ["tui", "--as", "grace", "--name", "G", "--trainer", "--home", home],
            ["--as", "grace", "--name", "G", "--trainer", "--home", home],
        ),
        (["--home", home, "tui", "--version"], ["--home", home, "--version"]),
    ):
        with pytest.raises(Execed) as execed:
            core.cli.main(argv)
        called = execed.value.args[0]
        assert called[called.index("resolver_tui") + 1 :] == app_argv
    assert not (tmp_path / "home").exists()  # the app decides about its home, not the command line
    with pytest.raises(SystemExit) as refused:  # any other command still refuses an option it does not take
        core.cli.main(["runs", "--trainer", "--home", home])
    assert refused.value.code == 2


def test_runs_sort_and_mine_as_the_app_does(cli):
    """`resolver runs` had neither the app's sorts nor its "mine" filter: --sort takes the
    queue's sorts, --mine lists the waiting runs the approver (--as, or --name in a shop home)
    may approve, and --as without --mine is a bad value (exit 2)."""
    import json

    assert cli("class", "friday")[0] == 0
    assert cli("run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong")[0] == 0
    amounts = [r["amount_cents"] for r in json.loads(cli("runs", "--sort", "amount", "--json")[1])]
    assert amounts == sorted(amounts, reverse=True) and len(amounts) == 3
    code, out, _ = cli("runs", "--mine", "--as", "agent")
    mine = sorted(line.split()[0] for line in out.splitlines())
    assert code == 0 and mine == ["T-90103-agent-chat-small-1", "T-90104-agent_structured-chat-strong-1"]  # not T-65273
    code, out, _ = cli("runs", "--mine", "--as", "team_lead", "--sort", "role")
    assert code == 0 and len(out.splitlines()) == 3 and out.splitlines()[0].startswith("T-65273")  # team lead first
    assert cli("runs", "--as", "agent")[0] == 2
    assert cli("runs", "--mine")[0] == 2
    with pytest.raises(SystemExit) as bad:  # argparse's own refusal of a choice
        cli("runs", "--sort", "price")
    assert bad.value.code == 2
    from core.cli import SORTS as CLI_SORTS
    from core.contract.store import SORTS

    assert set(CLI_SORTS) == set(SORTS)


def test_audit_name_lists_one_approvers_rows(cli):
    import json

    assert cli("class", "friday")[0] == 0
    assert cli("reject", "T-90103-agent-chat-small-1", "--as", "grace", "--name", "Grace", "--reason", "no")[0] == 0
    assert cli("reject", "T-65273-agent-chat-small-1", "--as", "team_lead", "--name", "Tomás", "--reason", "no")[0] == 0
    rows = json.loads(cli("audit", "--name", "Tomás", "--json")[1])
    assert [(r["run_id"], r["name"]) for r in rows] == [("T-65273-agent-chat-small-1", "Tomás")]
    code, out, _ = cli("audit", "--name", "Grace")
    assert code == 0 and out.startswith("1 decision(s) in the audit by Grace")


def test_audit_name_compares_names_as_everywhere_and_prints_them_as_typed(cli):
    """A new user's finding: ``audit --name tomás`` found nothing for Tomás, and the header
    printed ``by Tom\\xe1s``."""
    import json

    assert cli("class", "friday")[0] == 0
    assert cli("reject", "T-65273-agent-chat-small-1", "--as", "team_lead", "--name", "Tomás", "--reason", "no")[0] == 0
    for typed in ("tomás", "TOMÁS", " Tomás", "Toma\u0301s"):
        rows = json.loads(cli("audit", "--name", typed, "--json")[1])
        assert [r["name"] for r in rows] == ["Tomás"], typed
    code, out, _ = cli("audit", "--name", "Tomás")
    assert code == 0 and out.startswith("1 decision(s) in the audit by Tomás\n"), out


def test_audit_name_leaves_out_the_owners_registry_rows_that_name_an_approver(tmp_path, capsys, monkeypatch):
    """A new user's finding: ``audit --name Tomás`` counted the owner's ``registry:add`` row of
    Tomás as a decision of his."""
    import json

    from helpers import shop_cli

    shop = shop_cli(tmp_path / "shop", capsys, monkeypatch)
    assert shop("init", "--shop")[0] == 0
    assert shop("approvers", "init", "--name", "Grace", passphrase="grace-passphrase")[0] == 0
    assert (
        shop("approvers", "add", "Tomás", "--role", "team_lead", passphrase="tomas-passphrase", owner="grace-passphrase")[0] == 0
    )
    assert [r["decision"] for r in json.loads(shop("audit", "--json")[1])] == ["registry:init", "registry:add"]
    code, out, _ = shop("audit", "--name", "Tomás")
    assert code == 0 and out.startswith("0 decision(s) in the audit by Tomás"), out


@pytest.mark.parametrize("name", ["Gr\x1b[31mace", "Gr\u200bace", "\u202eecarG", "Gr\x00ace"])
def test_a_name_with_an_escape_or_an_invisible_character_is_refused_on_every_face(cli, name):
    """A new user's finding: such names were stored as typed, so the audit held a "Grace" that
    is not Grace's name."""
    from core.api.home import Home
    from core.ground.errors import ApprovalRefused

    assert cli("run", "T-65273")[0] == 0
    code, _, err = cli("approve", "--yes", "T-65273-agent-chat-small-1", "--as", "grace", "--name", name)
    assert code == 4 and "invisible or control character" in err, err
    code, _, err = cli("reject", "--yes", "T-65273-agent-chat-small-1", "--as", "grace", "--name", name, "--reason", "no")
    assert code == 4 and "invisible or control character" in err, err
    home = Home(cli.home)
    with pytest.raises(ApprovalRefused, match="invisible or control character"):  # the app's path: core itself
        home.reject("T-65273-agent-chat-small-1", "grace", "no", name)
    assert home.queue.load("T-65273-agent-chat-small-1").status == "waiting_approval"
    assert [r for r in home.store.audit() if r["decision"] in ("approve", "reject")] == []
