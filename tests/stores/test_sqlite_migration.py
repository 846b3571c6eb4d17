"""A home saved by release 0.1.0 (``tests/fixtures/home_0_1_0``, frozen) loads, resumes and
approves after the store moved to header and rows (store format 2)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from core.api.home import Home
from core.ground.state import migrate
from core.stores.sqlite.files import STORE_FORMAT

from helpers import FROZEN_0_1_0, copy_frozen_home, run_process, store_at

T65273 = "T-65273-agent-chat-small-1"
T90103 = "T-90103-agent-chat-small-1"
BEFORE_WRITE = "T-90104-agent_structured-chat-strong-1"  # crashed before its refund: operation 550ac48b8b6eeead
AFTER_WRITE = "T-90104-agent_structured-chat-strong-2"  # crashed after it: 60f02750db887a88, RF-002D0EF2


@pytest.fixture
def old_home(tmp_path) -> Path:
    return copy_frozen_home(tmp_path / "home")


def _refunds(root: Path) -> list[tuple]:
    with sqlite3.connect(root / "larkfield.sqlite") as conn:
        return conn.execute("SELECT refund_id, operation_id, amount FROM refunds ORDER BY refund_id").fetchall()


def test_the_frozen_home_is_release_0_1_0s_format():
    with sqlite3.connect(FROZEN_0_1_0 / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
        assert "message" in {r[1] for r in conn.execute("PRAGMA table_info(events)")}
        whole = json.loads(conn.execute("SELECT state FROM runs WHERE run_id = ?", (T65273,)).fetchone()[0])
    assert {"messages", "evidence", "events"} <= set(whole)


def test_opening_migrates_every_run_to_header_and_rows_and_keeps_each_state_whole(old_home):
    with sqlite3.connect(old_home / "runs.sqlite") as conn:
        before = {r: json.loads(s) for r, s in conn.execute("SELECT run_id, state FROM runs")}
        audit_before = conn.execute("SELECT run_id, decision, role, name, digest, at FROM audit ORDER BY id").fetchall()
    home = Home(old_home)
    with sqlite3.connect(old_home / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_FORMAT
        headers = {r: json.loads(s) for r, s in conn.execute("SELECT run_id, state FROM runs")}
        assert "events" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert set(headers) == set(before) and all(not {"messages", "evidence", "events"} & set(h) for h in headers.values())
    for run_id, whole in before.items():
        state = home.store.load(run_id)
        # the state of 0.1.0, whole, plus what the schema migration adds (run_uid = run_id: 0.1.0
        # derived its operation IDs and signatures from the run ID)
        assert state.model_dump(mode="json") == {**migrate(whole), "version": state.version}
        assert state.run_uid == run_id
        assert [e["kind"] for e in home.store.events(run_id)] == [e["kind"] for e in whole["events"]]
    assert home.store.counts() == {"waiting_approval": 2, "executing": 2}
    assert [r.run_id for r in home.store.page("waiting_approval", sort="amount")] == [T65273, T90103]
    row = home.store.summary(T65273)
    assert (row.customer, row.total_amount, row.required_role, row.amount_cents, row.role_rank) == (
        "Maya Thompson",
        "119.00",
        "team_lead",
        11900,
        1,
    )
    assert [(a["run_id"], a["decision"], a["role"], a["name"], a["digest"], a["at"]) for a in home.store.audit()] == [
        tuple(r) for r in audit_before
    ]
    assert all(a["run_uid"] is None for a in home.store.audit())
    assert [r.run_id for r in home.store.page(search="thompson")] == [T65273]  # the search index was built
    store_at(old_home / "runs.sqlite")  # a second open finds format 2 and changes nothing
    assert home.store.load(T65273).version == before[T65273]["version"]


def test_the_two_waiting_runs_approve_and_execute(old_home):
    home = Home(old_home)
    refund = home.approve(T65273, "team_lead", "Grace")
    assert refund.status == "done" and [op.status for op in refund.operations] == ["done", "done"]
    planter = home.approve(T90103, "agent", "Amira")
    assert planter.status == "done" and [op.action.type for op in planter.operations] == [
        "reship_item",
        "create_return_label",
        "send_reply",
    ]
    assert {"RF-002D0EF2"} < {r[0] for r in _refunds(old_home)}


def test_the_run_that_crashed_before_its_refund_finishes_it_with_its_stored_operation_id(old_home):
    # within the approval's validity (approved 17:00:01): a pending operation with no call has not
    # started, so after it the approval lapses (tests/ground/test_run_uid.py)
    assert run_process(old_home, "clock", "set", "2026-10-09T17:30:00-04:00").returncode == 0
    resumed = run_process(old_home, "resume", BEFORE_WRITE)
    assert resumed.returncode == 0, resumed.stderr
    assert "request_refund LK-793996: done (operation 550ac48b8b6eeead, 1 call(s))" in resumed.stdout
    state = Home(old_home).store.load(BEFORE_WRITE)
    assert state.status == "done" and state.operations[0].operation_id == "550ac48b8b6eeead"
    assert [r for r in _refunds(old_home) if r[1] == "550ac48b8b6eeead"] == [
        (_derived("550ac48b8b6eeead"), "550ac48b8b6eeead", "9.95")
    ]


def test_the_run_that_crashed_after_its_refund_reconciles_without_a_second_call(old_home):
    before = _refunds(old_home)
    resumed = run_process(old_home, "resume", AFTER_WRITE)
    assert resumed.returncode == 0, resumed.stderr
    assert "60f02750db887a88" in resumed.stdout
    home = Home(old_home)
    state = home.store.load(AFTER_WRITE)
    assert state.status == "done" and state.operations[0].result["refund_id"] == "RF-002D0EF2"
    assert "reconciled" in [e["kind"] for e in home.store.events(AFTER_WRITE)]
    assert _refunds(old_home) == before  # no second refund
    assert home.world().register_count("60f02750db887a88") == 1


def test_two_processes_opening_the_old_home_at_once_migrate_it_once(old_home):
    import subprocess
    import sys

    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "core", "runs", "--home", str(old_home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [(*p.communicate(timeout=60), p.returncode) for p in procs]
    assert [code for _, _, code in outs] == [0, 0], outs
    assert all(T65273 in out for out, _, _ in outs)
    home = Home(old_home)
    assert home.store.counts() == {"waiting_approval": 2, "executing": 2}
    assert len(home.store.load(T65273).messages) == 7


def _derived(operation_id: str) -> str:
    from core.contract.world import derived_id

    return derived_id("RF", operation_id)


def test_a_format_2_store_gets_the_journal_of_model_calls_when_opened(tmp_path):
    """The store of the release before the journal (format 2, a frozen home) is upgraded on open to
    format 3 with an empty ``model_calls`` table; its runs load as before."""
    import shutil

    root = tmp_path / "home"
    shutil.copytree(Path(__file__).parent.parent / "fixtures" / "home_schema_4", root)
    for path in root.iterdir():
        path.chmod(0o600)
    with sqlite3.connect(root / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'model_calls'").fetchone()
        runs = [r[0] for r in conn.execute("SELECT run_id FROM runs")]
    home = Home(root)
    with sqlite3.connect(root / "runs.sqlite") as conn:
        assert (
            conn.execute("PRAGMA user_version").fetchone()[0] == STORE_FORMAT == 7
        )  # and format 4's checksums, 5's run_marks, 6's refresh event, 7's journal seals
    assert runs and all(home.store.model_calls(r) == [] for r in runs)
    assert all(home.store.load(r).run_id == r for r in runs)
