"""Snapshots of the main screens (pytest-textual-snapshot), fixed size and a fixed clock.

Regenerate with ``pytest tests/tui --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

import pytest
from tui_helpers import make_app, settle

SIZE = (120, 40)


@pytest.fixture
def app(demo_home):
    return make_app(demo_home)


def test_queue(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def pressing(*keys: str):
    """A ``run_before`` that settles, then presses each key and settles again."""

    async def run_before(pilot):
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run_before


def test_approve_dialog(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=pressing("a"))


def test_reject_dialog(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=pressing("x"))


def test_executed_run(snap_compare, app):
    async def run_before(pilot):
        await pressing("a", "y", "6")(pilot)
        pilot.app.queue.jump_to("T-65273-agent-chat-small-1")
        await settle(pilot)
        pilot.app.clear_notifications()
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=pressing("question_mark"))
