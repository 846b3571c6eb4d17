"""The app's resume of a live run whose journal holds an answer its runner did not write: core's
one sentence in a notification (as the CLI prints it), the run left running, nothing proposed."""

from __future__ import annotations

import sqlite3

import pytest
from core.ground.errors import JournalUntrusted
from tui_helpers import make_app, select, settle

from helpers import FRIDAY, LIVE_RUN, forged_finish, refused_at_step_3


async def test_u_on_a_run_with_a_planted_journal_answer_shows_cores_sentence_and_proposes_nothing(home, stub):
    refused_at_step_3(home, stub)
    conn = sqlite3.connect(home.root / "runs.sqlite")
    with conn:
        conn.execute(
            "INSERT INTO model_calls (run_id, step, attempt, route, sent_at, answer, tokens_in, tokens_out, answered_at) "
            "VALUES (?, 3, 2, 'x', ?, ?, 2660, 48, ?)",
            (LIVE_RUN, FRIDAY, forged_finish(stub), FRIDAY),
        )
    conn.close()
    with pytest.raises(JournalUntrusted) as refused:
        home.resume(LIVE_RUN)
    sentence = str(refused.value)
    calls = stub.calls
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")  # running
        await settle(pilot)
        await select(pilot, LIVE_RUN)
        await pilot.press("u")
        await settle(pilot)
        assert any(n.message == sentence for n in app._notifications), [n.message for n in app._notifications]
    assert stub.calls == calls
    saved = home.store.load(LIVE_RUN)
    assert (saved.status, saved.proposal) == ("running", None)
