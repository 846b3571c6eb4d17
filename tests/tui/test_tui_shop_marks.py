"""``c``, ``o`` and ``z`` in a shop home with the key still locked: a mark is signed, so the key
asks for the approver's passphrase first (the approve dialog's masked box, its button ``Unlock``),
unlocks the key for the session, and goes on: the claim is written, or the hand-over or snooze
dialog opens. A wrong passphrase is core's one sentence and writes nothing; Esc writes nothing;
once unlocked, the next key asks no passphrase."""

from __future__ import annotations

from resolver_tui.screens.dialogs import MarkScreen, PassphraseApproveScreen
from tui_helpers import make_app, open_key, pane_text, screen_text, settle, shop_home, type_text

from helpers import T65273_RUN as T65273


def marks(home) -> list[tuple[str, str]]:
    """The run's audit rows: ``(decision, name)`` (that a shop's mark is signed is core's test,
    tests/engine/test_marks.py; it cannot be written unsigned there)."""
    return [(r["decision"], r["name"]) for r in home.store.audit(T65273)]


async def unlock(pilot, passphrase: str) -> None:
    assert isinstance(pilot.app.screen, PassphraseApproveScreen)
    await type_text(pilot, passphrase)
    await pilot.press("enter")
    await settle(pilot)


async def test_c_asks_the_passphrase_then_claims_signed_and_a_wrong_one_writes_nothing(tmp_path):
    home = shop_home(tmp_path)
    app = make_app(home, "team_lead", "Ana")
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(await open_key(pilot, T65273, "c"), PassphraseApproveScreen)
        text = screen_text(app)
        assert "Unlock your key: claim run T-65273-agent-chat-small-1" in text and "Passphrase for Ana" in text
        assert "Unlock" in text
        await unlock(pilot, "not-anas")
        assert marks(home) == [] and app.queue.unlocked is None
        assert any("Wrong passphrase for Ana: nothing was marked." in n.message for n in app._notifications)
        assert not any("nothing was decided" in n.message for n in app._notifications)  # a claim decides nothing
        assert isinstance(await open_key(pilot, T65273, "c"), PassphraseApproveScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert marks(home) == [] and app.queue.unlocked is None
        await open_key(pilot, T65273, "c")
        await unlock(pilot, "ana-passphrase")
        assert marks(home) == [("claim", "Ana")]
        assert "Ana is on it (claimed" in pane_text(app)
        await open_key(pilot, T65273, "c")  # unlocked: c again releases at once
        assert marks(home) == [("claim", "Ana"), ("release", "Ana")]


async def test_o_and_z_ask_the_passphrase_then_open_their_dialog(tmp_path):
    home = shop_home(tmp_path)
    app = make_app(home, "team_lead", "Ana")
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(await open_key(pilot, T65273, "z"), PassphraseApproveScreen)
        assert "Unlock your key: snooze run" in screen_text(app)
        await unlock(pilot, "ana-passphrase")
        assert isinstance(app.screen, MarkScreen) and app.screen.title_text == f"Snooze run {T65273}"
        await type_text(pilot, "90m")
        await pilot.press("enter")
        await settle(pilot)
        assert marks(home) == [("snooze", "Ana")]
        await pilot.press("1")  # back to the waiting queue (the snoozed run is followed under all)
        await settle(pilot)
        assert isinstance(await open_key(pilot, T65273, "o"), MarkScreen)  # unlocked: no passphrase now
        await type_text(pilot, "Grace")
        await pilot.press("enter")
        await type_text(pilot, "the capture")
        await pilot.press("enter")
        await settle(pilot)
        assert marks(home) == [("snooze", "Ana"), ("handover", "Ana")]


async def test_o_asks_the_passphrase_first_then_the_hand_over_dialog(tmp_path):
    home = shop_home(tmp_path)
    app = make_app(home, "team_lead", "Ana")
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(await open_key(pilot, T65273, "o"), PassphraseApproveScreen)
        assert "Unlock your key: hand-over run" in screen_text(app)
        await unlock(pilot, "ana-passphrase")
        assert isinstance(app.screen, MarkScreen) and app.screen.title_text == f"Hand run {T65273} over"
        await pilot.press("escape")
        await settle(pilot)
        assert marks(home) == [] and app.queue.unlocked is not None
