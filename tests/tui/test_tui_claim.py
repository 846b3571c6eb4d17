"""Claim from the app (the CLI's marks, the app's part): ``c`` claims the highlighted waiting run
and releases it again, the pane shows the claim and a hand-over's note, and the approve and reject
dialogs of a run a colleague claimed say so first (the dialog still defaults to No)."""

from __future__ import annotations

from resolver_tui.screens.dialogs import ConfirmScreen, RejectScreen
from tui_helpers import make_app, monday_home, open_key, pane_text, settle

RUN = "T-65273-agent-chat-small-1"


async def test_c_claims_the_highlighted_run_and_c_again_releases_it(tmp_path):
    home = monday_home(tmp_path / "home")
    home.run("T-65273")
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_key(pilot, RUN, "c")
        assert "Tomás is on it (claimed 09:00, until 09:30)." in pane_text(app)
        assert pane_text(app).count("Tomás is on it") == 1  # not again under Outcome (seen in tmux)
        assert [r["decision"] for r in home.store.audit(RUN)] == ["claim"]
        await pilot.press("c")
        await settle(pilot)
        assert "is on it" not in pane_text(app)
        assert [r["decision"] for r in home.store.audit(RUN)] == ["claim", "release"]


async def test_deciding_a_run_a_colleague_claimed_says_so_first(tmp_path):
    home = monday_home(tmp_path / "home")
    home.run("T-65273")
    home.mark("claim", RUN, "grace", "Ana")
    home.mark("handover", RUN, "grace", "Ana", to="Tomás", note="[b]over[/b] to you")
    home.mark("claim", RUN, "grace", "Ana")
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(await open_key(pilot, RUN, "a"), ConfirmScreen)
        text = pane_text(app)
        assert (
            "Ana is on it (claimed 09:00, until 09:30)." in text and "Handed to Tomás by Ana at 09:00: [b]over[/b] to you" in text
        )
        assert app.screen.body[0] == "Ana is on it (claimed 09:00, until 09:30)."
        await pilot.press("enter")  # the default is No
        await settle(pilot)
        assert home.store.load(RUN).status == "waiting_approval"
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, RejectScreen)
        assert app.screen.body[0] == "Ana is on it (claimed 09:00, until 09:30)."
