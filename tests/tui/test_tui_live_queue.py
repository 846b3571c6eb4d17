"""The live queue on a team store: with polling off, a claim, a hand-over and a decision made on
another connection reach the app by PostgreSQL's NOTIFY; a listener whose connection drops
reconnects, says so and reads the queue again; the listener's thread ends with the app. Each wait
is on a predicate of the app's state, with a deadline only as a guard."""

from __future__ import annotations

from core.api.home import Home
from core.ground.clock import FixedClock
from resolver_tui.screens.queue import LOST, RECONNECTED
from tui_helpers import GUARD_S, MONDAY, make_app, pane_text, screen_text, select, settle, until

from pg import fresh_schema

RUN = "T-65273-agent-chat-small-1"


def _homes(tmp_path, url: str) -> tuple[Home, Home]:
    mine = Home(tmp_path / "a", clock=FixedClock(MONDAY), store=url)
    other = Home(tmp_path / "b", clock=FixedClock(MONDAY), store=url)
    return mine, other


async def test_a_claim_a_handover_and_a_decision_elsewhere_reach_the_app_by_notification(tmp_path):
    with fresh_schema() as url:
        mine, other = _homes(tmp_path, url)
        mine.run("T-65273")
        app = make_app(mine)  # refresh_interval=None: no timer, only notifications
        async with app.run_test(size=(160, 40)) as pilot:
            queue = app.queue
            assert queue.live is not None and queue.refresh_interval is None
            await settle(pilot)
            await select(pilot, RUN)
            assert queue.live.listening(GUARD_S)
            assert ", live" in screen_text(app)  # the filter bar: "refreshed 09:00:02, live"
            heard = queue.live_heard

            other.mark("claim", RUN, "grace", "Ana")
            await until(pilot, lambda: "Ana is on it (claimed 09:00, until 09:30)." in pane_text(app), "Ana's claim")
            assert queue.live_heard > heard

            other.mark("handover", RUN, "grace", "Ana", to="Tomás", note="yours")
            await until(pilot, lambda: "Handed to Tomás by Ana at 09:00: yours" in pane_text(app), "the hand-over")

            assert other.approve(RUN, "grace", "Ana").status == "done"
            await until(  # the waiting filter shown: the run leaves it, and the counts move
                pilot,
                lambda: RUN not in queue.summaries and queue.counts.get("done") == 1 and not queue.counts.get("waiting_approval"),
                "the approval's outcome",
            )
        assert not queue.live.alive  # the listener's thread ended with the app


async def test_a_listener_that_reconnects_says_so_and_reads_the_queue_again(tmp_path):
    import psycopg

    with fresh_schema() as url:
        mine, other = _homes(tmp_path, url)
        mine.run("T-65273")
        app = make_app(mine)
        async with app.run_test(size=(160, 40)) as pilot:
            queue = app.queue
            await settle(pilot)
            await select(pilot, RUN)
            assert queue.live.listening(GUARD_S)
            pid = queue.live.pid
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
            await until(  # the notice is posted to the app after the state is set: wait for both
                pilot,
                lambda: queue.live_state == "reconnected" and RECONNECTED in [n.message for n in app._notifications],
                "the reconnection",
            )
            told = [n.message for n in app._notifications]
            assert LOST in told and RECONNECTED in told and told.index(LOST) < told.index(RECONNECTED)
            other.mark("claim", RUN, "grace", "Ana")  # heard on the new connection
            await until(pilot, lambda: "Ana is on it" in pane_text(app), "a claim after the reconnection")
        assert not queue.live.alive


async def test_the_home_folder_has_no_listener_and_polls(tmp_path):
    home = Home(tmp_path / "h", clock=FixedClock(MONDAY))
    assert home.queue_changes() is None
    from resolver_tui.app import ResolverApp

    app = ResolverApp(home, "team_lead", "Tomás")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert app.queue.live is None and app.queue.refresh_interval == 2.0


async def test_r_after_every_connection_of_the_app_was_killed_reconnects_quietly(tmp_path):
    """The server ended every connection of the app's pool (a restart, a failover, an
    administrator): the next ``R`` reads the queue on new connections and says nothing of the
    dead ones (it said "Cannot use …: terminating connection due to administrator command")."""
    import psycopg

    with fresh_schema() as url:
        mine, other = _homes(tmp_path, url)
        mine.run("T-65273")
        app = make_app(mine)
        async with app.run_test(size=(160, 40)) as pilot:
            queue = app.queue
            await settle(pilot)
            await select(pilot, RUN)
            pool = mine.store.db.pool
            pids = [conn.info.backend_pid for conn in list(pool._pool)]  # the idle connections the next reads take
            assert pids
            queue.live.stop()  # no notification: only R reads the queue again
            await until(pilot, lambda: not queue.live.alive, "the listener stopped")
            other.mark("claim", RUN, "grace", "Ana")
            with psycopg.connect(url, autocommit=True) as conn:
                for pid in pids:
                    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
            told = len(app._notifications)
            await pilot.press("R")
            await settle(pilot)
            await until(pilot, lambda: "Ana is on it (claimed 09:00, until 09:30)." in pane_text(app), "the claim read by R")
            assert [n.message for n in list(app._notifications)[told:]] == []


