"""The database has the last word in the app: on a team store with role separation, the app of a
user mapped to an ``agent`` entry cannot approve T-65273's 119.00 refund even when its own role
check is taken out (a client changed to skip it): the database's ``resolver_decide`` refuses, the
app shows its one sentence, and no refund is paid. The shop is :mod:`pg_roles`' (users made and
dropped, skipped with the reason when the test role may not create roles), as the store's tests
of role separation have it."""

from __future__ import annotations

import pytest
from core.api.home import Home
from resolver_tui.screens.dialogs import PassphraseApproveScreen
from tui_helpers import make_app, settle, type_text

from pg_roles import BOB, refunds_paid, role_shop, role_users, run_status


@pytest.fixture
def shop(tmp_path, capsys, monkeypatch):
    """The shop with role separation (:func:`pg_roles.role_shop`) on new users: ``(cli, urls)``."""
    with role_users() as users, role_shop(users, tmp_path, capsys, monkeypatch) as made:
        yield made


async def test_the_app_of_an_agent_entry_cannot_approve_the_119_refund_past_the_database(shop, monkeypatch):
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
    assert run_status(urls["admin"]) == "waiting_approval" and refunds_paid(urls["admin"]) == 0
