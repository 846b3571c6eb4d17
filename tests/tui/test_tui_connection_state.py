"""A worker thread of the app never keeps a database state older than the last failure. The world
is not writable during an approval (every connection opened meanwhile is opened ``mode=ro``, as
SQLite does for a file it may not write: :func:`helpers.unwritable`); it is writable again; ``u``
in the same app finishes the run, once."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest
from core.api.home import Home
from core.ground.clock import FixedClock
from resolver_tui.screens.dialogs import ConfirmScreen
from tui_helpers import make_app, pane_text, select, settle

from helpers import FRIDAY, T65273_RUN, unwritable


@pytest.mark.parametrize("threads", [1, None])
async def test_the_app_resumes_after_the_world_was_unwritable_during_an_approval(tmp_path, monkeypatch, threads):
    """The keys that failed, in the app: ``a`` while the world is not writable, then ``u`` once it
    is, in the same app. With one worker thread every worker reuses the connection of the failed
    approval; with the default pool, any of them."""
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    home.run("T-65273")
    pool = ThreadPoolExecutor(max_workers=threads) if threads else None
    if pool is not None:
        asyncio.get_running_loop().set_default_executor(pool)
    app = make_app(home)
    with ExitStack() as window:
        window.enter_context(unwritable(monkeypatch, home.world_path))  # from the app's start: its threads open it read-only
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await select(pilot, T65273_RUN)
            await pilot.press("a")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await settle(pilot)
            assert home.store.load(T65273_RUN).status == "executing"
            assert "attempt to write a readonly database" in pane_text(app) + str(app._notifications)
            window.close()  # the world is writable again
            await pilot.press("2")  # the executing runs
            await settle(pilot)
            await select(pilot, T65273_RUN)
            await pilot.press("u")
            await settle(pilot)
            assert "attempt to write a readonly database" not in pane_text(app)
    state = home.store.load(T65273_RUN)
    assert state.status == "done", [e.message for e in state.events[-3:]]
    assert len(home.world().refunds_of("LK-507862")) == 1
    if pool is not None:
        pool.shutdown(wait=True)
