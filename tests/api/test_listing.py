"""``resolver runs`` through :mod:`core.api.listing` (the fast start-up path): the same rows in the
same order as the home's queue, no pydantic imported, and an older store still opened by the whole
home."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from core.api.home import Home
from core.api.listing import listing_home

from helpers import copy_frozen_home


def test_listing_pages_are_the_queues_pages(home: Home):
    for repeat in (1, 2, 3):
        home.run("T-90103", repeat=repeat)
    home.run("T-65273")
    light = listing_home(home.root)
    assert light is not None
    for status in (None, "waiting_approval", "done"):
        want = [r for p in home.queue.pages(status, limit=2) for r in p.rows]
        got = [r for p in light.queue.pages(status, limit=2) for r in p.rows]
        assert got == want
    assert light.queue.total() == home.queue.total() == 4


def test_runs_imports_no_model(home: Home):
    home.run("T-90103")
    code = (
        "import sys; from core.cli import main; main(['runs', '--home', sys.argv[1]]); "
        "print(sorted(m for m in ('pydantic', 'sqlite_utils', 'core.ground.state', 'core.api.home') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(home.root)], capture_output=True, text=True, check=True).stdout
    assert "T-90103-agent-chat-small-1" in out and out.strip().splitlines()[-1] == "[]", out


def test_an_older_store_is_opened_by_the_whole_home(tmp_path, capsys):
    from core.cli import main

    root = copy_frozen_home(tmp_path / "old")
    assert listing_home(root) is None  # release 0.1.0's format: the home migrates it first
    assert main(["runs", "--home", str(root)]) == 0
    conn = sqlite3.connect(root / "runs.sqlite")
    try:
        assert (
            conn.execute("PRAGMA user_version").fetchone()[0] == 7
        )  # format 4 (checksums), 5 (the marks), 6 (its refresh event), 7 (the journal's seals)
    finally:
        conn.close()
    assert listing_home(root) is not None and capsys.readouterr().out.strip()


def test_runs_prints_from_tuples_the_lines_of_the_whole_queue(home: Home, monkeypatch, capsys):
    """The light listing reads the four printed columns as tuples, in every sort and page, and
    never builds a summary per run; its lines are the whole home's."""
    from core.cli import cmd_runs, main
    from core.stores.sqlite.checkpoint import CheckpointStore

    for repeat in (1, 2, 3):
        home.run("T-90103", repeat=repeat)
    home.run("T-65273")
    argv = ["runs", "--home", str(home.root)]
    for extra in ([], ["--sort", "amount"], ["--status", "waiting_approval"], ["--search", "9010"], ["--limit", "2"]):
        monkeypatch.setattr(CheckpointStore, "_summary", staticmethod(lambda row: pytest.fail("a summary was built")))
        assert main([*argv, *extra]) == 0
        light = capsys.readouterr().out
        monkeypatch.undo()
        args = build(argv + extra)
        cmd_runs(home, args)  # the whole home's queue: summaries
        assert light == capsys.readouterr().out and light.count("\n") >= 2, extra


def build(argv: list[str]):
    from core.cli import parse_args

    return parse_args(argv, "resolver")


def test_a_page_of_lines_is_made_safe_line_by_line():
    """An escape sequence left open in one run's line never eats the lines after it."""
    from core.ground.safetext import safe_lines

    lines = ["R-1 \x1b]0;title done", "R-2 waiting", "R-3\u202e done"]
    assert safe_lines(lines) == "R-1 \nR-2 waiting\nR-3 done\n"
    assert safe_lines(["a", "b"]) == "a\nb\n" and safe_lines([]) == ""


def test_cells_counts_ascii_as_the_general_rule_does():
    """The ASCII fast path of :func:`core.ground.safetext.cells` (the pane folds its lines at every key)
    gives what the per-character rule gives, control characters included."""
    import string

    from core.ground.safetext import cells

    def by_rule(text: str) -> int:
        return sum(cells(ch + "é") - 1 for ch in text)  # each character measured on the general path

    for text in (string.printable, "T-65273-agent-chat-small-1", "\x00\x1b[31m", ""):
        assert cells(text) == by_rule(text) == len(text)
    assert cells("García") == 6 and cells("漢字") == 4 and cells("e\u0301") == 1


