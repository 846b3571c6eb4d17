"""A key press updates only what changed, so the app keeps up with the keys on a home of 1,000,000
runs. The table's rows are updated, not rebuilt; a section of the detail pane of the same height
repaints alone (no layout pass of the screen); a detail read for a run the cursor already left is
never rendered, so a burst of keys ends on the run under the cursor without rendering the runs it
passed."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from core.api.queue import Page
from resolver_tui.widgets.run_table import RunTable
from resolver_tui.widgets.safe import FoldedLines
from rich.cells import cell_len
from textual import events
from textual.widgets import Static
from tui_helpers import OneWidget, make_app, settle


def _order(table: RunTable) -> list[str]:
    return [table.coordinate_to_cell_key((row, 0)).row_key.value for row in range(table.row_count)]


async def test_a_refresh_removes_and_appends_rows_without_rebuilding_the_table(demo_home):
    rows = demo_home.queue.page(None).rows
    assert len(rows) >= 10
    now = demo_home.clock.now()
    table = RunTable()
    async with OneWidget(table).run_test(size=(120, 30)) as pilot:
        table.replace(Page(rows[:6], None, now))
        table.move_cursor(row=3)
        await pilot.pause()
        cleared: list[bool] = []
        real_clear = table.clear
        table.clear = lambda *a, **k: (cleared.append(True), real_clear(*a, **k))[1]  # type: ignore[method-assign]
        changed = replace(rows[2], customer="Someone Else")
        # the first run left the page, the third one's customer changed, two runs follow the last
        table.replace(Page([rows[1], changed, *rows[3:8]], None, now), select=rows[3].run_id)
        await pilot.pause()
        assert cleared == []
        assert _order(table) == [r.run_id for r in [rows[1], changed, *rows[3:8]]]
        assert table.current == rows[3].run_id
        assert "Someone Else" in str(table.get_row(rows[2].run_id))
        # a run new before the kept ones: the table cannot insert a row, so it is rebuilt
        table.replace(Page([rows[9], *rows[1:8]], None, now), select=rows[3].run_id)
        await pilot.pause()
        assert cleared == [True]
        assert _order(table) == [r.run_id for r in [rows[9], *rows[1:8]]]
        assert table.current == rows[3].run_id


async def test_a_section_of_the_same_height_is_updated_without_a_layout_pass(monkeypatch):
    section = FoldedLines()
    layouts: list[bool] = []
    real_update = Static.update

    def update(self, content="", *, layout: bool = True) -> None:
        if self is section:
            layouts.append(layout)
        real_update(self, content, layout=layout)

    monkeypatch.setattr(Static, "update", update)
    async with OneWidget(section).run_test(size=(80, 20)) as pilot:
        await pilot.pause()
        section.set_lines(["Keys: a approve", "Not offered: r resume"])
        layouts.clear()
        section.set_lines(["Keys: r resume", "Not offered: a approve"])  # the same height: no layout
        section.set_lines(["Keys: r resume", "Not offered: a approve"])  # the same lines: not shown again
        section.set_lines(["Keys: none"])  # one line fewer: the screen is laid out again
        await pilot.pause()
        assert layouts == [False, True]
        assert section.values == ["Keys: none"] and str(section.render()) == "Keys: none"


async def test_a_burst_of_keys_renders_only_runs_under_the_cursor(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        queue = app.queue
        assert queue.table.row_count >= 6 and queue.pane.shown_run == queue.table.current
        rendered: list[tuple[str, str | None]] = []
        real_show = queue.pane.show

        def show(detail, **kwargs) -> None:
            if detail is not None:
                rendered.append((detail.run_id, queue.table.current))
            real_show(detail, **kwargs)

        queue.pane.show = show  # type: ignore[method-assign]
        for _ in range(5):  # one terminal read: every key queued before the first is handled
            app._driver.process_message(events.Key("j", "j"))
        await settle(pilot)
        assert rendered and all(run == current for run, current in rendered), rendered
        assert queue.table.cursor_row == 5
        assert queue.pane.shown_run == queue.table.current == queue.detail.run_id


async def test_rows_drawn_from_the_cache_are_the_rows_drawn_afresh(demo_home):
    """The table reuses the drawing of a row the cursor is not on: after moves up and down that
    scroll, and the mouse over a row, the screen is the one a table with empty caches draws, the
    cursor's row highlighted and no other."""
    rows = demo_home.queue.page(None).rows
    assert len(rows) >= 10
    table = RunTable()
    async with OneWidget(table).run_test(size=(120, 8)) as pilot:
        table.replace(Page(rows, None, demo_home.clock.now()))
        await pilot.pause()
        for key in ["down"] * 7 + ["up"] * 3 + ["down"] * 5:
            await pilot.press(key)
            if key == "up":
                await pilot.hover(RunTable, offset=(5, 3))
            await pilot.pause()
            cached = pilot.app.export_screenshot()
            table._clear_caches()  # what the stock table draws with nothing remembered
            table.refresh()
            await pilot.pause()
            assert pilot.app.export_screenshot() == cached, (key, table.cursor_row)
            shown = range(table.header_height, table.scrollable_content_region.height)
            backgrounds = {y: next(iter(table.render_line(y))).style.bgcolor for y in shown}
            at = table.cursor_row - round(table.scroll_y) + table.header_height
            assert [y for y in shown if backgrounds[y] == backgrounds[at]] == [at], (key, backgrounds)


