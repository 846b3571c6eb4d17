"""The audit chain's length and tip come from a stored value kept in the same transaction as every
audit insert (``audit_tip``), never a count of the table, and every query on a decision's path is
checked with ``EXPLAIN QUERY PLAN`` over a home with a large audit."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from core.api.home import Home
from core.ground.clock import FixedClock

FIXTURE = Path(__file__).parent.parent / "fixtures" / "store_before_audit_tip"
FRIDAY = "2026-10-09T17:00:00-04:00"
OLD_ROWS = 20_000


def _stored_length(path: Path) -> tuple[int, int]:
    """``(audit_tip.length, COUNT(*) of the audit)`` read with plain SQL."""
    conn = sqlite3.connect(path)
    try:
        return (
            conn.execute("SELECT length FROM audit_tip").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0],
        )
    finally:
        conn.close()


def test_a_store_before_audit_tip_gets_its_audit_length_counted_once(tmp_path):
    root = tmp_path / "home"
    shutil.copytree(FIXTURE, root)
    for path in root.iterdir():
        path.chmod(0o600)
    home = Home(root, clock=FixedClock(FRIDAY))
    assert _stored_length(home.store.path) == (1, 1)
    before = home.store.chain_tip()
    assert before[1] == 1
    done = home.approve("T-65273-waiting-2", "team_lead", "Grace")
    assert done.status == "done"
    assert _stored_length(home.store.path) == (2, 2) and home.store.chain_tip()[1] == 2
    from core.engine.auditchain import verify_audit

    assert verify_audit(home.store).problems == []
    # the trigger dropped (by hand): the next open creates it again and counts once more
    conn = sqlite3.connect(home.store.path)
    conn.execute("DROP TRIGGER audit_tip_insert")
    conn.execute("UPDATE audit_tip SET length = 99")
    conn.commit()
    conn.close()
    again = Home(root, clock=FixedClock(FRIDAY))
    assert _stored_length(again.store.path) == (2, 2)


def test_a_decision_in_a_home_with_a_large_audit_never_counts_or_scans_a_table(tmp_path):
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-90103")
    home.approval_key()  # made at the home's first decision (only a missing key counts the runs in flight)
    conn = sqlite3.connect(home.store.path)
    conn.executemany(  # an unchained prefix of old decisions, as a store made before the audit was chained holds
        "INSERT INTO audit (run_id, decision, role, name, digest, at, detail) "
        "VALUES (?, 'rejected', 'team_lead', 'Old', 'x', '2026-01-01T00:00:00+00:00', '')",
        [(f"OLD-{i}",) for i in range(OLD_ROWS)],
    )
    conn.commit()
    conn.close()
    statements: list[str] = []
    traced = home.store.db.connection()  # this thread's connection: approve and execute run here
    traced.set_trace_callback(statements.append)
    try:
        done = home.approve(state.run_id, "team_lead", "Grace")
    finally:
        traced.set_trace_callback(None)
    assert done.status == "done" and [op.status for op in done.operations] == ["done"] * 3
    assert _stored_length(home.store.path) == (OLD_ROWS + 1, OLD_ROWS + 1)
    assert not [s for s in statements if "COUNT(" in s.upper()], "a count on a decision's path"
    planner = sqlite3.connect(f"file:{home.store.path}?mode=ro", uri=True)
    try:
        plans = {}
        for sql in statements:
            verb = sql.split(None, 1)[0].upper()
            if verb in ("SELECT", "UPDATE", "DELETE", "WITH") or (verb == "INSERT" and " SELECT " in sql.upper()):
                plans[sql] = [row[3] for row in planner.execute("EXPLAIN QUERY PLAN " + sql)]
    finally:
        planner.close()
    assert len(plans) >= 5
    scans = {sql[:120]: plan for sql, plan in plans.items() if any(step.startswith("SCAN") for step in plan)}
    assert scans == {}
    assert any("audit" in sql and "MAX(id)" in sql for sql in plans)  # the tip: one row by its key


def test_the_tip_read_in_one_statement_is_the_tip_read_in_two_and_a_store_without_audit_tip_is_counted(tmp_path):
    """The newest row and ``audit_tip``'s length are read in one statement, not two; a store
    without ``audit_tip`` (an older file opened read-only) still gets the tip, its length counted,
    never an error; an empty audit is the genesis."""
    from core.contract.audit import GENESIS, row_hash
    from core.stores.sqlite.audit import SqliteAudit, last_hash

    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    conn = sqlite3.connect(home.store.path)
    try:
        assert last_hash(conn) == (GENESIS, 0)
    finally:
        conn.close()
    state = home.run("T-65273")
    home.approve(state.run_id, "team_lead", "Grace")
    conn = sqlite3.connect(home.store.path)
    try:
        newest = conn.execute("SELECT * FROM audit ORDER BY id DESC LIMIT 1").fetchone()
        count = conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
        from core.contract.audit import COLUMNS

        names = [d[1] for d in conn.execute("PRAGMA table_info(audit)")]
        expected = (row_hash(tuple(newest[names.index(c)] for c in COLUMNS)), count)
        assert last_hash(conn) == expected
        conn.execute("DROP TRIGGER audit_tip_insert")
        conn.execute("DROP TABLE audit_tip")
        conn.commit()
    finally:
        conn.close()
    ro = sqlite3.connect(f"file:{home.store.path}?mode=ro", uri=True)
    try:
        assert SqliteAudit(ro).chain_tip() == expected
    finally:
        ro.close()
