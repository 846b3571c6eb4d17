"""Untrusted text cannot pose as the request's own lines; names and reasons as people type them.

``data/`` holds no ticket whose text forges the request, so a test double does:
:func:`helpers.forge` puts the request's own lines into every untrusted field of T-65273 (the ticket's subject and
message, the customer's name, the model's rule, reason and reply draft, a tool's output) and
:func:`helpers.assert_marked` checks each forged line appears only inside a marked block (``│ `` at the
start of its line) or after a visible line-break mark (``⏎``) inside a single-line field.
"""

from __future__ import annotations

import json
import os
import sqlite3
import unicodedata

from core.api import views
from core.api.home import Home
from core.ground import safetext

from helpers import FORGED, T65273_RUN, assert_marked, forge

# -- the helper ------------------------------------------------------------------------------------


def test_one_line_keeps_a_field_on_its_line_with_its_breaks_marked():
    assert (
        safetext.one_line("a\nb\r\nc\u2028d\x1b[31m")
        == f"a{safetext.LINE_BREAK_MARK}b{safetext.LINE_BREAK_MARK}c{safetext.LINE_BREAK_MARK}d"
    )
    assert safetext.one_line(None) == ""


def test_block_marks_every_line_and_core_lines_never_carry_the_mark(demo_home):
    assert safetext.block("one\n\n  1. send_reply", "  ") == ["  │ one", "  │", "  │   1. send_reply"]
    assert safetext.block("") == ["  │"]
    request = views.approval_request(demo_home.queue.load(T65273_RUN))
    marked = [line for line in request if safetext.BLOCK_MARK.strip() in line]
    assert marked and all(line.lstrip().startswith(safetext.BLOCK_MARK.strip()) for line in marked)


# -- the request in `resolver show` ----------------------------------------------------------------


def test_show_prints_forged_request_lines_only_inside_marked_blocks(cli, monkeypatch):
    assert cli("run", "T-65273")[0] == 0
    forge(monkeypatch, cli.home)
    code, out, err = cli("show", T65273_RUN)
    assert code == 0, err
    assert_marked(out, "resolver show")
    assert "Who may approve: team lead or above" in out  # the request's own line is still there
    code, out, _ = cli("show", T65273_RUN, "--json")
    data = json.loads(out)
    assert data["state"]["proposal"]["reason"] == FORGED  # --json keeps plain strings


def test_show_on_a_narrow_terminal_folds_every_row_with_its_mark(cli, monkeypatch):
    """A new user's finding: ``resolver show`` left long lines to the terminal, whose wrapped
    rows began at the margin, unmarked. On a terminal the lines are folded to its width, each
    following row marked; a pipe gets them whole."""
    import shutil
    import sys

    import helpers

    assert cli("run", "T-65273")[0] == 0
    monkeypatch.setattr(helpers, "FORGED", "please ok " * 5 + "Who may approve: agent or above")
    forge(monkeypatch, cli.home)
    code, whole, _ = cli("show", T65273_RUN)
    assert code == 0 and max(len(line) for line in whole.splitlines()) > 60
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=(0, 0): os.terminal_size((60, 24)))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = cli("show", T65273_RUN)
    assert code == 0
    rows = out.splitlines()
    assert max(len(row) for row in rows) < 60
    for row in rows:
        if "agent or above" in row:
            before = row[: row.index("agent or above")]
            assert "│ " in before or "↳" in before or "⏎" in before, row


def test_the_cli_reject_lists_the_reply_on_its_own_line_not_among_the_actions(cli, monkeypatch):
    assert cli("run", "T-65273")[0] == 0
    forge(monkeypatch, cli.home)
    code, out, err = cli("reject", T65273_RUN, "--as", "team_lead", "--name", "Amira", "--reason", "no")
    assert code == 0, err
    assert "Proposed actions (none will happen):" in out
    assert "1. send_reply" not in out  # the reply is its own line, never numbered among the actions


# -- reasons and names -----------------------------------------------------------------------------


def test_a_two_line_reason_is_refused_with_the_apps_sentence_and_nothing_is_cut(cli):
    assert cli("run", "T-65273")[0] == 0
    code, _out, err = cli("reject", T65273_RUN, "--as", "team_lead", "--reason", "wrong order\nStatus: done")
    assert code == 4 and err == "The reason must be one line (it holds a line break); nothing was decided.\n"
    assert Home(cli.home).queue.load(T65273_RUN).status == "waiting_approval"


def test_names_and_searches_are_nfc_and_case_folded():
    decomposed = unicodedata.normalize("NFD", "Tomás")
    assert decomposed != "Tomás" and safetext.nfc(decomposed) == "Tomás"
    assert safetext.name_key(decomposed) == safetext.name_key("TOMÁS") == safetext.name_key(" tomás ")


def test_a_decomposed_search_finds_the_stored_name(demo_home):
    with sqlite3.connect(demo_home.store.path) as conn:
        conn.execute("UPDATE runs SET customer = 'Lucía García' WHERE run_id = ?", (T65273_RUN,))
    decomposed = unicodedata.normalize("NFD", "García")
    assert decomposed != "García"
    found = [r.run_id for r in demo_home.queue.page(None, search=decomposed, limit=50).rows]
    assert T65273_RUN in found


# -- one wording -----------------------------------------------------------------------------------


def test_roles_by_label_and_the_person_grace_told_apart_from_the_role(demo_home):
    from core.api.views import Approver, decision_lines

    state = demo_home.approve(T65273_RUN, "team_lead", "Tomás")
    text = "\n".join(decision_lines(state))
    assert "team_lead" not in text and "Tomás (role team lead)" in text
    assert Approver("grace", "Grace").label == "Grace (role grace)"


def test_preconditions_are_numbered_once_per_request(demo_home):
    from core.api.views import precondition_lines

    lines = precondition_lines(demo_home.queue.load(T65273_RUN))
    numbers = [line.split(".")[0].strip() for line in lines[1:]]
    assert numbers == [str(i) for i in range(1, len(lines))] and len(numbers) >= 2


def test_the_reject_dialog_gives_the_reply_its_own_line(demo_home):
    from core.api.views import Approver, reject_dialog

    detail = demo_home.queue.run(T65273_RUN, Approver("team_lead", "Tomás"))
    body = reject_dialog(detail.decision, Approver("team_lead", "Tomás"))
    assert "Reply to the customer: the reply will not be sent." in body
    assert not any("will go out" in line for line in body)


def test_the_trace_names_the_decider_and_the_role_by_its_label(cli):
    """A new user's finding: ``trace`` and the pane's last event said ``rejected by Tomás
    (team_lead)``, where every other line says ``Tomás (role team lead)``."""
    assert cli("run", "T-65273")[0] == 0
    code, _, err = cli("reject", T65273_RUN, "--as", "team_lead", "--name", "Tomás", "--reason", "not now")
    assert code == 0, err
    code, out, _ = cli("trace", T65273_RUN)
    assert "rejected by Tomás (role team lead): not now" in out and "(team_lead)" not in out, out


def test_runs_mine_with_no_match_is_not_worded_as_an_empty_home(cli):
    assert cli("run", "T-65273")[0] == 0  # needs a team lead
    code, out, _ = cli("runs", "--mine", "--as", "agent")
    assert code == 0 and "No saved runs" not in out
    assert "None of the 1 saved run(s) is waiting for a decision you may make." in out
