"""SQLite store format 7 (issue 27, item 2): the trigger that flags a header that is not JSON
(``runs_state_update``) skips an update that moves the version, as every save's compare-and-set
does, so SQLite no longer parses each header a save writes (pydantic wrote it). A home of format 6
(``tests/fixtures/home_store_format_6``, made by the release before with a run waiting, a run
interrupted after its first step and a claim) is upgraded when opened: the interrupted run
resumes, the waiting run is approved, and a header overwritten outside a save is still flagged."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from core.clock import FixedClock
from core.errors import CorruptCheckpoint
from core.home import Home
from core.stores.sqlite.checkpoint import STORE_FORMAT

FIXTURES = Path(__file__).parent / "fixtures"
FRIDAY = "2026-10-09T17:00:00-04:00"
WAITING = "T-65273-agent-chat-small-1"
INTERRUPTED = "T-65273-interrupted"


def _trigger(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'runs_state_update'").fetchone()
    conn.close()
    return row[0]


def _format_6_home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    shutil.copytree(FIXTURES / "home_store_format_6", root, ignore=shutil.ignore_patterns("README.md"))
    for path in root.iterdir():
        path.chmod(0o600)
    return root


def test_a_format_6_home_is_upgraded_to_7_and_its_runs_resume_and_approve(tmp_path):
    root = _format_6_home(tmp_path)
    with sqlite3.connect(root / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 6
        before = conn.execute("SELECT name, sql FROM sqlite_master WHERE name != 'runs_state_update' ORDER BY name").fetchall()
    conn.close()
    assert "NEW.version IS OLD.version" not in _trigger(root / "runs.sqlite")
    home = Home(root, clock=FixedClock(FRIDAY))
    with sqlite3.connect(root / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_FORMAT == 7
        after = conn.execute("SELECT name, sql FROM sqlite_master WHERE name != 'runs_state_update' ORDER BY name").fetchall()
    conn.close()
    assert after == before  # the one trigger replaced, nothing else
    assert "NEW.version IS OLD.version AND json_valid(NEW.state) = 0" in _trigger(root / "runs.sqlite")
    assert home.store.run_marks()[WAITING]["claimed_by"] == "Grace"
    resumed = home.resume(INTERRUPTED)
    assert (resumed.kind, resumed.state.status) == ("continued", "waiting_approval")
    done = home.approve(WAITING, "team_lead", "Tomás")
    assert done.status == "done" and all(op.status == "done" for op in done.operations)
    assert Home(root, clock=FixedClock(FRIDAY)).store.load(WAITING).status == "done"


def test_an_upgraded_home_still_flags_a_header_overwritten_outside_a_save(tmp_path):
    root = _format_6_home(tmp_path)
    home = Home(root, clock=FixedClock(FRIDAY))
    home.store.overwrite_checkpoint(WAITING, lambda text: text[:200])  # a cut header, the version kept
    assert {s.run_id: s.state_ok for s in home.store.page()}[WAITING] is False
    with pytest.raises(CorruptCheckpoint):
        home.store.load(WAITING)


def test_a_save_is_not_parsed_again_but_an_edit_that_keeps_the_version_is(tmp_path):
    """The trigger's rule in format 7: an update of the header that keeps the version (SQL outside
    a save) is checked with ``json_valid``; one that moves it (a save: pydantic's JSON, under its
    compare-and-set) is not. A header that is not JSON written with a new version is still caught
    when it is read: the load flags the run corrupt."""
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    with sqlite3.connect(home.store.path) as conn:
        conn.execute("UPDATE runs SET state = 'not json', version = version + 1 WHERE run_id = ?", (state.run_id,))
        assert conn.execute("SELECT state_ok FROM runs WHERE run_id = ?", (state.run_id,)).fetchone()[0] == 1
        conn.execute("UPDATE runs SET state = 'still not json' WHERE run_id = ?", (state.run_id,))
        assert conn.execute("SELECT state_ok FROM runs WHERE run_id = ?", (state.run_id,)).fetchone()[0] == 0
        conn.execute("UPDATE runs SET state_ok = 1 WHERE run_id = ?", (state.run_id,))
    conn.close()
    with pytest.raises(CorruptCheckpoint):
        home.store.load(state.run_id)
    assert {s.run_id: s.state_ok for s in home.store.page()}[state.run_id] is False


def test_a_new_store_is_made_at_format_7_with_the_trigger(tmp_path):
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    home.run("T-65273")
    assert "NEW.version IS OLD.version AND json_valid(NEW.state) = 0" in _trigger(home.store.path)
