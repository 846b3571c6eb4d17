"""The read side of the store contract, on every back-end: ``load_view`` reads the header, the
proposal, every evidence and event and the opening messages, never the message history; its digest
is the whole load's; and it can never be saved back."""

from __future__ import annotations

import json

import pytest
from core.ground.errors import CorruptCheckpoint, RunNotFound
from core.ground.state import OPENING_MESSAGES, PartialState, RunView, TaskState

from helpers import replace_checkpoint, tool_step


def _long_run(home, steps: int = 6) -> TaskState:
    """A waiting run with ``steps`` more tool steps saved one by one (a long message history)."""
    state = home.run("T-65273")
    for i in range(steps):
        tool_step(state, {"order_id": state.order_id, "i": i, "note": "x" * 200})
        home.store.save(state)
    return state


def test_a_view_holds_everything_shown_but_the_message_history(home, new_store):
    state = _long_run(home)
    whole = new_store(home.store).load(state.run_id)
    view = new_store(home.store).load_view(state.run_id)
    assert isinstance(view, RunView) and not isinstance(whole, RunView)
    assert len(whole.messages) > OPENING_MESSAGES + 10
    assert view.messages == whole.messages[:OPENING_MESSAGES]
    assert [m.role for m in view.messages] == ["system", "user"]
    assert view.model_dump(exclude={"messages"}) == whole.model_dump(exclude={"messages"})
    assert view.evidence == whole.evidence and view.events == whole.events and view.version == whole.version


def test_the_digest_of_a_view_is_the_digest_of_the_whole_load(home):
    state = _long_run(home, 2)
    assert state.proposal is not None
    view = home.store.load_view(state.run_id)
    whole = home.store.load(state.run_id)
    assert view.proposal is not None and whole.proposal is not None
    assert view.proposal.digest == whole.proposal.digest == state.proposal.digest


def test_a_view_is_never_saved_and_the_history_stays_whole(home):
    state = _long_run(home, 2)
    before = home.store.load(state.run_id)
    view = home.store.load_view(state.run_id)
    view.plan = ["a partial state must not be written"]
    for candidate in (view, view.model_copy(deep=True)):
        with pytest.raises(PartialState, match="read for display only"):
            home.store.save(candidate)
    after = home.store.load(state.run_id)
    assert after.model_dump() == before.model_dump()
    assert view.version == before.version  # nothing stamped on the refused copy


def test_a_whole_load_still_saves_by_appending_after_views(home, new_store):
    state = _long_run(home, 1)
    home.store.load_view(state.run_id)
    tool_step(state, {"order_id": state.order_id, "after": "a view"})
    home.store.save(state)
    assert new_store(home.store).load(state.run_id).model_dump() == state.model_dump()


def test_a_view_of_a_corrupt_or_unknown_run_says_so(home):
    bad = home.run("T-90103", repeat=1)
    replace_checkpoint(home.store, bad.run_id, '{"run_id": "T-90103-agent-chat-small-1", "status": ')
    with pytest.raises(CorruptCheckpoint, match="is corrupt"):
        home.store.load_view(bad.run_id)
    assert {r.run_id: r.state_ok for r in home.store.page()}[bad.run_id] is False
    with pytest.raises(RunNotFound, match=r"No run nope\."):
        home.store.load_view("nope")


def test_a_view_of_an_older_header_is_migrated_like_a_whole_load(home):
    state = home.run("T-65273")
    raw = json.loads(state.model_dump_json())
    raw["schema_version"] = 6  # the careful path: an older schema, migrated on read
    replace_checkpoint(home.store, state.run_id, json.dumps(raw))
    view = home.store.load_view(state.run_id)
    assert isinstance(view, RunView) and view.proposal == home.store.load(state.run_id).proposal
    with pytest.raises(PartialState):
        home.store.save(view)


# -- entries validated when written, checked by their checksum when read back -------------------


def _sql(store, team_url: str | None, sql: str, params: tuple = ()) -> None:
    """Run ``sql`` (``?`` placeholders) on the store's tables behind its back: a damaged disk, a
    hand edit, or a row written by the release before the checksums."""
    if team_url is None:
        import sqlite3

        conn = sqlite3.connect(store.path)
        try:
            conn.execute(sql, params)
            conn.commit()
        finally:
            conn.close()
        return
    import psycopg

    with psycopg.connect(team_url, autocommit=True) as conn:
        conn.execute(sql.replace("?", "%s"), params)