def test_cut_keeps_to_the_rule_on_its_ascii_path_and_with_its_kept_widths():
    """``_cut`` (how much of a line fits a row of the pane, folded at every key) takes an ASCII
    line by its length and a wider one by the widths it keeps per character; both give what
    measuring character by character with :func:`cells` gives, at every width."""
    from core.ground.safetext import _cut, _cut_measured, cells

    def by_rule(text: str, width: int) -> int:
        return _cut_measured(text, width, cells)  # each character measured by the general rule

    texts = ["", "a", "Refund 119.00 CAD to the card", "Ōtsuka 大塚 e\u0301 — │ ↳ 漢字", "e\u0301\u0301x", "\x1b[31m"]
    for text in texts:
        for width in range(-1, len(text) * 2 + 2):
            assert _cut(text, width) == by_rule(text, width), (text, width)


def _plans(path, status: str | None) -> str:
    """The query plan of the listing's first page for ``status`` (``None``: every run)."""
    from core.stores.sqlite.checkpoint import CheckpointStore

    sql, params = CheckpointStore._page_sql("run_id, status, updated_at, state_ok, updated_ts", status, None, None, None, None)
    conn = sqlite3.connect(path)
    try:
        return " ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, (*params, 1000)))
    finally:
        conn.close()


def test_the_listing_reads_its_lines_from_a_covering_index(home: Home):
    """Every printed column is in the index of the listing's filter and order, so a line never
    reads the run's row (``state_ok``, after the header's JSON, walked its overflow pages)."""
    home.run("T-90103")
    for status in ("waiting_approval", None):
        plan = _plans(home.store.path, status)
        assert "COVERING INDEX idx_runs_listing_" in plan and "TEMP B-TREE" not in plan, (status, plan)


def test_a_store_of_format_3_gets_the_covering_indexes_in_its_migration(tmp_path):
    """The frozen format-3 home (``tests/fixtures/store_format_3``, made by the release before)
    has the narrow indexes of the same order; its migration to format 5 replaces them in the
    same transaction, and the listing then reads its lines from the covering one."""
    import shutil

    from core.cli import main
    from core.stores.sqlite.checkpoint import LISTING_INDEXES

    root = tmp_path / "home"
    shutil.copytree(
        Path(__file__).parent.parent / "fixtures" / "store_format_3", root, ignore=shutil.ignore_patterns("README.md")
    )
    for p in root.iterdir():
        p.chmod(0o600)
    path = root / "runs.sqlite"

    def names() -> set[str]:
        conn = sqlite3.connect(path)
        try:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        finally:
            conn.close()

    assert {"idx_runs_status_updated_ts_run_id", "idx_runs_updated_ts_run_id"} <= names()
    assert not set(LISTING_INDEXES) & names()
    Home(root).store.db.close()  # opened for writing once: migrated
    assert set(LISTING_INDEXES) <= names()
    assert not names() & {"idx_runs_status_updated_ts_run_id", "idx_runs_updated_ts_run_id"}
    assert "COVERING INDEX idx_runs_listing_status" in _plans(path, "waiting_approval")
    assert main(["runs", "--home", str(root)]) == 0


def test_a_header_made_not_json_with_a_new_version_is_not_offered_as_mine(cli):
    """A trial's finding against a store format 7 that was reverted (its trigger skipped
    ``json_valid`` when an UPDATE moved the version, to spare a save's parse): a header overwritten
    with text that is not JSON together with a new version (a hand edit, a damaged restore) was
    listed as a sound waiting run, under ``runs --mine`` too, until some face loaded it. docs/app.md:
    a run whose checkpoint cannot be read is marked corrupt, never waiting."""
    from core.ground.clock import FixedClock

    home = Home(cli.home, clock=FixedClock("2026-10-09T17:00:00-04:00"))
    state = home.run("T-65273")
    conn = sqlite3.connect(home.store.path)
    with conn:
        conn.execute("UPDATE runs SET state = 'not json', version = version + 1 WHERE run_id = ?", (state.run_id,))
    conn.close()
    code, out, err = cli("runs", "--mine", "--as", "team_lead", "--name", "Tomás")
    assert code == 0, err
    assert state.run_id not in out, out
    code, out, err = cli("runs")
    assert code == 0 and "corrupt" in out, out
