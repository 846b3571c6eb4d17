"""The checkpoint store at scale: saves proportional to a step, keyset pages, counts, a file
rebuilt under a long-lived connection, and the step save under SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest
from core.clock import FixedClock
from core.data import load_task
from core.errors import CorruptCheckpoint, LeaseHeld, ResolverError, StaleCheckpoint
from core.home import Home
from core.runner import new_state
from core.state import Evidence, Message, RefundAction, ReplyAction, ReshipAction, ReturnLabelAction
from core.store import RunSummary, Store, UnsupportedStoreFormat
from core.stores.sqlite.checkpoint import STORE_FORMAT
from core.world import WRITE_SERVICES

from helpers import run_process, store_at

FRIDAY = "2026-10-09T17:00:00-04:00"


def _entries(path: Path, run_id: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT n, list, seq, body, extra, ref FROM entries WHERE run_id = ? ORDER BY n", (run_id,)
        ).fetchall()


def _tool_step(state, result: dict) -> None:
    """One agent step as the runner writes it: the model's tool call, the evidence, the tool
    message with the same JSON, and an event."""
    state.step += 1
    call = {"tool": "get_order", "args": {"order_id": state.order_id}}
    state.messages.append(Message(role="assistant", step=state.step, content=json.dumps(call)))
    state.evidence.append(Evidence(step=state.step, tool="get_order", args={"order_id": state.order_id}, result=result))
    state.messages.append(Message(role="tool", step=state.step, content=json.dumps(result, ensure_ascii=False, default=str)))
    state.log("tool_call", f"step {state.step}: get_order", step=state.step, tool="get_order")


# -- saves proportional to what changed ------------------------------------------------------------


def test_a_step_appends_its_rows_and_rewrites_only_the_header(home):
    state = home.run("T-65273")
    old_rows = _entries(home.store.path, state.run_id)
    before = len(old_rows)
    assert before == len(state.messages) + len(state.evidence) + len(state.events)
    conn = home.store.db.connection()
    changes = conn.total_changes
    _tool_step(state, {"order_id": "LK-507862", "lines": ["x" * 5000]})
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
    _tool_step(state, big)
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
    _tool_step(state, {"order_id": "x"})
    home.store.save(state)
    assert store_at(home.store.path).load(state.run_id).model_dump() == state.model_dump()


def test_a_state_from_another_store_object_saves_whole_and_loses_nothing(home):
    state = home.run("T-65273")
    other = store_at(home.store.path, home.clock).load(state.run_id)
    _tool_step(other, {"order_id": "x"})
    home.store.save(other)  # this store never saw that object: a full rewrite of the rows
    assert home.store.load(state.run_id).model_dump() == other.model_dump()


def test_new_fields_of_the_header_round_trip_without_the_store_knowing_them(home):
    state = home.run("T-90103", repeat=1)
    state.plan = ["look up the order", "propose"]
    state.faults_seen = ["request_refund:timeout:1"]
    state.meta.model_route = "elsewhere"
    home.store.save(state)
    back = store_at(home.store.path).load(state.run_id)
    assert back.model_dump() == state.model_dump()
    with sqlite3.connect(home.store.path) as conn:
        header = json.loads(conn.execute("SELECT state FROM runs WHERE run_id = ?", (state.run_id,)).fetchone()[0])
    assert header["plan"] == state.plan and not {"messages", "evidence", "events"} & set(header)


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


def test_the_audit_row_carries_the_run_uid_when_given(home):
    state = home.run("T-65273")
    state.status = "handed_to_person"
    home.store.save(
        state, audit={"decision": "reject", "role": "grace", "name": "Grace", "digest": "d", "at": FRIDAY, "run_uid": "uid-1"}
    )
    assert home.store.audit(state.run_id)[0]["run_uid"] == "uid-1"


def test_the_store_knows_no_policy_it_writes_the_columns_it_is_handed(tmp_path):
    from core.store import blank_columns
    from core.stores import open_store

    clock = FixedClock(FRIDAY)
    store = open_store(tmp_path / "runs.sqlite", clock, summarize=blank_columns)
    state = new_state(load_task("T-65273"), "agent", "chat-small", "r-1", clock)
    store.save(state)
    row = store.summary("r-1")
    assert (row.customer, row.total_amount, row.required_role) == (state.customer_id, "", "")


def test_a_store_cannot_be_made_without_the_queue_columns(tmp_path):
    """Issue 22: the queue's columns are part of every save, never an optional hook."""
    from core.stores.sqlite.checkpoint import CheckpointStore

    with pytest.raises(TypeError, match="summarize"):
        CheckpointStore(tmp_path / "runs.sqlite")  # type: ignore[call-arg]


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


