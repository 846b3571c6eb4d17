"""The SQLite back-end's own details (the contract's tests are in tests/conformance/): saves
proportional to a step in rows, WAL and one fsync per commit, the queue's indexes and trigram
search, the counts' triggers, the append-only triggers, a file rebuilt under a long-lived
connection, formats it refuses, a v1 checkpoint inserted with SQL, and the step save under
SIGKILL."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest
from core.api.home import Home
from core.contract.store import UnsupportedStoreFormat
from core.engine.runner import new_state
from core.ground.clock import FixedClock
from core.ground.data import load_task
from core.ground.errors import CorruptCheckpoint
from core.ground.state import SCHEMA_VERSION, Message
from core.stores.sqlite.database import FileMoved
from core.stores.sqlite.files import STORE_FORMAT

from helpers import busy_home_at, run_process, store_at, tool_step

FRIDAY = "2026-10-09T17:00:00-04:00"
FIXTURES = Path(__file__).parent.parent / "fixtures"


def _entries(path: Path, run_id: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT n, list, seq, body, extra, ref FROM entries WHERE run_id = ? ORDER BY n", (run_id,)
        ).fetchall()


# -- saves proportional to what changed ------------------------------------------------------------


def test_a_step_appends_its_rows_and_rewrites_only_the_header(home):
    state = home.run("T-65273")
    old_rows = _entries(home.store.path, state.run_id)
    before = len(old_rows)
    assert before == len(state.messages) + len(state.evidence) + len(state.events)
    conn = home.store.db.connection()
    changes = conn.total_changes
    tool_step(state, {"order_id": "LK-507862", "lines": ["x" * 5000]})
    home.store.save(state)
    # the header row, then one row per new element: evidence, two messages, one event
    assert conn.total_changes - changes == 1 + 4
    rows = _entries(home.store.path, state.run_id)
    assert len(rows) == before + 4
    assert rows[:before] == old_rows  # nothing saved before was written again
    back = store_at(home.store.path).load(state.run_id)
    assert back.model_dump() == state.model_dump()


def test_a_tool_output_is_stored_once(home):
    state = home.run("T-65273")
    big = {"order_id": "LK-507862", "note": "é" + "y" * 50_000}
    tool_step(state, big)
    home.store.save(state)
    rows = _entries(home.store.path, state.run_id)
    evidence = rows[-4]
    tool_message = rows[-2]
    assert (evidence[1], tool_message[1]) == ("evidence", "messages")
    assert tool_message[5] == evidence[0] and "content" not in json.loads(tool_message[3])
    assert sum(len(r[3]) + len(r[4] or "") for r in rows) < 60_000  # one copy of the 50 KB, not two
    back = store_at(home.store.path).load(state.run_id)
    assert back.messages[-2].content == state.messages[-2].content
    assert back.evidence[-1].result == big
    assert back.model_dump() == state.model_dump()


def test_a_list_edited_in_place_rewrites_the_runs_rows(home):
    state = home.run("T-65273")
    state.messages = state.messages[:2]  # shortened
    home.store.save(state)
    assert store_at(home.store.path).load(state.run_id).messages == state.messages
    state.messages[1] = Message(role="user", content="rewritten")  # an element replaced
    state.events.pop()
    home.store.save(state)
    back = store_at(home.store.path).load(state.run_id)
    assert back.model_dump() == state.model_dump()
    assert len(_entries(home.store.path, state.run_id)) == len(state.messages) + len(state.evidence) + len(state.events)


def test_rows_left_on_disk_that_this_object_never_saw_are_written_again(home):
    state = home.run("T-65273")
    with sqlite3.connect(home.store.path) as conn:  # a stray row where the next step's row goes
        conn.execute(
            "INSERT INTO entries (run_id, n, list, seq, body) VALUES (?, ?, 'events', 99, '{}')",
            (state.run_id, len(_entries(home.store.path, state.run_id)) + 1),
        )
    tool_step(state, {"order_id": "x"})
    home.store.save(state)
    assert store_at(home.store.path).load(state.run_id).model_dump() == state.model_dump()


def test_a_corrupt_entry_row_gives_the_corrupt_sentence_and_flags_the_row(home):
    state = home.run("T-65273")
    with sqlite3.connect(home.store.path) as conn:
        conn.execute("UPDATE entries SET body = '{\"role\": ' WHERE run_id = ? AND n = 1", (state.run_id,))
    with pytest.raises(CorruptCheckpoint, match="is corrupt"):
        home.store.load(state.run_id)
    assert home.store.summary(state.run_id).state_ok is False


def test_a_header_cut_short_is_flagged_corrupt_in_the_listing_without_a_load(home):
    state = home.run("T-65273")
    with sqlite3.connect(home.store.path) as conn:
        conn.execute("UPDATE runs SET state = substr(state, 1, 200) WHERE run_id = ?", (state.run_id,))
    assert home.store.page()[0].state_ok is False


def test_every_connection_keeps_the_wal_and_syncs_it_at_each_commit(home):
    state = home.run("T-65273")
    conn = home.store.db.connection()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: the WAL is fsynced at every commit
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    home.store.save(state)
    assert Path(str(home.store.path) + "-wal").exists()  # kept between saves, not checkpointed away
    assert home.store.counters.opens == 1  # one long-lived connection for every save of this thread


# -- leases folded into saves -------------------------------------------------------------------


def test_approve_and_execute_of_three_operations_is_nine_transactions(home):
    state = home.run("T-90103", repeat=1)
    before = home.store.counters.snapshot()
    done = home.approve(state.run_id, "agent", "Amira")
    after = home.store.counters.snapshot()
    assert done.status == "done" and len(done.operations) == 3
    # approval 1 + claim 1 + (pending, done) x 3 + the final save that releases the lease 1
    assert after["transactions"] - before["transactions"] == 9
    assert after["commits"] - before["commits"] == 9


# -- the queue --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def busy_home(tmp_path_factory) -> Home:
    """The queue of :func:`helpers.busy_home_at` (read-only for the tests)."""
    return busy_home_at(tmp_path_factory.mktemp("busy") / "home")


def test_a_search_of_three_characters_or_more_uses_the_trigram_index(busy_home):
    conn = busy_home.store.db.connection()
    plan = " ".join(
        r[-1]
        for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT run_id FROM runs WHERE rowid IN "
            "(SELECT rowid FROM runs_search WHERE runs_search MATCH '\"maya\"') ORDER BY updated_ts DESC, run_id DESC LIMIT 200"
        )
    )
    assert "VIRTUAL TABLE INDEX" in plan, plan


def test_every_filter_and_sort_of_the_queue_is_served_by_an_index(busy_home):
    conn = busy_home.store.db.connection()
    for column in ("updated_ts", "created_ts", "amount_cents", "role_rank"):
        for where in ("", "WHERE status = 'waiting_approval'"):
            plan = " ".join(
                r[-1]
                for r in conn.execute(
                    f"EXPLAIN QUERY PLAN SELECT run_id, state_ok, customer FROM runs {where} ORDER BY {column} DESC, run_id DESC LIMIT 200"
                )
            )
            assert "INDEX" in plan and "TEMP B-TREE" not in plan, (column, where, plan)


# -- a file rebuilt under a long-lived connection -------------------------------------------------------


def _delete_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def test_a_store_moved_away_under_an_open_store_is_refused_and_none_is_made(home, tmp_path):
    """A new user's trial: ``mv runs.sqlite`` while the app was open; its next write made a new,
    empty store in its place and the queue showed empty (a claim said "No run ...")."""
    state = home.run("T-65273")
    moved = tmp_path / "elsewhere.sqlite"
    os.rename(home.store.path, moved)
    fresh = new_state(load_task("T-90103"), "agent", "chat-small", "fresh-1", home.clock)
    uses = {
        "page": lambda: home.store.page("waiting_approval"),
        "load": lambda: home.store.load(state.run_id),
        "save": lambda: home.store.save(fresh),
        "claim": lambda: home.mark("claim", state.run_id, "team_lead", "Grace"),
        "approve": lambda: home.approve(state.run_id, "team_lead"),
    }
    for name, use in uses.items():
        with pytest.raises(
            FileMoved, match=r"^The checkpoint store .*runs\.sqlite is gone \(moved or deleted while in use\): put it back"
        ):
            use()
        assert not home.store.path.exists(), name
    failed: list[BaseException] = []
    other = threading.Thread(target=lambda: failed.append(_raised(uses["page"])))  # a worker's first use
    other.start()
    other.join()
    assert isinstance(failed[0], FileMoved) and not home.store.path.exists()
    os.rename(moved, home.store.path)  # put back: used again
    assert [r.run_id for r in home.store.page("waiting_approval")] == [state.run_id]
    assert home.store.save(fresh).version == 1


def _raised(use) -> BaseException | None:
    try:
        use()
    except BaseException as exc:  # handed back to the test's thread
        return exc
    return None


def test_a_store_rebuilt_under_an_open_store_is_refused_and_left_alone(home, tmp_path):
    """The file deleted and a new store made in its place by another process: the open store
    does not take the new file for its own (it would show another queue); it says so."""
    state = home.run("T-65273")
    _delete_db(home.store.path)
    other = store_at(home.store.path, home.clock, afresh=True)  # as `resolver reset --all` makes a lost one again
    other.save(new_state(load_task("T-90103"), "agent", "chat-small", "fresh-1", home.clock))
    with pytest.raises(FileMoved, match=r"was replaced by another file .*quit and start resolver again"):
        home.store.exists(state.run_id)
    with pytest.raises(FileMoved, match="was replaced by another file"):
        home.store.save(new_state(load_task("T-90103"), "agent", "chat-small", "fresh-2", home.clock))
    assert [r.run_id for r in other.page()] == ["fresh-1"]
    assert home.store.counters.opens == 1


def test_a_world_rebuilt_under_an_open_world_is_reopened(home):
    world = home.world("test")
    world.request_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    assert len(world.changes()) == 1
    before = os.stat(home.world_path).st_ino
    done = run_process(home.root, "reset", "--all")  # another process deletes and rebuilds the world
    assert done.returncode == 0, done.stderr
    assert os.stat(home.world_path).st_ino != before
    assert world.changes() == []
    assert world.get_payments("LK-507862")[1]["status"] == "captured"


def test_a_store_of_a_newer_format_is_refused_loudly(tmp_path):
    path = tmp_path / "runs.sqlite"
    store_at(path)
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {STORE_FORMAT + 1}")
    with pytest.raises(UnsupportedStoreFormat, match=f"has format {STORE_FORMAT + 1}, written by a newer resolver"):
        store_at(path)


def test_a_runs_table_that_is_not_a_checkpoint_store_is_refused_loudly(tmp_path):
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, note TEXT)")
    with pytest.raises(UnsupportedStoreFormat, match="without state, status, task_id, updated_at, version"):
        store_at(path)


# -- world services by table --------------------------------------------------------------------------


# -- SIGKILL inside a step save ---------------------------------------------------------------------------


def _reference_checkpoints(tmp_path: Path) -> dict[int, dict]:
    """Every checkpoint an uninterrupted ``resolver run T-65273`` saves, by version (no times)."""
    home = Home(tmp_path / "reference", clock=FixedClock(FRIDAY))
    seen: dict[int, dict] = {}
    original = home.store.save

    def record(state, **kw):
        out = original(state, **kw)
        seen[out.version] = _comparable(out)
        return out

    home.store.save = record  # type: ignore[method-assign]
    home.run("T-65273")
    return seen


def _comparable(state) -> dict:
    # run_uid is drawn anew for every run (and named in its "created" event): the rest must match
    dump = state.model_dump(mode="json", exclude={"created_at", "updated_at", "run_uid"})
    dump["events"] = [(e["seq"], e["kind"], e["message"]) for e in dump["events"]]
    return dump


@pytest.mark.slow
def test_kill_sweep_a_sigkill_between_any_two_row_writes_of_a_step_save_leaves_the_last_whole_checkpoint(tmp_path):
    """SIGKILL ``resolver run`` at every row write of every save (before its commit): the run is
    either absent (killed in its first save) or exactly one of the checkpoints an uninterrupted
    run saves, never a half step; and a resume ends as the uninterrupted run does."""
    reference = _reference_checkpoints(tmp_path)
    n, kills, versions = 1, 0, set()
    while True:
        root = tmp_path / f"row-{n}"
        killed = run_process(root, "run", "T-65273", env={"RESOLVER_KILL_AT": f"row:{n}"})
        if killed.returncode == 0:
            break
        assert killed.returncode == -9, killed.stderr
        kills += 1
        home = Home(root)
        run_id = "T-65273-agent-chat-small-1"
        if not home.store.exists(run_id):
            assert n <= 5  # only the first save's row writes come before any checkpoint exists
        else:
            state = home.store.load(run_id)
            assert _comparable(state) == reference[state.version], (n, state.version)
            assert len(_entries(home.store.path, run_id)) == len(state.messages) + len(state.evidence) + len(state.events)
            versions.add(state.version)
            resumed = run_process(root, "resume", run_id)
            assert resumed.returncode == 0, resumed.stderr
            assert "3 model call(s), 2 tool call(s) | 7155 tokens in" in resumed.stdout
        n += 1
    # at least two row writes per save (the header's compare-and-set, then one insert of the step's
    # entries); every checkpoint but the last was the one left
    assert kills >= 2 * (max(reference) - 1) and versions == set(range(1, max(reference)))


@pytest.mark.slow
def test_kill_sweep_inside_the_approve_and_execute_saves(tmp_path):
    """SIGKILL ``resolver approve`` at every row write before a commit; a resume finishes every
    write exactly once."""
    n, kills = 1, 0
    while True:
        home = Home(tmp_path / f"approve-{n}")
        state = home.run("T-90103", repeat=1)
        killed = run_process(home.root, "approve", state.run_id, "--as", "agent", env={"RESOLVER_KILL_AT": f"row:{n}"})
        if killed.returncode == 0:
            break
        assert killed.returncode == -9, killed.stderr
        kills += 1
        resumed = run_process(home.root, "resume", state.run_id)
        assert resumed.returncode == 0, resumed.stderr
        final = home.store.load(state.run_id)
        if final.status == "waiting_approval":
            assert home.store.audit(state.run_id) == []
        else:
            assert final.status == "done" and all(op.status == "done" for op in final.operations)
            assert all(home.world().register_count(op.operation_id) == 1 for op in final.operations)
            assert len(home.store.audit(state.run_id)) == 1
        n += 1
    assert kills >= 16


def test_the_file_left_by_a_kill_is_a_consistent_database(tmp_path):
    root = tmp_path / "h"
    killed = run_process(root, "run", "T-65273", env={"RESOLVER_KILL_AT": "row:7"})
    assert killed.returncode == -9
    with sqlite3.connect(root / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert os.path.exists(root / "runs.sqlite")


# -- from the checkpoint store's tests: SQLite details -------------------------------------------


def test_the_frozen_v1_checkpoint_still_loads(home):
    raw = (FIXTURES / "task_state_v1.json").read_text(encoding="utf-8")
    assert json.loads(raw)["schema_version"] == 1
    with sqlite3.connect(home.store.path) as conn:
        conn.execute(
            "INSERT INTO runs (run_id, task_id, status, updated_at, version, state) VALUES (?, ?, ?, ?, ?, ?)",
            ("T-90103-agent-chat-small-1", "T-90103", "waiting_approval", "2026-10-09T17:00:00-04:00", 1, raw),
        )
    state = home.store.load("T-90103-agent-chat-small-1")
    assert state.schema_version == SCHEMA_VERSION
    assert state.reply_channel == "email"
    assert len(state.proposal.actions) == 2
    home.store.save(state)  # saved again as the current version
    assert (
        json.loads(sqlite3.connect(home.store.path).execute("SELECT state FROM runs").fetchone()[0])["schema_version"]
        == SCHEMA_VERSION
    )


def test_the_audit_table_refuses_updates_and_deletes(home):
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    home.approve(state.run_id, "agent", "Amira")
    assert [a["decision"] for a in home.store.audit(state.run_id)] == ["approve"]
    with sqlite3.connect(home.store.path) as conn:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE audit SET role = 'grace'")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM audit")


def test_the_header_holds_the_state_without_its_lists(home):
    state = home.run("T-90103", repeat=1)
    state.plan = ["look up the order", "propose"]
    home.store.save(state)
    with sqlite3.connect(home.store.path) as conn:
        header = json.loads(conn.execute("SELECT state FROM runs WHERE run_id = ?", (state.run_id,)).fetchone()[0])
    assert header["plan"] == state.plan and not {"messages", "evidence", "events"} & set(header)


def test_a_status_changed_by_hand_is_counted_by_the_triggers(home):
    for repeat in (1, 2):
        home.run("T-90103", repeat=repeat)
    store = home.store
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE runs SET status = 'stopped' WHERE run_id = ?", (store.page("waiting_approval", limit=1)[0].run_id,))
        grouped = dict(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
    assert store.counts() == grouped == {"waiting_approval": 1, "stopped": 1}