async def test_a_run_shown_corrupt_already_is_not_updated_again(demo_home, monkeypatch):
    """Each key onto a corrupt run marked its status cell again, and a cell's update makes the
    table draw every visible row afresh: found on the benchmark's home, whose copies all read back
    corrupt. The first mark updates the cell; later ones touch nothing."""
    rows = demo_home.queue.page(None).rows
    table = RunTable()
    updates: list[tuple[str, str]] = []
    real_update = RunTable.update_cell

    def update_cell(self, row_key, column_key, value, **kwargs) -> None:
        updates.append((str(row_key), str(column_key)))
        real_update(self, row_key, column_key, value, **kwargs)

    monkeypatch.setattr(RunTable, "update_cell", update_cell)
    async with OneWidget(table).run_test(size=(120, 12)) as pilot:
        table.replace(Page(rows, None, demo_home.clock.now()))
        await pilot.pause()
        run_id = rows[1].run_id
        for _ in range(3):
            table.mark_corrupt(run_id)
            await pilot.pause()
        assert updates == [(run_id, "status")]
        assert table.cells[run_id][-1] == "corrupt" and "corrupt" in str(table.get_row(run_id))


async def test_the_pane_shows_its_folded_lines_as_they_are_and_never_wraps_them_again():
    """The pane's sections are folded by core and Textual does not wrap them again (re-wrapping
    folded lines was a fifth of a paint): each folded line is one row, and a line wider than its
    section (between a resize and its new fold) stays one row ending in ``…``, never a second row
    starting with the middle of the text."""
    from resolver_tui.widgets.detail_pane import DetailPane
    from textual.content import Content

    pane = DetailPane()
    async with OneWidget(pane).run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        body = pane.query_one("#detail-body", FoldedLines)
        body.set_lines(["Reason: " + "word " * 12])
        await pilot.pause()
        folded = body._shown.split("\n")
        assert len(folded) > 1 and all(len(line) < body.content_size.width for line in folded)
        assert [body.render_line(y).text.rstrip() for y in range(len(folded))] == [line.rstrip() for line in folded]
        body.update(Content("Reason: " + "x" * 60), layout=False)  # as if the width had just shrunk
        await pilot.pause()
        assert body.render_line(0).text.rstrip().endswith("…") and body.render_line(1).text.strip() == ""


async def test_each_cell_is_drawn_as_the_stock_table_draws_it(demo_home):
    """RunTable draws its body cells without Rich's padding layers and keeps each cell's text as
    drawn: every cell of every visible row, with the cursor on one row and the mouse over another,
    after a page appended, a cell updated and a run marked corrupt, is segment for segment what the
    stock DataTable draws (styles, zebra, meta for clicks)."""
    from rich.segment import Segment
    from textual.widgets import DataTable

    rows = demo_home.queue.page(None).rows
    assert len(rows) >= 10
    long_name = replace(rows[4], customer="Ōtsuka 大塚 Éloïse-Marguerite de la Fontaine", total_amount="1234567.89")
    table = RunTable()
    now = demo_home.clock.now()

    def stock(row: int, column: int, base, width: int, cursor: bool, hover: bool):
        table._cell_render_cache.clear()
        return DataTable._render_cell(table, row, column, base, width, cursor, hover)

    async with OneWidget(table).run_test(size=(100, 14)) as pilot:
        table.replace(Page([*rows[:4], long_name], None, now))
        await pilot.pause()
        table.append(Page(rows[5:], None, now))
        table.mark_corrupt(rows[1].run_id)
        table.move_cursor(row=2)
        await pilot.hover(RunTable, offset=(5, 4))
        await pilot.pause()
        checked = 0
        for row in range(min(table.row_count, 10)):
            base = table._get_row_style(row, table.rich_style)
            for column, col in enumerate(table.ordered_columns):
                width = col.get_render_width(table)
                for cursor, hover in ((False, False), (True, False), (False, True), (True, True)):
                    table._cell_render_cache.clear()
                    ours = table._render_cell(row, column, base, width, cursor, hover)
                    again = table._render_cell(row, column, base, width, cursor, hover)  # from the caches
                    theirs = stock(row, column, base, width, cursor, hover)
                    assert ours == again
                    assert [list(Segment.simplify(line)) for line in ours] == [list(Segment.simplify(line)) for line in theirs], (
                        row,
                        col.key,
                        cursor,
                        hover,
                    )
                    checked += 1
        assert checked == 10 * len(table.ordered_columns) * 4 >= 10 * 6 * 4
        customer = [c.key.value for c in table.ordered_columns].index("customer")
        assert "…" in "".join(seg.text for seg in table._render_cell(4, customer, table.rich_style, 12)[0])


