"""The approve dialog on a small terminal (80x24): it opens at its top, so the approver reads
the title and the actions first, and its buttons stay on screen outside the scrolling body
(a new user's report: it opened scrolled to the bottom, the actions off screen)."""

from __future__ import annotations

from core.api.views import Approver, approve_dialog
from resolver_tui.screens.dialogs import ConfirmScreen
from textual.widgets import Button
from tui_helpers import make_app, open_key, screen_text, settle, shop_home

T65273 = "T-65273-agent-chat-small-1"
TWIN = "T-90103-agent-chat-small-2"
GRACE = Approver("grace", "Grace")


def _dialog_shows_its_top_and_no(app, run_id: str, first_action: str) -> None:
    assert isinstance(app.screen, ConfirmScreen)
    text = screen_text(app)
    assert f"Approve run {run_id}?" in text
    assert "Actions (nothing has happened yet):" in text and f"1. {first_action}" in text
    no = app.screen.query_one("#no", Button)
    assert app.focused is no
    region = no.region  # the part on screen: empty when scrolled out of sight
    assert region.height == 1 and region.y >= 0 and region.bottom <= 24


async def test_the_approve_dialog_at_80x24_shows_the_actions_and_the_no_button_at_once(demo_home):
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_key(pilot, T65273, "a")
        _dialog_shows_its_top_and_no(app, T65273, "request_refund")
        await pilot.press("enter")  # No, the default: nothing approved
        await settle(pilot)
        assert demo_home.store.load(T65273).status == "waiting_approval"


async def test_a_dialog_taller_than_80x24_opens_at_its_top_with_no_on_screen(demo_home):
    """The dialog of a run whose world changed since the agent looked (its twin was approved
    and executed) is 20 lines: the body scrolls, the title and actions show first, No stays."""
    twin = demo_home.queue.run("T-90103-agent-chat-small-1", GRACE).decision
    demo_home.approve(twin.run_id, "grace", "Grace", twin.digest, expect_version=twin.version)
    body = approve_dialog(demo_home.queue.run(TWIN, GRACE).decision, GRACE)
    assert len(body) >= 20
    app = make_app(demo_home, role="grace", name="Grace")
    answers: list[bool | None] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.push_screen(ConfirmScreen(f"Approve run {TWIN}?", body, yes="Approve"), answers.append)
        await settle(pilot)
        _dialog_shows_its_top_and_no(app, TWIN, "reship_item")
        assert "Approve and execute these operations now?" not in screen_text(app)  # below, scrolled
        await pilot.press("enter")
        await settle(pilot)
        assert answers == [False]


def _seal_on_screen(app, digest: str, who: str) -> None:
    """The digest and who decides are on screen, inside the terminal, whatever the body scrolls."""
    from textual.widgets import Static

    seal = app.screen.query_one("#dialog-seal", Static)
    region = seal.region
    assert region.height >= 1 and region.y >= 0 and region.bottom <= 24, region
    text = screen_text(app)
    assert f"Digest {digest[:12]} · Approving as {who}" in text, text


async def test_a_tall_approve_dialog_keeps_the_digest_and_who_on_screen_at_80x24(demo_home):
    """A new user's finding: at 80x24 the digest and "Approving as" were below the fold of a
    tall dialog while the key that approves was in reach."""
    from core.api.views import decision_seal

    twin = demo_home.queue.run("T-90103-agent-chat-small-1", GRACE).decision
    demo_home.approve(twin.run_id, "grace", "Grace", twin.digest, expect_version=twin.version)
    decision = demo_home.queue.run(TWIN, GRACE).decision
    body = approve_dialog(decision, GRACE)
    app = make_app(demo_home, role="grace", name="Grace")
    answers: list[bool | None] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        dialog = ConfirmScreen(f"Approve run {TWIN}?", body, yes="Approve", seal=decision_seal(decision, GRACE))
        app.push_screen(dialog, answers.append)
        await settle(pilot)
        assert "Approve and execute these operations now?" not in screen_text(app)  # the body is taller than the screen
        _seal_on_screen(app, decision.digest, GRACE.label)
        await pilot.press("enter")
        await settle(pilot)
        assert answers == [False]


async def test_the_approve_key_opens_a_dialog_with_its_seal(demo_home):
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_key(pilot, T65273, "a")
        assert isinstance(app.screen, ConfirmScreen)
        _seal_on_screen(app, demo_home.store.load(T65273).proposal.digest, GRACE.label)
        await pilot.press("enter")
        await settle(pilot)


async def test_the_shop_passphrase_dialog_keeps_the_digest_and_who_on_screen_at_80x24(tmp_path):
    """The same finding in a shop home: the focus is in the passphrase box, and the digest and
    who approves stay in sight above it."""
    from resolver_tui.screens.dialogs import PassphraseApproveScreen

    home = shop_home(tmp_path)
    app = make_app(home, "team_lead", "Ana")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_key(pilot, T65273, "a")
        assert isinstance(app.screen, PassphraseApproveScreen)
        _seal_on_screen(app, home.store.load(T65273).proposal.digest, Approver("team_lead", "Ana").label)
        await pilot.press("escape")
        await settle(pilot)
        assert home.store.load(T65273).status == "waiting_approval"
