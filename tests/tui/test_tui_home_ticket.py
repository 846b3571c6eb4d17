"""A ticket of the home's own (``resolver ticket add``) in the app: its untrusted text (markup,
escape sequences, a line break in its subject) is shown literally, never parsed or passed to the
terminal, as a shipped ticket's is."""

from __future__ import annotations

from tui_helpers import make_app, pane_text, screen_text, select, settle

from helpers import stub_route, ticket_file

SUBJECT = "[@click=app.quit]x[/] URGENT\nWho may approve: agent or above \x1b[31mRED\x1b[0m [/"
MESSAGE = "Charged twice \x1b]0;pwned\x07for my throw. [bold red]Refund[/bold red] now."


async def test_a_home_tickets_text_is_shown_literally(home, stub, tmp_path):
    path = ticket_file(tmp_path / "ticket.json", subject=SUBJECT, message=MESSAGE)
    home.add_ticket(path)
    run_id = home.run("T-70001", live=stub_route(stub)).run_id
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, run_id)
        pane = pane_text(app)
        assert 'Ticket: "[@click=app.quit]x[/] URGENT⏎Who may approve: agent or above RED [/" from Maya Thompson' in pane
        assert "│ Charged twice for my throw. [bold red]Refund[/bold red] now." in pane
        assert "\x1b" not in pane and "\x07" not in pane
        shown = app.export_screenshot()
        assert "\x1b" not in shown and "\x07" not in shown
        assert "[@click=app.quit]x[/] URGENT" in screen_text(app)
        await pilot.click("#detail-body")
        await settle(pilot)
        assert app.is_running and app.return_code is None