async def test_the_next_page_is_read_before_the_cursor_reaches_the_last_row(demo_home, monkeypatch):
    """The next page is asked for when the cursor comes within ``NEXT_PAGE_AHEAD`` rows of the last
    loaded one (the key onto the last row paid for reading and adding a page, the slowest keys at
    1,000,000 runs), and its rows are added below without moving the cursor or the pane off the run
    under it; no page is read before that."""
    import resolver_tui.screens.decisions as decisions
    import resolver_tui.widgets.run_table as run_table
    from resolver_tui.widgets.bars import ALL

    monkeypatch.setattr(decisions, "PAGE_ROWS", 6)
    monkeypatch.setattr(run_table, "NEXT_PAGE_AHEAD", 2)
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(str(ALL + 1))
        await settle(pilot)
        queue = app.queue
        assert sum(queue.counts.values()) > 12 and queue.table.row_count == 6
        for _ in range(2):
            await pilot.press("down")
        await settle(pilot)
        assert queue.table.cursor_row == 2 and queue.table.row_count == 6  # three rows to go: not yet
        await pilot.press("down")
        await settle(pilot)
        assert queue.table.cursor_row == 3 and queue.table.row_count == 12
        assert queue.pane.shown_run == queue.table.current == queue.detail.run_id
        assert queue.table.current == _order(queue.table)[3]


async def test_what_the_start_up_made_is_frozen_out_of_full_collections_while_the_app_runs(demo_home):
    """Full garbage collections of everything the start-up made were the slowest keys at 1,000,000
    runs (55 to 85 ms each). Once the first screen is painted it is frozen (``gc.freeze``), and the
    app's exit gives it back to the collector."""
    import gc

    assert gc.get_freeze_count() == 0
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # the modules, classes and widgets of the start-up
        await pilot.press("down")
        await settle(pilot)
        assert gc.get_freeze_count() <= frozen  # a key freezes nothing more (frozen objects still go when unused)
    assert gc.get_freeze_count() == 0


async def test_a_full_collection_waits_for_a_pause_of_the_keys(demo_home, monkeypatch):
    """CPython's full collections came in the middle of a key every fifteen keys or so at 1,000,000
    runs (20 to 100 ms each, the p99 of a key). While the app runs its own rule of full collections
    is raised to 200 middle collections, and one that is due runs after half a second without a key
    or the mouse (a key is noted), never sooner; the exit gives the collector its rule back."""
    import gc
    import time

    import resolver_tui.app as app_module

    before = gc.get_threshold()
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert gc.get_threshold() == (before[0], before[1], app_module.FULL_AT_LATEST)
        collected: list[int] = []
        counts = [(0, 0, before[2] - 1)]  # one middle collection short of the collector's own rule

        def collect(*_args) -> int:
            collected.append(1)
            counts[0] = (0, 0, 0)  # as a full collection leaves them
            return 0

        monkeypatch.setattr(app_module.gc, "collect", collect)
        monkeypatch.setattr(app_module.gc, "get_count", lambda: counts[0])
        await pilot.press("down")
        assert time.monotonic() - app._last_input < app_module.QUIET_S  # the key was noted
        app._last_input = time.monotonic() - app_module.QUIET_S
        app.collect_when_quiet()
        assert collected == []  # quiet, but no full collection due
        counts[0] = (0, 0, before[2])
        app._last_input = time.monotonic() - app_module.QUIET_S + 0.2
        app.collect_when_quiet()
        assert collected == []  # due, but a key came less than half a second ago
        app._last_input = time.monotonic() - app_module.QUIET_S
        app.collect_when_quiet()
        assert collected == [1]
        app.collect_when_quiet()
        assert collected == [1]  # none due any more
    assert gc.get_threshold() == before


def _small_pages(home, monkeypatch, *, ahead: int, rows: int = 8):
    """An app on ``home`` whose queue reads pages of ``rows`` rows and the next page ``ahead``
    rows before the last loaded one (so a page's end is reached in a small window)."""
    import resolver_tui.screens.decisions as decisions
    import resolver_tui.widgets.run_table as run_table

    monkeypatch.setattr(decisions, "PAGE_ROWS", rows)
    monkeypatch.setattr(run_table, "NEXT_PAGE_AHEAD", ahead)
    return make_app(home)