def test_every_entry_is_written_with_its_checksum(home, team_url):
    from core.stores.common import entry_checksum

    state = _long_run(home, 1)
    from core.stores import open_rows

    rows = open_rows(team_url or home.root).export_rows("runs")
    entries = [r for table, _cols, batch in rows if table == "entries" for r in batch]
    assert len(entries) == len(state.messages) + len(state.evidence) + len(state.events)
    assert all(r[7] == entry_checksum(r[4], r[5]) for r in entries)


@pytest.mark.usefixtures("not_memory_sql")
def test_a_row_changed_behind_the_store_is_a_corrupt_checkpoint_though_it_still_validates(home, team_url):
    state = _long_run(home, 1)
    good = home.run("T-90103", repeat=1)
    # still JSON, still a Message: only the checksum can tell
    _sql(
        home.store,
        team_url,
        "UPDATE entries SET body = replace(body, 'Ticket', 'Tacket') WHERE run_id = ? AND list = 'messages' AND seq = 2",
        (state.run_id,),
    )
    for read in (home.store.load, home.store.load_view):
        with pytest.raises(CorruptCheckpoint, match=r"entry 2 of its messages changed since it was written"):
            read(state.run_id)
    assert {r.run_id: r.state_ok for r in home.store.page()} == {state.run_id: False, good.run_id: True}
    assert home.store.load(good.run_id).status == "waiting_approval"


@pytest.mark.usefixtures("not_memory_sql")
def test_rows_written_before_the_checksums_are_validated_in_full(home, team_url, new_store):
    state = _long_run(home, 1)
    _sql(home.store, team_url, "UPDATE entries SET checksum = NULL WHERE run_id = ?", (state.run_id,))
    assert new_store(home.store).load(state.run_id).model_dump() == state.model_dump()
    _sql(  # no checksum to tell: a time out of range is still refused, as before
        home.store,
        team_url,
        "UPDATE entries SET body = replace(body, '\"at\":\"2026', '\"at\":\"0001') WHERE run_id = ? AND list = 'events'",
        (state.run_id,),
    )
    with pytest.raises(CorruptCheckpoint, match="does not match the TaskState schema"):
        new_store(home.store).load(state.run_id)


@pytest.mark.usefixtures("not_memory_sql")
def test_a_changed_result_of_an_evidence_is_a_corrupt_checkpoint(home, team_url):
    """An evidence's result is kept beside its body (``extra``) and joined back when read; a change
    to it alone is caught by the row's checksum, on both loads."""
    state = _long_run(home, 1)
    _sql(
        home.store,
        team_url,
        "UPDATE entries SET extra = replace(extra, 'order_id', 'order_ID') WHERE run_id = ? AND list = 'evidence' AND seq = 1",
        (state.run_id,),
    )
    for read in (home.store.load, home.store.load_view):
        with pytest.raises(CorruptCheckpoint, match=r"entry 1 of its evidence changed since it was written"):
            read(state.run_id)


@pytest.mark.usefixtures("not_memory_sql")
def test_a_time_out_of_range_in_a_row_whose_checksum_matches_is_still_refused(home, team_url, new_store):
    """A row whose checksum matches (its checksum written with it, as by a save of another build)
    is still checked for its times, now in pydantic's Rust, on both loads; the sentence is
    :func:`core.ground.clock.supported`'s (before, a trusted event's time went unchecked)."""
    from core.ground.clock import iso
    from core.stores.common import entry_checksum

    state = _long_run(home, 1)
    first = state.events[0]
    body = first.model_dump_json().replace('"at":"2026', '"at":"0001', 1)
    assert '"at":"0001' in body
    _sql(
        home.store,
        team_url,
        "UPDATE entries SET body = ?, checksum = ? WHERE run_id = ? AND list = 'events' AND seq = 1",
        (body, entry_checksum(body, iso(first.at)), state.run_id),
    )
    for read in (new_store(home.store).load, new_store(home.store).load_view):
        with pytest.raises(CorruptCheckpoint, match=r"events\.0\.at: .*outside the times resolver supports"):
            read(state.run_id)
