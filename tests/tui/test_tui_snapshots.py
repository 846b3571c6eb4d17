"""Snapshots of the main screens (pytest-textual-snapshot), fixed size and a fixed clock.

Regenerate with ``pytest tests/tui --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.demo import build_demo
from tui_helpers import make_app, monday_home, settle

SIZE = (120, 40)


@pytest.fixture
def app(tmp_path: Path):
    home = monday_home(tmp_path / "home")
    build_demo(home)
    return make_app(home)


def test_queue(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_approve_dialog(snap_compare, app):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_reject_dialog(snap_compare, app):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_executed_run(snap_compare, app):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        pilot.app.queue.jump_to("T-65273-agent-chat-small-1")
        await settle(pilot)
        pilot.app.clear_notifications()
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help(snap_compare, app):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