async def _show_all(pilot) -> None:
    """Settle, choose the filter of every run, settle."""
    from resolver_tui.widgets.bars import ALL

    await settle(pilot)
    await pilot.press(str(ALL + 1))
    await settle(pilot)


async def test_the_mouse_wheel_scrolled_to_the_last_rows_reads_the_next_page(demo_home, monkeypatch):
    """Scrolling the table near its last loaded row with the mouse wheel (which moves no cursor)
    reads the next page as the cursor keys do (the wheel or the scrollbar reached the end of the
    first page and no more rows came)."""
    app = _small_pages(demo_home, monkeypatch, ahead=1)
    async with app.run_test(size=(120, 18)) as pilot:
        await _show_all(pilot)
        queue = app.queue
        table = queue.table
        assert sum(queue.counts.values()) > 8 and table.row_count == 8
        shown = table.scrollable_content_region.height - table.header_height
        assert shown < 8 - 1, f"the table shows {shown} rows: too tall to scroll"
        await _wheel_down(pilot, table)
        await settle(pilot)
        assert table.scroll_y > 0 and table.cursor_row == 0  # the wheel scrolled, the cursor stayed
        assert table.row_count > 8


async def test_a_page_appended_below_a_scrolled_table_lays_out_nothing(demo_home, monkeypatch):
    """A following page added under the cursor laid out the whole screen (the table's new virtual
    size, and the bars set again by ``Static.update``), the slowest keys at 1,000,000 runs. A table
    that scrolls already keeps its size on screen, and bars whose text did not change are not set
    again: the page lays out nothing, and its rows and scrollbar show."""
    from resolver_tui.widgets.bars import FilterBar, TopBar
    from textual import messages

    app = _small_pages(demo_home, monkeypatch, ahead=2)
    async with app.run_test(size=(120, 18)) as pilot:
        await _show_all(pilot)
        queue = app.queue
        table = queue.table
        assert table.row_count == 8 and table.virtual_size.height > table.scrollable_content_region.height
        layouts: list[str] = []
        watched = (table, queue.query_one(FilterBar), queue.query_one(TopBar))
        real_post = queue.post_message

        def post(message):
            if isinstance(message, messages.Layout) and message.widget in watched:
                layouts.append(type(message.widget).__name__)
            return real_post(message)

        monkeypatch.setattr(queue, "post_message", post)
        for _ in range(5):
            await pilot.press("down")
        await settle(pilot)
        assert table.row_count > 8 and table.cursor_row == 5
        assert layouts == []  # none of the three asked for a layout of the screen
        assert table.virtual_size.height == table.row_count + table.header_height
        assert table.vertical_scrollbar.window_virtual_size == table.virtual_size.height
        assert table.max_scroll_y == table.virtual_size.height - table.scrollable_content_region.height


async def test_cells_are_drawn_and_measured_as_rich_draws_and_measures_them():
    """A one-line cell is drawn and measured without Rich's machinery; the segments (text and
    style, spaces of no style after) and the widths are Rich's own."""
    from resolver_tui.widgets.run_table import styled
    from textual.render import measure

    def merged(segments) -> list[tuple[str, object]]:
        out: list[tuple[str, object]] = []
        for s in segments:
            if out and out[-1][1] == s.style:
                out[-1] = (out[-1][0] + s.text, s.style)
            elif s.text:
                out.append((s.text, s.style))
        return out

    table = RunTable()
    app = OneWidget(table)
    async with app.run_test(size=(120, 30)):
        values = [
            ("status", "corrupt"),
            ("status", "waiting"),
            ("total", "119.00"),
            ("run", "T-65273-agent-chat-small-1"),
            ("customer", "García e\u0301"),
            ("ticket", "漢字漢字"),
            ("customer", ""),
            ("actions", "refund, reship"),
        ]
        for key, value in values:
            text = styled(key, value, 40)
            assert measure(app.console, text, 1) == max((cell_len(line) for line in text.plain.splitlines()), default=0)
            for width in (3, 8, 12, 30, 60):
                options = app.console_options.update_dimensions(width, 1).update(no_wrap=True)
                rich = app.console.render_lines(text, options.update_width(width), pad=True)[0]
                assert merged(table._draw_text(text, width)) == merged(rich), (key, value, width)


def test_after_a_quiet_moment_the_next_frame_is_the_next_tick_due():
    """Textual's timer of frames, woken after a pause, skipped one tick too many, so a key's detail
    was painted 17 to 33 ms after its cursor (never sooner)."""
    from resolver_tui.frames import next_tick

    assert next_tick(0.0, 10.3, 1.0) == (10, 11.0)
    assert next_tick(5.0, 5.0, 0.5) == (0, 5.5)
    for now in (0.01, 3.3, 7.99, 1234.5):
        count, due = next_tick(0.0, now, 1 / 60)
        assert now < due <= now + 1 / 60 + 1e-9 and abs(due - (count + 1) / 60) < 1e-9


