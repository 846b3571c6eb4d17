"""Hand over and snooze from the app (the CLI's marks, the app's part): ``o`` asks for the
colleague and a one-line note, ``z`` for a time (ISO 8601 or a duration such as ``90m``, as
``resolver snooze --until`` reads it); both write through :meth:`core.api.home.Home.mark`, the command
line's path. Core's refusal is shown with its sentence and nothing is written; keys typed before
the dialog was drawn answer nothing; on a run that is not waiting the key says why."""

from __future__ import annotations

from resolver_tui.screens.dialogs import MarkScreen
from resolver_tui.widgets.bars import FilterBar
from textual import events
from textual.keys import _character_to_key
from tui_helpers import make_app, monday_home, open_key, pane_text, select, settle, type_text

RUN = "T-65273-agent-chat-small-1"


def marks_written(home) -> list[str]:
    return [r["decision"] for r in home.store.audit(RUN)]


def burst(app, keys: str) -> None:
    """``keys`` as one terminal read (no await between them; see test_tui_settled)."""
    for character in keys:
        app._driver.process_message(events.Key(_character_to_key(character), character))


async def test_o_hands_the_run_over_with_a_note_and_the_pane_shows_it(tmp_path):
    home = monday_home(tmp_path / "home")
    home.run("T-65273")
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_key(pilot, RUN, "o")
        assert isinstance(app.screen, MarkScreen)
        await type_text(pilot, "Ana")
        await pilot.press("enter")  # on to the note
        await type_text(pilot, "[b]check[/b] the tracking first")
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, MarkScreen)
        assert marks_written(home) == ["handover"]
        assert pane_text(app).count("Handed to Ana by Tomás at 09:00: [b]check[/b] the tracking first") == 1  # once, not twice


async def test_a_hand_over_without_a_note_is_refused_with_cores_sentence_and_writes_nothing(tmp_path):
    home = monday_home(tmp_path / "home")
    home.run("T-65273")
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_key(pilot, RUN, "o")
        await type_text(pilot, "Ana")
        await pilot.press("enter", "enter")
        await settle(pilot)
        assert marks_written(home) == []
        said = "A hand-over needs a note (--note TEXT): say what the colleague should look at."
        assert said in app.queue.errors[RUN]
        assert any(said in n.message for n in app._notifications)


async def test_z_snoozes_the_run_for_a_duration_and_the_pane_shows_it(tmp_path):
    home = monday_home(tmp_path / "home")
    home.run("T-65273")
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(await open_key(pilot, RUN, "z"), MarkScreen)
        assert "[1 waiting approval 1]" in str(app.queue.query_one(FilterBar).render())
        await type_text(pilot, "90m")
        await pilot.press("enter")
        await settle(pilot)
        assert marks_written(home) == ["snooze"]
        assert "Set aside by Tomás until 2026-" in pane_text(app)
        bar = str(
            app.queue.query_one(FilterBar).render()
        )  # the waiting count leaves the run set aside out; "all" still counts it
        assert "1 waiting approval 0 " in bar and "[7 all 1]" in bar


async def test_a_snooze_past_the_runs_expiry_or_unreadable_is_refused_and_writes_nothing(tmp_path):
    home = monday_home(tmp_path / "home")
    home.run("T-65273")
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        for typed, said in (("30d", "approval request expires at"), ("soon", "Cannot read the time 'soon'")):
            await open_key(pilot, RUN, "z")
            await type_text(pilot, typed)
            await pilot.press("enter")
            await settle(pilot)
            assert marks_written(home) == []
            assert said in app.queue.errors[RUN]


async def test_keys_typed_before_the_dialog_is_drawn_go_nowhere(tmp_path):
    home = monday_home(tmp_path / "home")
    home.run("T-65273")
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, RUN)
        for key in "oz":
            burst(app, key + "90m\r")
            await settle(pilot)
            assert isinstance(app.screen, MarkScreen)  # shown, waiting for keys typed after it
            assert all(not box.value for box in app.screen.query("Input"))
            await pilot.press("escape")
            await settle(pilot)
            assert not isinstance(app.screen, MarkScreen)
        assert marks_written(home) == []


async def test_on_a_run_that_is_not_waiting_the_keys_say_why_and_open_nothing(tmp_path):
    home = monday_home(tmp_path / "home")
    home.run("T-65273")
    home.reject(RUN, "team_lead", "not this one", "Tomás")
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("7")  # every run
        await settle(pilot)
        for key, word in (("o", "handed over"), ("z", "snoozed")):
            assert not isinstance(await open_key(pilot, RUN, key), MarkScreen)
            assert any(
                f"{key}: only a waiting run is {word}; {RUN} is handed_to_person." in n.message for n in app._notifications
            )
        assert marks_written(home) == ["reject"]