async def test_at_80_columns_the_filter_bar_still_says_live_and_not_live(tmp_path):
    """At 80x24 "refreshed 09:00:02, live" does not fit beside the filters: the bar says
    ``live`` alone (and ``not live`` while the listener reconnects), every filter still shown."""
    import psycopg

    with fresh_schema() as url:
        mine, _ = _homes(tmp_path, url)
        mine.run("T-65273")
        app = make_app(mine)
        async with app.run_test(size=(80, 24)) as pilot:
            queue = app.queue
            await settle(pilot)
            assert queue.live.listening(GUARD_S)
            bar = lambda: next(line for line in screen_text(app).splitlines() if "8 mine" in line)  # noqa: E731
            await until(pilot, lambda: bar().rstrip().endswith("8 mine  live"), "live at 80 columns")
            assert "[1 wait 1]" in bar() and len(bar().rstrip()) <= 80
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("SELECT pg_terminate_backend(%s)", (queue.live.pid,))
            # the listener tries again after a second (QueueListener.retry): the bar says so meanwhile
            await until(pilot, lambda: bar().rstrip().endswith("8 mine  not live"), "not live at 80 columns")
            await until(
                pilot, lambda: queue.live_state == "reconnected" and bar().rstrip().endswith("8 mine  live"), "live again"
            )


async def test_a_after_every_connection_of_the_app_was_ended_opens_the_dialog_of_the_healthy_run(tmp_path):
    """The server ended every connection of the app's pool: ``a`` on a healthy waiting run said
    its "checkpoint cannot be read" (the read that met the dead connection was taken for the
    run's); it reads again on a new connection and opens the approve dialog."""
    import psycopg
    from resolver_tui.screens.dialogs import ConfirmScreen

    with fresh_schema() as url:
        mine, _ = _homes(tmp_path, url)
        mine.run("T-65273")
        app = make_app(mine)
        async with app.run_test(size=(160, 40)) as pilot:
            queue = app.queue
            await settle(pilot)
            await select(pilot, RUN)
            queue.live.stop()  # no notification reads anything before the key
            await until(pilot, lambda: not queue.live.alive, "the listener stopped")
            pids = [conn.info.backend_pid for conn in list(mine.store.db.pool._pool)]
            assert pids
            with psycopg.connect(url, autocommit=True) as conn:
                for pid in pids:
                    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
            told = len(app._notifications)
            await pilot.press("a")
            await settle(pilot)
            said = [n.message for n in list(app._notifications)[told:]]
            assert isinstance(app.screen, ConfirmScreen), said
            assert f"Approve run {RUN}?" in screen_text(app) and said == [], said


async def test_a_store_that_does_not_answer_is_named_in_the_pane_never_a_damaged_checkpoint(tmp_path, monkeypatch):
    """A store that still does not answer when the run is read again: the pane and ``a`` say
    the store does not answer (StoreUnreachable's sentence), never that the checkpoint cannot
    be read. (Any store: the failure is made by replacing its summary read.)"""
    from core.api.views import UNREACHABLE, UNREADABLE
    from core.ground.errors import ConnectionLost

    home = Home(tmp_path / "h", clock=FixedClock(MONDAY))
    home.run("T-65273")
    app = make_app(home)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await select(pilot, RUN)
        down = "Cannot use the PostgreSQL database test on 127.0.0.1:5432: server closed the connection unexpectedly."

        def unreachable(run_id):
            raise ConnectionLost(down)

        monkeypatch.setattr(home.queue._store, "summary", unreachable)
        told = len(app._notifications)
        await pilot.press("a")
        await settle(pilot)
        said = [n.message for n in list(app._notifications)[told:]]
        assert len(said) == 1 and UNREACHABLE in said[0] and UNREADABLE not in said[0], said
        assert down in pane_text(app) and "checkpoint" not in pane_text(app).lower(), pane_text(app)


async def test_a_colleagues_manual_refund_reaches_the_panes_what_changed_by_notification(tmp_path):
    """Found in use: on a team store the pane kept saying "nothing" after a colleague's manual
    refund until its 30 s safety timer (the world's writes sent no notification). Polling off here:
    only migration 20's notification can make the pane read the world again."""
    with fresh_schema() as url:
        mine, other = _homes(tmp_path, url)
        mine.run("T-65273")
        app = make_app(mine)  # refresh_interval=None
        async with app.run_test(size=(160, 40)) as pilot:
            queue = app.queue
            await settle(pilot)
            await select(pilot, RUN)
            assert queue.live.listening(GUARD_S)
            assert "nothing: the lookups give the same results now." in pane_text(app)
            other.manual_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
            await until(pilot, lambda: "refunded: 0.00 then 119.00" in pane_text(app), "the colleague's refund")
            assert "nothing: the lookups give the same results now." not in pane_text(app)