async def test_the_queue_screens_frames_keep_the_corrected_clock(demo_home):
    """The queue screen paints on a :class:`~resolver_tui.frames.FrameClock`; its other timers
    are Textual's own, and a key still paints the detail of the run under the cursor."""
    from resolver_tui.frames import SCREEN_UPDATE, FrameClock

    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        queue = app.queue
        clocks = [t for t in queue._timers if t.name == SCREEN_UPDATE]
        assert len(clocks) == 1 and isinstance(clocks[0], FrameClock)
        assert all(type(t) is not FrameClock for t in queue._timers if t.name != SCREEN_UPDATE)
        await pilot.press("down")
        await settle(pilot)
        assert queue.pane.shown_run == queue.table.current == queue.detail.run_id


def _gated_pages(monkeypatch, *, first: bool) -> threading.Event:
    """Hold the queue's first pages (``first``) or its next pages in their worker until the
    returned event is set (it starts set: nothing held)."""
    import resolver_tui.screens.decisions as decisions

    gate = threading.Event()
    gate.set()
    real_page = decisions.Decisions.page

    def page(self, status, search, after, *args, **kwargs):
        if (after is None) == first:
            gate.wait(5)
        return real_page(self, status, search, after, *args, **kwargs)

    monkeypatch.setattr(decisions.Decisions, "page", page)
    return gate


async def _wheel_down(pilot, table, times: int = 8) -> None:
    for _ in range(times):
        table.post_message(events.MouseScrollDown(table, 5, 3, 0, 1, 0, False, False, False))
        await pilot.pause()


async def test_a_sort_pressed_while_the_next_page_is_read_leaves_the_next_page_to_be_read(demo_home, monkeypatch):
    """A trial's finding: a sort, filter or search key pressed while the next page was read
    dropped that page as an older load but left it "being read", so no further page was ever
    read in that screen, by the wheel or the keys."""
    app = _small_pages(demo_home, monkeypatch, ahead=1)
    gate = _gated_pages(monkeypatch, first=False)
    async with app.run_test(size=(120, 18)) as pilot:
        await _show_all(pilot)
        queue, table = app.queue, app.queue.table
        assert table.row_count == 8
        gate.clear()
        await _wheel_down(pilot, table)
        assert queue.loading_more  # the next page is on its way
        await pilot.press("s")  # another sort: its first page
        await pilot.pause()
        gate.set()
        await settle(pilot)
        assert table.row_count == 8
        await _wheel_down(pilot, table)
        await settle(pilot)
        assert table.row_count > 8, "the next page was never read"


@pytest.mark.parametrize("wheel", [0, 8], ids=["no-wheel", "wheel-during-refresh"])
async def test_a_refresh_read_while_the_table_is_scrolled_to_its_end_still_lands(demo_home, monkeypatch, wheel):
    """A trial's finding: ``R`` (the first page read again) in flight when the wheel reached the
    last loaded rows: the next page's read took the refresh's place, and the table kept a run
    deleted in another terminal meanwhile."""
    app = _small_pages(demo_home, monkeypatch, ahead=1)
    gate = _gated_pages(monkeypatch, first=True)
    async with app.run_test(size=(120, 18)) as pilot:
        await _show_all(pilot)
        table = app.queue.table
        run_id = table.current
        demo_home.delete(run_id, audited=True)  # another terminal: reset --run
        gate.clear()
        await pilot.press("R")
        await pilot.pause()
        await _wheel_down(pilot, table, wheel)
        gate.set()
        await settle(pilot)
        assert run_id not in table.summaries, "the refresh was dropped: a deleted run is still listed"


async def test_a_refresh_keeps_the_cursor_on_the_run_read_past_the_first_page(demo_home, monkeypatch):
    """A trial's finding: a refresh (``R``, the 2 s timer of a home folder, a live change) read
    the first page only, dropped the rows loaded past it and moved the cursor, and the pane, to
    another run without a key: nobody reading past row 50 stayed there."""
    app = _small_pages(demo_home, monkeypatch, ahead=2, rows=6)
    async with app.run_test(size=(120, 40)) as pilot:
        await _show_all(pilot)
        queue, table = app.queue, app.queue.table
        assert sum(queue.counts.values()) > 12
        for _ in range(9):  # past the first page of 6
            await pilot.press("down")
            await settle(pilot)
        reading = table.current
        assert table.cursor_row == 9 and queue.pane.shown_run == reading
        loaded = table.row_count
        await pilot.press("R")
        await settle(pilot)
        assert table.current == reading, f"the refresh moved the cursor from {reading} to {table.current}"
        assert queue.pane.shown_run == reading
        assert table.row_count >= loaded  # within a page of the cursor (50 rows): every row loaded


