"""Untrusted text is shown literally: markup is not parsed, actions are not run, ESC never reaches
the screen (Textual's https://github.com/Textualize/textual/issues/6155; the demo tickets T-27245
and T-17910)."""

from __future__ import annotations

from tui_helpers import make_app, monday_home, pane_text, screen_text, select, settle

T27245 = "T-27245-agent-chat-small-1"
T17910 = "T-17910-agent-chat-small-1"


async def test_markup_and_escape_tickets_render_literally(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for run_id in (T27245, T17910):
            await select(pilot, run_id)
            await pilot.press("enter")
            await pilot.press("end")  # the pane's last line: reply draft and digest
            await settle(pilot)
            svg = app.export_screenshot()
            assert "\x1b" not in svg and "\x07" not in svg
            assert "\x1b" not in pane_text(app)
            if run_id == T27245:
                assert "[bold red]URGENT[/bold red] my mug set came with a chipped mug!!!" in pane_text(app)
                assert "[@click=app.quit]x[/]" in pane_text(app)
                assert '"[bold red]URGENT[/] mug arrived chipped"' in screen_text(app) or "URGENT[/]" in pane_text(app)
            else:
                assert 'Ticket: "late delivery"' in pane_text(app) and "My tea towels came late. Refund shipping." in pane_text(
                    app
                )
            await pilot.press("t")
            await settle(pilot)
            assert "\x1b" not in app.export_screenshot()
            await pilot.press("escape")
            await pilot.press("escape")
            await settle(pilot)
        assert app.is_running and app.return_code is None


async def test_a_markup_name_and_reason_are_shown_literally(demo_home):
    name = "[@click=app.quit]x[/] [bold red]URGENT [/"
    reason = "[/ [bold red]URGENT[/] [@click=app.quit]x[/]"
    app = make_app(demo_home, name=name)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert name in screen_text(app)  # the header, literally
        await pilot.press("x")
        await settle(pilot)
        app.screen.query_one("#reason").value = reason
        await pilot.press("enter")
        await settle(pilot)
        assert app.is_running and app.return_code is None
        state = demo_home.store.load("T-65273-agent-chat-small-1")
        assert state.status == "handed_to_person" and state.rejection.reason == reason
        assert any(reason in n.message for n in app._notifications)
        # another process rejects a run with an ESC title sequence in its reason
        other = monday_home(demo_home.root)
        other.reject("T-90103-agent-chat-small-1", "grace", "\x1b]0;pwned\x07Wrong \x1b[31mitem\x1b[0m", "Grace")
        await pilot.press("4")
        await settle(pilot)
        await select(pilot, "T-65273-agent-chat-small-1")
        text = pane_text(app)
        assert f"Rejected by {name.strip()} (role team lead)" in text and reason in text
        await select(pilot, "T-90103-agent-chat-small-1")
        assert "Wrong item" in pane_text(app)
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "pwned" not in svg
        assert app.is_running and app.return_code is None
