"""The app on a team store: it works the queue on PostgreSQL as on the home folder's files, and its
top bar says whose queue it is (the team store's database and server, never a password)."""

from __future__ import annotations

from core.api.home import Home
from core.ground.homepath import team_label
from tui_helpers import make_app, screen_text, select, settle

from pg import fresh_schema

T65273 = "T-65273-agent-chat-small-1"


async def test_the_app_approves_on_a_team_store_and_names_it(tmp_path):
    with fresh_schema() as url:
        home = Home(tmp_path / "h", store=url)
        home.run("T-65273")
        app = make_app(home, role="grace", name="Grace")
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(pilot)
            text = screen_text(app)
            # the database and server of whatever RESOLVER_TEST_PG names, never the schema's options
            assert team_label(url) in text and "team store " in team_label(url), text
            assert "options" not in team_label(url) and "search_path" not in text, text
            await select(pilot, T65273)
            await pilot.press("a")
            await settle(pilot)
            await pilot.press("y")
            await settle(pilot)
        state = Home(tmp_path / "h", store=url).store.load(T65273)
        assert state.status == "done" and state.approval is not None and state.approval.name == "Grace"


async def test_an_empty_team_store_names_the_store_not_the_home_folder(tmp_path):
    """Seen in tmux at 80x24: an empty team store said "No saved runs in /tmp/…", the home
    folder, which holds none of the store's runs."""
    with fresh_schema() as url:
        home = Home(tmp_path / "h", store=url)
        app = make_app(home, role="team_lead", name="Tomás")
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            text = screen_text(app)
            assert f"No saved runs in the team store {home.runs_live_at}." in text, text
            assert str(tmp_path) not in text