async def test_a_refresh_deep_in_the_queue_reads_down_to_a_page_below_the_cursor(demo_home, monkeypatch):
    """The refresh that keeps the cursor's run reads the rows down to one page below it (or
    below the last row in view, if lower), not every row ever loaded (its cost is the depth
    read)."""
    import resolver_tui.screens.queue as queue_screen

    monkeypatch.setattr(queue_screen, "PAGE_ROWS", 3)
    app = _small_pages(demo_home, monkeypatch, ahead=2, rows=6)
    async with app.run_test(size=(120, 18)) as pilot:
        await _show_all(pilot)
        queue, table = app.queue, app.queue.table
        for _ in range(9):
            await pilot.press("down")
            await settle(pilot)
        await pilot.press("G")  # the next pages, so more rows than the cursor's depth and a page
        await settle(pilot)
        await pilot.press("up")
        await settle(pilot)
        table.move_cursor(row=4)
        await settle(pilot)
        reading = table.current
        _top, bottom = table.rows_in_view()
        depth = max(4 + 1, bottom) + 3  # down to the cursor's row, or the last in view, and a page (3) below
        assert table.row_count > depth
        await pilot.press("R")
        await settle(pilot)
        assert table.current == reading and queue.pane.shown_run == reading
        assert table.row_count == depth


async def test_a_refresh_keeps_the_rows_the_wheel_scrolled_to(demo_home, monkeypatch):
    """A trial's finding: a reader who scrolled with the mouse wheel (which moves no cursor) was
    thrown back to the top at each refresh: the refresh read down to a page below the cursor
    only, and moving the cursor back onto its run scrolled the table to it. The rows in view
    count as the cursor does, and a cursor out of view is not scrolled back to."""
    import resolver_tui.screens.queue as queue_screen

    monkeypatch.setattr(queue_screen, "PAGE_ROWS", 2)
    app = _small_pages(demo_home, monkeypatch, ahead=1)
    async with app.run_test(size=(120, 18)) as pilot:
        await _show_all(pilot)
        queue, table = app.queue, app.queue.table
        assert sum(queue.counts.values()) > 12
        reading = table.current
        await _wheel_down(pilot, table, times=12)
        await settle(pilot)
        top, bottom = table.rows_in_view()
        assert table.cursor_row == 0 and top > 2 + 1, f"the wheel scrolled to row {top} only"
        in_view = [table.coordinate_to_cell_key((row, 0)).row_key.value for row in range(top, min(bottom, table.row_count))]
        await pilot.press("R")
        await settle(pilot)
        assert table.rows_in_view()[0] == top, "the refresh scrolled the table away from where the wheel left it"
        assert table.current == reading and queue.pane.shown_run == reading
        assert [
            table.coordinate_to_cell_key((row, 0)).row_key.value for row in range(top, min(bottom, table.row_count))
        ] == in_view


