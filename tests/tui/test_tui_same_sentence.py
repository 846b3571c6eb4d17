"""One rulebook, one sentence: the CLI and the app say the same words when they refuse.

Each case refuses on the command line (``resolver ... --home``, in this process) and in the app
on the same home, and the two sentences are compared whole: wrong role, already decided (by
whom), not waiting, lease held, stale digest.
"""

from __future__ import annotations

import pytest
from core.cli import main
from core.engine.rulebook import not_decidable, role_too_low
from core.ground.clock import FileClock, parse_time
from resolver_tui.screens.dialogs import ConfirmScreen
from tui_helpers import MONDAY, make_app, pane_text, select, settle

T65273 = "T-65273-agent-chat-small-1"
T90103 = "T-90103-agent-chat-small-1"
T97580 = "T-97580-agent-chat-small-1"
T90104 = "T-90104-agent_structured-chat-strong-1"


@pytest.fixture
def cli_refusal(demo_home, capsys):
    """``cli_refusal("approve", RUN, "--as", "agent") -> the sentence on stderr`` (exit code 4, refused)."""
    FileClock(demo_home.root / "clock.json").set(parse_time(MONDAY))  # the CLI reads the trainer's clock

    def run(*argv: str) -> str:
        capsys.readouterr()
        code = main([*argv, "--home", str(demo_home.root)])
        out, err = capsys.readouterr()
        assert code == 4, out + err  # refused (the documented exit codes)
        assert len(err.strip().splitlines()) == 1, err
        return err.strip()

    return run


def _app_said(app) -> str:
    """The app's last notification."""
    return list(app._notifications)[-1].message


async def test_wrong_role(demo_home, cli_refusal):
    said_by_cli = cli_refusal("approve", T65273, "--as", "agent")
    assert said_by_cli == role_too_low(T65273, "agent", "team_lead")
    app = make_app(demo_home, role="agent", name="Amira")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T65273)
        assert f"Not offered: a approve, x reject: {said_by_cli}" in pane_text(app)
        app.queue.try_action("approve")
        await settle(pilot)
        assert _app_said(app) == said_by_cli


async def test_already_decided_says_by_whom(demo_home, cli_refusal):
    demo_home.reject(T90103, "grace", "Wrong item.", "Grace")
    said_by_cli = cli_refusal("approve", T90103, "--as", "grace")
    assert "already rejected by Grace (role grace) at 2026-10-12T09:00:00-04:00" in said_by_cli
    assert said_by_cli == not_decidable(demo_home.queue.load(T90103))
    assert cli_refusal("reject", T90103, "--as", "grace", "--reason", "again") == said_by_cli
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T90103)
        assert f"Not offered: a approve, x reject: {said_by_cli}" in pane_text(app)
        app.queue.try_action("reject")
        await settle(pilot)
        assert _app_said(app) == said_by_cli


async def test_not_waiting(demo_home, cli_refusal):
    said_by_cli = cli_refusal("approve", T97580, "--as", "grace")
    assert said_by_cli == f"Run {T97580} is running, not waiting_approval; there is nothing to decide."
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T97580)
        assert f"Not offered: a approve, x reject: {said_by_cli}" in pane_text(app)
        app.queue.try_action("approve")
        await settle(pilot)
        assert _app_said(app) == said_by_cli


async def test_lease_held(demo_home, cli_refusal):
    demo_home.store.acquire_lease(T90104, "resolver-tui@elsewhere:1:abc", 60)
    said_by_cli = cli_refusal("resume", T90104)
    assert said_by_cli.startswith(f"Run {T90104} is being executed by resolver-tui@elsewhere")
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T90104)
        await pilot.press("u")
        await settle(pilot)
        assert _app_said(app) == said_by_cli
        assert said_by_cli in pane_text(app)


async def test_stale_digest(demo_home, cli_refusal):
    read = demo_home.queue.load(T65273).proposal.digest
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T65273)
        await pilot.press("a")  # Grace reads the request; then the proposal changes under her
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        state = demo_home.queue.load(T65273)
        state.proposal.reply_draft += "\nP.S. edited after it was read."
        demo_home.store.save(state)
        await pilot.press("y")
        await settle(pilot)
        said_by_app = _app_said(app)
    said_by_cli = cli_refusal("approve", T65273, "--as", "grace", "--digest", read)
    assert said_by_cli == said_by_app
    assert said_by_cli.startswith(f"The digest you read ({read}) is not the current proposal's")
    assert demo_home.queue.load(T65273).status == "waiting_approval"