def test_a_save_that_names_a_lease_owner_needs_the_lease(home):
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    home.store.acquire_lease(state.run_id, "window-1@elsewhere:1:abc", 60)
    with pytest.raises(LeaseHeld, match="taken over by window-1"):
        home.store.save(state, lease_owner="me@here:1:x", lease_ttl_s=60)
    home.store.save(state, lease_owner="window-1@elsewhere:1:abc")  # the holder saves and releases
    assert home.store.summary(state.run_id).lease_owner is None
    stale = home.store.load(state.run_id)
    home.store.save(home.store.load(state.run_id))
    with pytest.raises(StaleCheckpoint):
        home.store.save(stale)


def test_an_executor_that_finds_a_corrupt_checkpoint_gives_its_lease_back(home):
    from core import approval

    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    approval.approve(home.store, home.approval_key(), state.run_id, "agent", clock=home.clock)
    with sqlite3.connect(home.store.path) as conn:
        conn.execute("UPDATE runs SET state = '{\"broken' WHERE run_id = ?", (state.run_id,))
    with pytest.raises(CorruptCheckpoint):
        home.execute(state.run_id)
    assert home.store.summary(state.run_id).lease_owner is None


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
    """40 runs of 4 tickets, some at the same second, 6 rejected (read-only for the tests)."""
    clock = FixedClock(FRIDAY)
    home = Home(tmp_path_factory.mktemp("busy") / "home", clock=clock)
    from datetime import timedelta

    for i in range(10):
        for task, variant, model in (
            ("T-65273", "agent", "chat-small"),
            ("T-90103", "agent", "chat-small"),
            ("T-90104", "agent_structured", "chat-strong"),
            ("T-41629", "agent", "chat-small"),
        ):
            home.run(task, variant, model, repeat=1 if task != "T-65273" else None)
            clock.advance(timedelta(seconds=30 * (i % 3)))  # ties on purpose
    for r in home.store.page("waiting_approval", limit=6):
        home.reject(r.run_id, "grace", "not now", "Grace")
    return home


@pytest.mark.parametrize("status", [None, "waiting_approval", "handed_to_person"])
@pytest.mark.parametrize("sort", [None, "age", "updated", "created", "amount", "role"])
def test_keyset_pages_walk_the_whole_queue_in_order(busy_home, status, sort):
    store = busy_home.store
    everything = store.page(status, sort=sort, limit=10_000)
    walked: list[RunSummary] = []
    while True:
        page = store.page(status, sort=sort, after=walked[-1] if walked else None, limit=7)
        walked.extend(page)
        if len(page) < 7:
            break
    assert [r.run_id for r in walked] == [r.run_id for r in everything]
    assert len(everything) == (sum(store.counts().values()) if status is None else store.counts().get(status, 0))
    if sort == "amount":
        assert [r.amount_cents for r in everything] == sorted((r.amount_cents for r in everything), reverse=True)
    if sort == "age" or (sort is None and status == "waiting_approval"):
        assert [r.updated_ts for r in everything] == sorted(r.updated_ts for r in everything)


def test_a_cursor_is_the_sort_key_and_run_id(busy_home):
    store = busy_home.store
    first = store.page("waiting_approval", sort="amount", limit=3)
    assert first[-1].cursor("amount") == (first[-1].amount_cents, first[-1].run_id)
    assert (
        store.page("waiting_approval", sort="amount", after=first[-1].cursor("amount"), limit=2)
        == store.page("waiting_approval", sort="amount", limit=5)[3:]
    )
    with pytest.raises(ResolverError, match="Unknown sort 'size'"):
        store.page(sort="size")


