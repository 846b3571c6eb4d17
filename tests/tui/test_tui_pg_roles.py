"""The database has the last word in the app: on a team store with role separation, the app of a
user mapped to an ``agent`` entry cannot approve T-65273's 119.00 refund even when its own role
check is taken out (a client changed to skip it): the database's ``resolver_decide`` refuses, the
app shows its one sentence, and no refund is paid. Fixtures: :mod:`test_pg_roles` (users made and
dropped, skipped with the reason when the test role may not create roles)."""

from __future__ import annotations

from core.api.home import Home
from resolver_tui.screens.dialogs import PassphraseApproveScreen
from test_pg_roles import BOB, _refunds, _status, shop, users  # noqa: F401 (fixtures)
from tui_helpers import make_app, settle, type_text


async def test_the_app_of_an_agent_entry_cannot_approve_the_119_refund_past_the_database(shop, monkeypatch):  # noqa: F811
    import core.engine.approval
    import core.engine.rulebook

    cli, urls = shop
    for module in (core.engine.approval, core.engine.rulebook):  # a client without its own role check
        monkeypatch.setattr(module, "may_approve", lambda role, needed: True)
    home = Home(cli.root, store=urls["bob"])  # Bob's machine: the home folder holding his key file
    app = make_app(home, "agent", "Bob")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        run_id = app.screen.selected_id
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, PassphraseApproveScreen)
        await type_text(pilot, BOB)
        await pilot.press("enter")
        await settle(pilot)
        said = f"Bob is agent, and run {run_id} needs team_lead or above; nothing was recorded."
        assert app.screen.last_failure is not None and said in app.screen.last_failure[1], app.screen.last_failure
        assert any(said in n.message for n in app._notifications)
    assert _status(urls["admin"]) == "waiting_approval" and _refunds(urls["admin"]) == 0
