"""Signed decisions in the app: in a shop home the approve dialog asks for the approver's
passphrase in a masked input, and the unlocked key is kept for the app's session only."""

from __future__ import annotations

from core.api.home import Home
from core.engine.approvers import Registry
from core.ground.clock import SystemClock
from resolver_tui.screens.dialogs import ConfirmScreen, PassphraseApproveScreen
from textual.widgets import Input
from tui_helpers import make_app, screen_text, settle, shop_home, type_text

T65273 = "T-65273-agent-chat-small-1"
T97580 = "T-97580-agent-chat-small-1"


async def test_the_app_approves_with_a_passphrase_in_the_dialog(tmp_path):
    home = shop_home(tmp_path)
    app = make_app(home, "team_lead", "Ana")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        run_id = app.screen.selected_id
        await pilot.press("a")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PassphraseApproveScreen)
        assert "Passphrase for Ana" in screen_text(app)
        field = dialog.query_one("#passphrase", Input)
        assert field.password is True and app.focused is field
        await type_text(pilot, "not-anas")
        await pilot.press("enter")
        await settle(pilot)
        assert home.store.load(run_id).status == "waiting_approval"  # a wrong passphrase decides nothing
        assert app.screen.unlocked is None
        await pilot.press("a")
        await settle(pilot)
        await type_text(pilot, "ana-passphrase")
        await pilot.press("enter")
        await settle(pilot)
        state = home.store.load(run_id)
        assert state.status == "done" and state.approval.name == "Ana" and state.approval.signature.startswith("ed25519:")
        assert repr(app.screen.unlocked) == "Unlocked('Ana', 'team_lead')"  # held in memory, never printed
        # the key stays unlocked for the session: the next approval asks only yes or no
        other = T97580 if run_id == T65273 else T65273
        await pilot.press("1")
        await settle(pilot)
        assert app.screen.selected_id == other
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert home.store.load(other).approval.name == "Ana"


async def test_the_app_forgets_an_unlocked_key_after_the_idle_time(tmp_path):
    """An app left unattended does not keep the key unlocked: after key_idle_minutes without a
    decision (default 5) the next approval asks for the passphrase again; nothing is decided in the
    approver's name."""
    from core.engine.signing import KeyHolder

    home = shop_home(tmp_path)
    app = make_app(home, "team_lead", "Ana")
    now = [1000.0]
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.decisions.key_holder = KeyHolder(
            300.0, clock=lambda: now[0]
        )  # the default 5 minutes, on a clock the test moves
        run_id = app.screen.selected_id
        await pilot.press("a")
        await settle(pilot)
        await type_text(pilot, "ana-passphrase")
        await pilot.press("enter")
        await settle(pilot)
        assert home.store.load(run_id).status == "done"
        now[0] += 301  # the approver walked away
        other = T97580 if run_id == T65273 else T65273
        await pilot.press("1")
        await settle(pilot)
        assert app.screen.selected_id == other
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, PassphraseApproveScreen)  # asked again, not a yes/no
        await pilot.press("escape")
        await settle(pilot)
        assert home.store.load(other).status == "waiting_approval"
        assert app.screen.unlocked is None


async def test_the_dialog_says_where_a_missing_key_file_was_looked_for(tmp_path):
    """On a team store Ana's key is a file on her machine. The app on another machine (an empty
    ``keys/``) says in one sentence where it looked and how to make or copy the key; nothing is
    decided, nothing crashes, and the dialog can be tried again."""
    from core.api.homekind import init_home
    from core.engine.keyfiles import KeyFiles

    from pg import fresh_schema

    with fresh_schema() as url:
        root, anas = tmp_path / "grace", tmp_path / "ana"
        init_home(root, shop=True)
        home = Home(root, store=url)
        now = SystemClock().now()
        Registry(root, store=url).init("Grace", "grace-passphrase", now)
        made, _ = Registry(anas, store=url).make_key("Ana", "ana-passphrase")  # on Ana's machine
        Registry(root, store=url).add("Ana", "team_lead", "", "grace-passphrase", now, public_key=made.public_key)
        home.run("T-65273")
        app = make_app(home, "team_lead", "Ana")
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            run_id = app.screen.selected_id
            await pilot.press("a")
            await settle(pilot)
            assert isinstance(app.screen, PassphraseApproveScreen)
            await type_text(pilot, "ana-passphrase")
            await pilot.press("enter")
            await settle(pilot)
            said = f"This machine holds no key for Ana (looked for {KeyFiles(root).path('Ana')})"
            assert app.screen.last_failure is not None and app.screen.last_failure[1].startswith(said)
            assert any(said in n.message and n.severity == "error" for n in app._notifications)
            assert home.store.load(run_id).status == "waiting_approval"
            assert app.screen.unlocked is None
            await pilot.press("a")  # asked again, not stuck
            await settle(pilot)
            assert isinstance(app.screen, PassphraseApproveScreen)