def test_search_matches_ticket_order_customer_and_run_id(busy_home):
    store = busy_home.store
    assert {r.task_id for r in store.page(search="T-65273")} == {"T-65273"}
    assert {r.order_id for r in store.page(search="lk-507862")} == {"LK-507862"}
    maya = store.page(search="Maya Thom")
    assert maya and {r.customer for r in maya} == {"Maya Thompson"}
    assert [r.run_id for r in store.page(search="T-90103-agent-chat-small-3")] == ["T-90103-agent-chat-small-3"]
    assert store.page(search="100%_") == []


def _grouped(store: Store) -> dict[str, int]:
    with sqlite3.connect(store.path) as conn:
        return dict(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())


@pytest.mark.parametrize("term", ["65", "k-", "LK-5078", "maya", "THOMPSON", "chat-small-1", "T-41629-agent"])
def test_search_finds_the_same_runs_as_a_substring_filter_over_every_row(busy_home, term):
    store = busy_home.store
    everything = store.page(limit=10_000)
    expected = [
        r.run_id
        for r in everything
        if any(term.lower() in field.lower() for field in (r.task_id, r.order_id, r.customer, r.run_id))
    ]
    assert expected and [r.run_id for r in store.page(search=term, limit=10_000)] == expected
    walked: list[RunSummary] = []
    while page := store.page(search=term, after=walked[-1] if walked else None, limit=3):
        walked.extend(page)
    assert [r.run_id for r in walked] == expected


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


def test_counts_follow_saves_deletes_and_resets(busy_home, tmp_path):
    shutil.copytree(busy_home.root, tmp_path / "copy")
    store = Home(tmp_path / "copy", clock=FixedClock(FRIDAY)).store
    counts = store.counts()
    assert counts == _grouped(store) and counts["handed_to_person"] == 6 and sum(counts.values()) == 40
    store.delete(store.page("waiting_approval", limit=1)[0].run_id)
    assert store.counts()["waiting_approval"] == counts["waiting_approval"] - 1
    with sqlite3.connect(store.path) as conn:  # a status changed by hand is counted too
        conn.execute("UPDATE runs SET status = 'stopped' WHERE run_id = ?", (store.page("waiting_approval", limit=1)[0].run_id,))
    assert store.counts() == _grouped(store) and store.counts()["stopped"] == 1
    state = store.load(store.page("stopped")[0].run_id)
    state.status = "done"
    store.save(state)
    assert store.counts() == _grouped(store) and "stopped" not in store.counts()
    store.reset()
    assert store.counts() == {}


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


def test_a_store_rebuilt_under_an_open_store_is_reopened(home, tmp_path):
    state = home.run("T-65273")
    assert home.store.exists(state.run_id)
    _delete_db(home.store.path)  # `resolver reset --all` in another process, while the app is open
    other = store_at(home.store.path, home.clock)
    fresh = other.save(new_state(load_task("T-90103"), "agent", "chat-small", "fresh-1", home.clock))
    assert not home.store.exists(state.run_id)
    assert [r.run_id for r in home.store.page()] == ["fresh-1"]
    assert home.store.load("fresh-1").model_dump() == fresh.model_dump()
    assert home.store.counters.opens == 2


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


def test_every_action_type_has_its_write_service():
    assert set(WRITE_SERVICES) == {
        t.model_fields["type"].default for t in (RefundAction, ReshipAction, ReturnLabelAction, ReplyAction)
    }


def test_call_service_dispatches_through_the_table(home):
    world = home.world("test")
    result = world.call_service(
        "op-1", RefundAction(order_id="LK-793996", amount=Decimal("9.95"), reason_code="RFD-LATE", payment_id="PAY-793996-1")
    )
    assert result["amount"] == "9.95" and world.lookup_operation("op-1")["service"] == "request_refund"


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
    assert kills >= 12 and versions == set(range(1, max(reference)))  # every checkpoint but the last was the one left


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