async def test_the_footer_keeps_no_key_it_removed(demo_home):
    """A trial held ``j`` down: the app's memory grew about 10 MB a thousand keys and a full
    collection never gave it back. Textual's footer makes its keys again whenever the keys
    offered change, and each removed key stayed watched by the footer (``data_bind``) until
    ``compact`` changed, which it never does. Moving over runs of every status keeps the
    footer's watches to the keys shown, and no removed key stays alive."""
    import gc

    from resolver_tui.widgets.footer import Footer
    from textual.widgets._footer import FooterKey

    app = make_app(demo_home)
    async with app.run_test(size=(120, 30)) as pilot:
        await _show_all(pilot)
        footer = app.screen.query_one(Footer)
        statuses = set()
        for i in range(40):
            await pilot.press("j" if (i // 10) % 2 == 0 else "k")
            statuses.add(app.queue.table.summaries[app.queue.table.current].status)
        await settle(pilot)
        assert len(statuses) > 1, "the keys offered never changed: the footer was never made again"
        shown = len(footer.query(FooterKey))
        watches = sum(len(w) for w in getattr(footer, "__watchers", {}).values())
        assert watches <= shown, f"{watches} watches on the footer for {shown} keys shown"
        gc.collect()
        alive = [o for o in gc.get_objects() if isinstance(o, FooterKey)]
        assert len(alive) <= shown + len(app.screen_stack) * shown, f"{len(alive)} footer keys alive, {shown} shown"


async def test_a_section_draws_each_line_as_the_stock_widget_draws_it_and_only_the_lines_shown():
    """FoldedLines draws a line by itself (the pane's body drew all its ~90 lines at every key to
    show 15): each line is segment for segment, styles and the offsets a mouse selection reads
    included, what the stock ``Static`` draws for it within the whole text, for a plain section, a
    coloured bold one (the notice's tone), wide and combining characters, a blank line and a line
    wider than the section (``…``); and a repaint of the pane draws only the body's lines on
    screen."""
    from resolver_tui.widgets.detail_pane import DetailPane

    pane = DetailPane()
    async with OneWidget(pane).run_test(size=(48, 14)) as pilot:
        await pilot.pause()
        body = pane.query_one("#detail-body", FoldedLines)
        notice = pane.query_one("#detail-notice", FoldedLines)
        values = [f"Line {i}: Ōtsuka 大塚 e\u0301 — │ refund 119.00 CAD" for i in range(60)]
        body.set_lines(["Reason: " + "word " * 12, "", *values])
        notice.set_lines(["Stale: the world moved", "  since it was read"])
        notice.styles.color = "orange"
        notice.styles.text_style = "bold"  # as a tone's class sets them
        await pilot.pause()
        from textual.content import Content

        body.update(Content(body._shown + "\n" + "x" * 80), layout=True)  # wider than the section
        keys = pane.query_one("#detail-keys", FoldedLines)
        keys.update(Content.from_markup("[b]Keys[/b]: approve\n[i]Not offered[/i]: resume — [u]why[/u]"))  # with spans
        await pilot.pause()
        for section in (body, notice, keys):
            ours = [list(section.render_line(y)) for y in range(section.size.height)]
            section._dirty_regions.add(section.size.region)  # the stock drawing draws the whole text again
            stock = [list(Static.render_line(section, y)) for y in range(section.size.height)]
            assert ours == stock
            assert any(seg.style and seg.style.meta.get("offset", (0, 0))[1] > 0 for line in ours for seg in line)
        assert keys.render_line(0)._segments[0].style.bold and notice.render_line(0)._segments[0].style.bold

        from textual.visual import Visual

        drawn: list[int] = []
        real = Visual.to_strips.__func__  # type: ignore[attr-defined]

        def counting(cls, widget, *args, **kwargs):
            strips = real(cls, widget, *args, **kwargs)
            if widget is body:
                drawn.append(len(strips))
            return strips

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Visual, "to_strips", classmethod(counting))
            body.set_lines([v + " again" for v in values])
            await pilot.pause()
        assert body.size.height > 60 and 0 < sum(drawn) <= pane.size.height  # lines drawn, not the text's


async def test_a_key_repaints_the_rows_and_title_it_changed_and_the_terminal_shows_the_same_as_a_whole_render(demo_home):
    """A cursor key repaints the two rows it changed, not the row the mouse's hover rests on (the
    stock table repainted that row at every key: a frame from the first row to the cursor's), and
    the pane's new run ID repaints the pane's top line, not the whole pane. What the terminal shows
    after those partial frames is what a render of the whole screen shows: the pane's title, rows
    and sections all current."""
    from resolver_tui.widgets.detail_pane import DetailPane
    from tui_helpers import Terminal

    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        terminal = Terminal(app)
        terminal.repaint_all()
        await settle(pilot)
        table = app.queue.table
        rows: list[int] = []
        whole: list[str] = []
        real_refresh_row = RunTable.refresh_row
        real_refresh = DetailPane.refresh

        def refresh_row(self, row_index):
            rows.append(row_index)
            return real_refresh_row(self, row_index)

        def refresh(self, *regions, **kwargs):
            if not regions and not kwargs.get("layout"):
                whole.append(self.shown_run)
            return real_refresh(self, *regions, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(RunTable, "refresh_row", refresh_row)
            patch.setattr(DetailPane, "refresh", refresh)
            for _ in range(4):
                before = table.cursor_row
                await pilot.press("down")
                await settle(pilot)
                assert set(rows) <= {before, before + 1}, rows
                rows.clear()
        assert whole == []
        run_id = app.queue.pane.shown_run
        assert run_id == table.current
        assert [line for line in terminal.text().split("\n") if "╭" in line and run_id in line]  # the pane's title
        assert terminal.differs() == []


async def test_the_pane_repaints_its_title_line_alone_for_another_run_of_the_same_shape():
    """Another run whose sections have the same heights repaints the pane's top line for its ID and
    the sections, never the whole pane, and the terminal shows the new title where a render of the
    whole screen shows it."""
    from core.api.views import RunDetail
    from resolver_tui.widgets.detail_pane import DetailPane
    from tui_helpers import Terminal

    pane = DetailPane()
    app = OneWidget(pane)
    async with app.run_test(size=(60, 14)) as pilot:
        pane.styles.border = ("round", "white")  # as the app's .panel draws it
        terminal = Terminal(app)
        pane.show(RunDetail("T-11111-first-1", "T-11111 · waiting", notes=["one"], body=["a", "b"]))
        terminal.repaint_all()
        await pilot.pause()
        whole: list[bool] = []
        real = DetailPane.refresh

        def refresh(self, *regions, **kwargs):
            whole.append(not regions)
            return real(self, *regions, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(DetailPane, "refresh", refresh)
            pane.show(RunDetail("T-22222-second-1", "T-22222 · waiting", notes=["two"], body=["c", "d"]))
            await pilot.pause()
        assert whole == [False]
        shown = terminal.text()
        top = shown.split("\n")[0]
        assert top.startswith("╭─ ▶ T-22222-second-1 ") and "T-11111" not in shown
        assert terminal.differs() == []


async def test_a_paint_of_the_table_draws_each_line_in_view_as_the_stock_table_does(demo_home):
    """RunTable works out its style once per paint (the stock table did it for each line, through
    every ancestor's background, and a key that scrolls draws every line in view): scrolled, with a
    fixed row and without, every line in view is the stock table's."""
    from textual.geometry import Region
    from textual.widgets import DataTable

    rows = demo_home.queue.page(None).rows
    table = RunTable()
    async with OneWidget(table).run_test(size=(100, 8)) as pilot:
        table.replace(Page(rows, None, demo_home.clock.now()))
        await pilot.pause()
        for fixed in (0, 1):
            table.fixed_rows = fixed
            table.move_cursor(row=len(rows) - 2)
            await pilot.pause()
            assert table.scroll_offset.y > 0
            width, height = table.size
            table._paint_style = table.rich_style
            try:
                ours = [table.render_line(y) for y in range(height)]
            finally:
                table._paint_style = None
            assert [list(line) for line in ours] == [list(DataTable.render_line(table, y)) for y in range(height)]
            assert len(table.render_lines(Region(0, 0, width, height))) == height and table._paint_style is None


async def test_a_mouse_drag_over_a_section_selects_the_lines_it_crossed():
    """A section drawn a line at a time tells a mouse selection where each line stands in its text,
    as the stock drawing does: a drag from line 3 to line 5 selects what the same drag selects over
    the stock drawing (where the selection ends within the last character differs between Textual
    8.0 and 8.2, the same for both drawings)."""
    from resolver_tui.widgets.detail_pane import DetailPane

    async def drag(stock: bool) -> str:
        pane = DetailPane()
        async with OneWidget(pane).run_test(size=(80, 20)) as pilot:
            body = pane.query_one("#detail-body", FoldedLines)
            body.set_lines([f"Line{i} alpha beta gamma" for i in range(30)])
            await pilot.pause()
            with pytest.MonkeyPatch.context() as patch:
                if stock:
                    patch.setattr(FoldedLines, "render_line", Static.render_line)
                    body.refresh()
                    await pilot.pause()
                await pilot.mouse_down(body, offset=(2, 3))
                await pilot.hover(body, offset=(12, 5))
                await pilot.mouse_up(body, offset=(12, 5))
                await pilot.pause()
                return pilot.app.screen.get_selected_text() or ""

    ours = await drag(stock=False)
    assert ours.startswith("ne3 alpha beta gamma\nLine4 alpha beta gamma\nLine5 alpha")
    assert ours == await drag(stock=True)


async def test_a_refresh_landing_with_the_cursor_on_the_last_row_still_reads_the_next_page(demo_home, monkeypatch):
    """A trial's finding (high): ``j`` to the last row of the first page, ``R``, more ``j`` in one
    read. The refresh superseded the next page being read and landed with the cursor on the last
    row, and no key moved the cursor to ask again: the table stayed at one page for good. A
    first page landing with the cursor near the end reads the next (here the next page's read
    is kept from starting until the refresh, as the refresh's superseding left it)."""
    app = _small_pages(demo_home, monkeypatch, ahead=2, rows=6)
    async with app.run_test(size=(120, 40)) as pilot:
        await _show_all(pilot)
        queue, table = app.queue, app.queue.table
        assert table.row_count == 6 and sum(queue.counts.values()) > 12
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(type(queue), "_load_more", lambda self: None)
            for _ in range(6):
                await pilot.press("j")
            await settle(pilot)
        assert table.cursor_row == 5 and table.row_count == 6
        await pilot.press("R")
        await settle(pilot)
        assert table.row_count == 12 and table.cursor_row == 5
        assert queue.pane.shown_run == table.current


async def test_g_on_the_last_row_reads_the_next_page_when_no_read_is_in_flight(demo_home, monkeypatch):
    """``G`` (or ``j``) on the last loaded row asks for the next page even though the cursor does
    not move (a trial: after a read was superseded, nothing asked again)."""
    app = _small_pages(demo_home, monkeypatch, ahead=2, rows=6)
    async with app.run_test(size=(120, 40)) as pilot:
        await _show_all(pilot)
        queue, table = app.queue, app.queue.table
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(type(queue), "_load_more", lambda self: None)  # as if every read were superseded
            await pilot.press("G")
            await settle(pilot)
        assert table.cursor_row == 5 and table.row_count == 6
        await pilot.press("G")
        await settle(pilot)
        assert table.row_count == 12
