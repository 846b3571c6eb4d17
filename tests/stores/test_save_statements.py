"""A step's save is the header's compare-and-set plus one insert of the step's entries, and a
decision does not ask SQLite for the audit's columns every time (SQLite back-end: the statements
are traced on the store's own connection; no timing is asserted)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from core.api.home import Home
from core.ground.clock import FixedClock
from core.ground.errors import ResolverError, StaleCheckpoint
from core.ground.state import Evidence, Message
from core.stores.sqlite.database import Connection

FRIDAY = "2026-10-09T17:00:00-04:00"


def _traced(home: Home, work) -> list[str]:
    statements: list[str] = []
    conn = home.store.db.connection()
    conn.set_trace_callback(statements.append)
    try:
        work()
    finally:
        conn.set_trace_callback(None)
    # SQLite reports each trigger program a statement starts as that statement again: one each
    out: list[str] = []
    for s in statements:
        if not s.startswith("--") and (not out or out[-1] != s):
            out.append(s)
    return out


def test_a_step_save_is_one_update_and_one_insert(tmp_path):
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    state.step += 1
    result = {"order_id": state.order_id, "status": "shipped"}
    state.messages.append(Message(role="assistant", step=state.step, content='{"tool": "get_order"}'))
    state.evidence.append(Evidence(step=state.step, tool="get_order", args={"order_id": state.order_id}, result=result))
    state.messages.append(Message(role="tool", step=state.step, content=json.dumps(result)))
    state.log("tool_call", "step: get_order")
    statements = _traced(home, lambda: home.store.save(state))
    verbs = [s.split(None, 2)[:2] for s in statements]
    assert verbs == [["BEGIN", "IMMEDIATE"], ["UPDATE", "runs"], ["INSERT", "INTO"], ["COMMIT"]]
    assert statements[2].count(f"), ('{state.run_id}',") == 3  # the four new entries in one statement
    back = Home(tmp_path / "home", clock=FixedClock(FRIDAY)).store.load(state.run_id)
    assert back.model_dump() == state.model_dump()


def test_a_whole_rewrite_of_a_long_history_is_batched_and_complete(tmp_path):
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    for i in range(150):  # 300 more messages: more than one batch of rows
        state.messages.append(Message(role="assistant", step=i, content=f"turn {i}"))
        state.messages.append(Message(role="tool", step=i, content=json.dumps({"i": i})))
    state.messages = list(state.messages)  # reassigned: the save rewrites every row
    home.store.save(state)
    back = Home(tmp_path / "home", clock=FixedClock(FRIDAY)).store.load(state.run_id)
    assert back.model_dump() == state.model_dump()


def test_decisions_ask_the_audit_columns_once_per_connection(tmp_path):
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    first = home.run("T-90103", repeat=1)
    second = home.run("T-65273")
    home.approval_key()
    conn = home.store.db.connection()
    assert isinstance(conn, Connection)
    home.approve(first.run_id, "agent", "Amira")  # the first decision on this connection asks
    assert "audit" in conn.known
    again = _traced(home, lambda: home.approve(second.run_id, "team_lead", "Grace"))
    assert not [s for s in again if "table_info(audit)" in s]
    assert [r["decision"] for r in home.store.audit()][-2:] and home.store.load(second.run_id).status == "done"


def test_a_rolled_back_write_forgets_what_the_connection_learnt(tmp_path):
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    home.store.append_audit(
        {"run_id": state.run_id, "decision": "note", "role": "", "name": "t", "digest": "", "at": FRIDAY, "detail": ""}
    )
    conn = home.store.db.connection()
    assert "audit" in conn.known
    stale = home.store.load(state.run_id)
    home.store.save(home.store.load(state.run_id))
    with pytest.raises(StaleCheckpoint):
        home.store.save(stale)
    assert conn.known == {}


def test_the_rows_and_header_a_save_writes_are_model_dump_json_s_text(tmp_path):
    """A save serialises through the model class's serializer (``_json_of``); the text must be
    exactly ``model_dump_json``'s, for the header and every kind of entry (an excluded result, an
    excluded content, a non-ASCII text, a Decimal, a time)."""
    from decimal import Decimal

    from core.stores.common import _HEADER_EXCLUDE, _json_bytes, _json_of

    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    assert state.proposal is not None
    state.messages.append(Message(role="tool", step=9, content="Zoë — “ok” \u2028 </script>", tool_call_id="c1"))
    state.evidence.append(Evidence(step=9, tool="t", args={"x": Decimal("1.10")}, result={"é": [1, None, "—"]}))
    checks = [(state, _HEADER_EXCLUDE), (state, None), (state.proposal, None)]
    checks += [(m, None) for m in state.messages] + [(m, {"content"}) for m in state.messages]
    checks += [(e, {"result"}) for e in state.evidence] + [(e, None) for e in state.events]
    for model, exclude in checks:
        assert _json_of(model, exclude) == model.model_dump_json(exclude=exclude)
        assert _json_bytes(model, exclude) == model.model_dump_json(exclude=exclude).encode()


def test_an_audit_row_hashes_the_same_from_a_tuple_and_a_dict():
    """``row_hash`` of a row as read (a tuple, a BLOB read as ``blob:<hex>``) is the hash of the
    same row as a dict; a tuple of the wrong length is a ValueError, never a hash."""
    from core.contract.audit import COLUMNS, as_row, row_hash

    values = (7, "r", "approve", "team_lead", "Grace", "d" * 64, FRIDAY, "Zoë — ok", "u", "0" * 64, "s", None)
    assert row_hash(values) == row_hash(as_row(values))
    bound = (*values[:-1], '{"head":"1:x"}')
    assert row_hash(bound) == row_hash(as_row(bound)) != row_hash(values)
    blob = (*values[:7], b"\x00\xff", *values[8:])
    assert row_hash(blob) == row_hash(as_row(blob))
    with pytest.raises(ValueError):
        row_hash(values[: len(COLUMNS) - 1])


@pytest.mark.parametrize(
    "values",
    [
        [1, "a", None, "Zoë “quoted” \\ \n \t \x00 \u2028 </x>", "", 0, -5, 10**20],
        [True, 1.5, "x"],  # not what an audit row holds: the encoder's own text, whatever it is
        [],
    ],
)
def test_an_audit_row_s_json_is_json_dumps_text(values):
    """``_encode_row`` writes the text ``json.dumps`` writes (the hash covers it)."""
    from core.contract.audit import _encode_row

    assert _encode_row(values) == json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def test_rows_read_as_stored_bytes_that_are_not_utf8_are_a_corrupt_checkpoint_not_a_traceback(tmp_path):
    """The SQLite store reads bodies and the header as their stored bytes (CAST AS BLOB) and hands
    them to pydantic as they are. A body rewritten as bytes that are not UTF-8, with a checksum
    made to match (only the checksum was right), and a header stored as such a BLOB, are each the
    corrupt-checkpoint sentence; a non-ASCII body written by a save round-trips."""
    from core.ground.errors import CorruptCheckpoint
    from core.stores.common import entry_checksum

    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    state.messages.append(Message(role="assistant", step=9, content="Zoë — “ok” \u2028 𝄞"))
    result = {"note": 'Zoë "q" \\ \n\t\x01 — 𝄞 </x>', "n": [1, None]}
    state.evidence.append(Evidence(step=9, tool="get_order", args={"order_id": "LK-1"}, result=result))
    state.messages.append(Message(role="tool", step=9, content=json.dumps(result, ensure_ascii=False)))
    home.store.save(state)
    with sqlite3.connect(home.store.path) as conn:  # the tool message refers to the evidence's row
        assert conn.execute("SELECT COUNT(*) FROM entries WHERE run_id = ? AND ref IS NOT NULL", (state.run_id,)).fetchone()[0]
    for read in ("load", "load_view"):
        back = getattr(Home(tmp_path / "home", clock=FixedClock(FRIDAY)).store, read)(state.run_id)
        assert back.evidence == state.evidence
    assert Home(tmp_path / "home", clock=FixedClock(FRIDAY)).store.load(state.run_id).model_dump() == state.model_dump()
    path = home.store.path
    bad = b'{"role":"user","content":"\xff\xfe","step":0,"tool_call_id":"","arguments":""}'
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE entries SET body = ?, checksum = ? WHERE run_id = ? AND list = 'messages' AND seq = 2",
            (bad, entry_checksum(bad, None), state.run_id),
        )
    for read in ("load", "load_view"):
        with pytest.raises(CorruptCheckpoint, match=f"The checkpoint of run {state.run_id} is corrupt"):
            getattr(Home(tmp_path / "home", clock=FixedClock(FRIDAY)).store, read)(state.run_id)
    other = home.run("T-90103", repeat=1)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET state = ? WHERE run_id = ?", (b'{"run_id":"\xff"}', other.run_id))
    with pytest.raises(CorruptCheckpoint, match=f"The checkpoint of run {other.run_id} is corrupt"):
        Home(tmp_path / "home", clock=FixedClock(FRIDAY)).store.load(other.run_id)


@pytest.mark.parametrize(
    "value",
    [
        {"order_id": "LK-1", "status": "shipped", "total": 119.0, "lines": [{"sku": "é", "qty": 2, "ok": True}], "n": None},
        ["Zoë “quoted” \\ \n \t \x00 \u2028 </x>", 1.5e300, -0.0, 10**30, False],
        "a bare text",
        42,
        None,
        {},
        [],
        {1: "int key", 2.5: "float key", False: "bool key", None: "none key"},
    ],
)
def test_an_evidence_result_s_text_is_json_dumps_text(value):
    """An evidence row's result is written by a C encoder made once (``_dumps_result``); its text
    must be exactly ``json.dumps``'s (the runner's tool message is that text, and a message equal
    to it refers to the evidence row instead of repeating it)."""
    from core.stores.common import _dumps_result

    assert _dumps_result(value) == json.dumps(value, ensure_ascii=False, allow_nan=False)


@pytest.mark.parametrize("value", [{"x": float("nan")}, [float("inf")], {"s": {1, 2}}, {("tuple", "key"): 1}])
def test_a_result_json_cannot_write_is_the_error_json_dumps_raises(value):
    """What ``json.dumps`` refuses (NaN, a set, a tuple key) the encoder made once refuses the same
    way (TypeError or ValueError: the save then uses pydantic's encoder)."""
    from core.stores.common import _dumps_result

    with pytest.raises((TypeError, ValueError)) as theirs:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
    with pytest.raises(theirs.type):
        _dumps_result(value)


def test_a_result_that_contains_itself_is_a_value_error_not_a_recursion_error():
    from core.stores.common import _dumps_result

    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        _dumps_result({"loop": loop})


def test_a_save_stats_the_file_once_and_asks_access_only_when_the_file_changed(tmp_path, monkeypatch):
    """One ``os.stat`` of the file per save gives both the read-only check and the file's identity
    (it was two stats and an ``os.access``); ``os.access`` is asked again only when the file's
    mode, owner or ctime moved, so a ``chmod 444`` is still refused."""
    import os

    from core.stores.sqlite.database import ReadOnlyFile

    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    path = str(home.store.path)
    stats: list[str] = []
    access: list[str] = []
    real_stat, real_access = os.stat, os.access

    def counting_stat(p, *args, **kwargs):
        stats.append(str(p))
        return real_stat(p, *args, **kwargs)

    def counting_access(p, *args, **kwargs):
        access.append(str(p))
        return real_access(p, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting_stat)
    monkeypatch.setattr(os, "access", counting_access)
    for step in range(3):
        state.step += 1
        state.messages.append(Message(role="assistant", step=state.step, content=f"turn {step}"))
        home.store.save(state)
    assert stats.count(path) == 3 and access.count(path) == 0
    os.chmod(path, 0o444)
    try:
        state.step += 1
        with pytest.raises(ReadOnlyFile, match="read-only"):
            home.store.save(state)
    finally:
        os.chmod(path, 0o600)
    state.step += 1
    home.store.save(state)  # writable again: the mode moved, so access is asked again
    assert access.count(path) >= 1


def test_a_changed_created_at_is_written_though_its_text_is_remembered(tmp_path):
    """A save reuses the ``created_at`` text and timestamp of its last save while the field holds
    the very same object; a new moment assigned is written."""
    from datetime import timedelta

    from core.ground.clock import iso

    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    home.store.save(state)
    state.created_at = state.created_at - timedelta(days=1, hours=1)
    home.store.save(state)
    with sqlite3.connect(home.store.path) as conn:
        text, ts = conn.execute("SELECT created_at, created_ts FROM runs WHERE run_id = ?", (state.run_id,)).fetchone()
    assert (text, ts) == (iso(state.created_at), state.created_at.timestamp())


def test_texts_bound_as_bytes_are_stored_as_the_same_text(tmp_path):
    """The SQLite store binds the header and the entries' bodies and extras as their UTF-8 bytes
    (``CAST(? AS TEXT)``); every one is stored as TEXT (never a BLOB), its value the ``str`` a
    ``model_dump_json`` gives, non-ASCII text included, for a new run, a step's append and a whole
    rewrite."""
    from core.stores.common import _HEADER_EXCLUDE

    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    state.messages.append(Message(role="tool", step=9, content="Zoë — “ok” \u2028 </script>", tool_call_id="c1"))
    state.evidence.append(Evidence(step=9, tool="t", args={"é": "—"}, result={"é": [1, None, "—", "\U0001f600"]}))
    state.log("note", "café ☕", who="Zoë")
    home.store.save(state)  # a step's append

    def rewrite() -> None:
        state.messages = list(state.messages)
        state.plan = ["naïve — plan"]
        home.store.save(state)

    def stored() -> tuple[list[tuple], tuple]:
        with sqlite3.connect(home.store.path) as conn:
            rows = conn.execute(
                "SELECT list, typeof(body), body, typeof(extra), extra, ref FROM entries WHERE run_id = ? ORDER BY n",
                (state.run_id,),
            ).fetchall()
            head = conn.execute("SELECT typeof(state), state FROM runs WHERE run_id = ?", (state.run_id,)).fetchone()
        return rows, head

    for save in (lambda: None, rewrite):  # as appended, then rewritten whole
        save()
        rows, (kind, header) = stored()
        assert kind == "text" and header == state.model_dump_json(exclude=_HEADER_EXCLUDE)
        assert {r[1] for r in rows} == {"text"} and {r[3] for r in rows if r[4] is not None} == {"text"}
        assert '"naïve — plan"' in header or save is not rewrite
        evidence = [r for r in rows if r[0] == "evidence"]
        assert [json.loads(r[4]) for r in evidence] == [e.result for e in state.evidence]
        assert evidence[-1][2] == state.evidence[-1].model_dump_json(exclude={"result"})
        events = [r for r in rows if r[0] == "events"]
        assert events[-1][2] == state.events[-1].model_dump_json()
        messages = [r for r in rows if r[0] == "messages"]
        assert messages[-1][2] == state.messages[-1].model_dump_json() and messages[-1][4] is None
    back = Home(tmp_path / "home", clock=FixedClock(FRIDAY)).store.load(state.run_id)
    assert back.model_dump() == state.model_dump()


def test_an_entry_s_nulls_are_written_in_the_sql_and_a_none_elsewhere_is_refused(tmp_path):
    """An entry's None ``extra`` and ``ref`` are NULLs written in the INSERT's SQL, not bound; rows
    of every shape in one statement land in their columns, and a None in any other column is
    refused by the driver, never shifted into the next column."""

    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    rows = [
        ("R", 1, "evidence", 1, b'{"a":1}', b"[1]", None, 11),
        ("R", 2, "messages", 1, b'{"b":2}', None, None, 12),
        ("R", 3, "messages", 2, "{}", None, 1, 13),
        ("R", 4, "events", 1, "{}", "2026-10-09T17:00:00-04:00", 5, 14),
    ]
    statements = _traced(home, lambda: _write(home, rows))
    inserts = [s for s in statements if s.startswith("INSERT INTO entries")]
    assert len(inserts) == 1 and inserts[0].count("NULL") == 4
    with sqlite3.connect(home.store.path) as conn:
        got = conn.execute("SELECT run_id, n, list, seq, body, extra, ref, checksum FROM entries WHERE run_id = 'R' ORDER BY n")
        assert got.fetchall() == [  # stored as text: the bytes bound read back as str
            ("R", 1, "evidence", 1, '{"a":1}', "[1]", None, 11),
            ("R", 2, "messages", 1, '{"b":2}', None, None, 12),
            ("R", 3, "messages", 2, "{}", None, 1, 13),
            ("R", 4, "events", 1, "{}", "2026-10-09T17:00:00-04:00", 5, 14),
        ]
    with pytest.raises(ResolverError, match="Incorrect number of bindings"):  # the driver's ProgrammingError
        _write(home, [("S", 1, "messages", 1, "{}", None, None, None)])
    with sqlite3.connect(home.store.path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM entries WHERE run_id = 'S'").fetchone() == (0,)


def _write(home: Home, rows: list[tuple]) -> None:
    from core.stores.sqlite.checkpoint import _insert_entries

    with home.store.db.immediate() as conn:
        _insert_entries(conn, rows)
