"""Snapshots of the app (pytest-textual-snapshot) at 80x24, 120x40 and 200x60: the queue, the
detail of each status, and the approve, reject and help screens. A fixed clock (Monday
2026-10-12 09:00) and the demo's seeded run identities keep the SVGs from drifting.

Regenerate with ``pytest tests/tui --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

import pytest
from tui_helpers import make_app, settle, steady_cursors

SIZES = [(80, 24), (120, 40), (200, 60)]

STATUS_RUNS = {
    "executing": "T-90104-agent_structured-chat-strong-1",
    "running": "T-97580-agent-chat-small-1",
    "handed": "T-23776-agent-chat-small-1",
    "stopped": "T-83376-agent-chat-small-1",
    "done": "T-46819-agent-chat-small-1",
}
"""One run of the demo queue in each status after waiting approval (the queue's first screen)."""


@pytest.fixture
def app(demo_home):
    return make_app(demo_home)


def pressing(*keys: str):
    """A ``run_before`` that settles, then presses each key and settles again; every input's
    cursor is then held still (:func:`steady_cursors`), so the image never depends on the blink."""

    async def run_before(pilot):
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        await steady_cursors(pilot)

    return run_before


def showing(run_id: str):
    """A ``run_before`` that shows ``run_id`` in the pane (under every status)."""

    async def run_before(pilot):
        await pressing("7")(pilot)
        pilot.app.queue.jump_to(run_id)
        await settle(pilot)
        pilot.app.clear_notifications()
        await steady_cursors(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_queue(snap_compare, app, size):
    assert snap_compare(app, terminal_size=size, run_before=pressing())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("status", list(STATUS_RUNS))
def test_detail_of_each_status(snap_compare, app, size, status):
    assert snap_compare(app, terminal_size=size, run_before=showing(STATUS_RUNS[status]))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_approve_dialog(snap_compare, app, size):
    assert snap_compare(app, terminal_size=size, run_before=pressing("a"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_reject_dialog(snap_compare, app, size):
    assert snap_compare(app, terminal_size=size, run_before=pressing("x"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help(snap_compare, app, size):
    assert snap_compare(app, terminal_size=size, run_before=pressing("question_mark"))


def test_executed_run(snap_compare, app):
    async def run_before(pilot):
        await pressing("a", "y", "6")(pilot)
        pilot.app.queue.jump_to("T-65273-agent-chat-small-1")
        await settle(pilot)
        pilot.app.clear_notifications()
        await steady_cursors(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
