"""A page appended below the last row keeps every line the table drew (the key on which a page of
50 rows landed drew every visible row again, the slowest keys at 1,000,000 runs), and the screen
never misleads: whatever changes a drawn line (a cell updated or widened, a row removed, the rows
sorted or replaced, a resize) still draws it again."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import pytest
from core.api.queue import Page
from core.contract.store import RunSummary
from resolver_tui.widgets.run_table import COLUMNS, RunTable, elide_middle, row_cells
from rich.cells import cell_len
from tui_helpers import OneWidget, Terminal


def _drawn_rows(table: RunTable) -> list[str]:
    """Record the run of each body cell the table draws (the stock table draws a row's cells only
    when the row is not in its cache of drawn rows)."""
    drawn: list[str] = []
    real = table._render_cell

    def render(row_index, column_index, base_style, width, cursor=False, hover=False):
        if row_index >= 0:
            drawn.append(table._row_locations.get_key(row_index).value)
        return real(row_index, column_index, base_style, width, cursor, hover)

    table._render_cell = render  # type: ignore[method-assign]
    return drawn


def _widest_first(rows: list[RunSummary], now) -> list[RunSummary]:
    """``rows`` with, first, the row of the widest cell of each column: rows appended after
    those widen no column."""
    cells = [row_cells(r, now) for r in rows]
    widest = [max(range(len(rows)), key=lambda i, c=c: cell_len(cells[i][c])) for c in range(len(COLUMNS))]
    first = list(dict.fromkeys(widest))
    return [rows[i] for i in first] + [r for i, r in enumerate(rows) if i not in first]


def _order_key(table: RunTable, row: int) -> str:
    """The run of the table's ``row``."""
    return table.coordinate_to_cell_key((row, 0)).row_key.value


def _text(table: RunTable) -> str:
    """The table's lines as shown, as plain text."""
    return "\n".join(table.render_line(y).text for y in range(table.size.height))


async def _as_drawn_afresh(pilot, table: RunTable, what: str) -> None:
    """The screen now, checked against the screen the table draws with nothing remembered (no
    line, row, cell or offset kept from before); and, when a :class:`tui_helpers.Terminal`
    watches the app, what its frames left on the terminal against a render of the whole screen
    (a repaint that a change needed and did not ask for)."""
    await pilot.pause()
    terminal = getattr(pilot.app, "terminal", None)
    if terminal is not None:
        assert terminal.differs() == [], what
    cached = pilot.app.export_screenshot()
    table._clear_caches()
    table.refresh()
    await pilot.pause()
    assert pilot.app.export_screenshot() == cached, what


async def test_a_page_appended_below_the_rows_shown_draws_none_of_them_again(demo_home):
    """Rows appended below a table that shows its first rows draw no line already drawn; the
    rows appended are drawn when the cursor brings them into view, as a table drawing afresh
    draws them."""
    now = demo_home.clock.now()
    rows = _widest_first(demo_home.queue.page(None).rows, now)
    assert len(rows) >= 12
    table = RunTable()
    async with OneWidget(table).run_test(size=(120, 8)) as pilot:
        pilot.app.terminal = Terminal(pilot.app)  # what the frames leave on screen, checked too
        pilot.app.terminal.repaint_all()
        table.replace(Page(rows[:6], None, now))
        await pilot.pause()
        table.move_cursor(row=5)  # the last row: the table scrolled to it
        await _as_drawn_afresh(pilot, table, "the first page")
        widths = [column.get_render_width(table) for column in table.ordered_columns]
        drawn = _drawn_rows(table)
        table.append(Page(rows[6:12], None, now))
        await pilot.pause()
        assert table.row_count == 12
        assert [column.get_render_width(table) for column in table.ordered_columns] == widths
        assert drawn and set(drawn) <= {r.run_id for r in rows[6:12]}, "a page appended below drew the rows shown again"
        await _as_drawn_afresh(pilot, table, "after the page was appended")
        for row in range(6, 12):
            await pilot.press("down")
            assert table.cursor_row == row
            await _as_drawn_afresh(pilot, table, f"the cursor on appended row {row}")
            assert elide_middle(rows[row].run_id, table.run_width) in _text(table)
        assert set(drawn) >= {r.run_id for r in rows[6:12]}


async def test_lines_kept_across_appends_are_drawn_again_when_what_they_show_changes(demo_home):
    """Appends keep the lines drawn; each later change of what a line shows draws it again: a
    cell updated, a cell wider than its column, a row removed, a sort, the rows replaced, a new
    terminal width, more rows appended after each. The screen always equals the one a table
    with empty caches draws, and shows the change."""
    rows = demo_home.queue.page(None).rows
    assert len(rows) >= 14
    now = demo_home.clock.now()
    table = RunTable()
    async with OneWidget(table).run_test(size=(120, 12)) as pilot:
        pilot.app.terminal = Terminal(pilot.app)  # what the frames leave on screen, checked too
        pilot.app.terminal.repaint_all()
        table.replace(Page(rows[:4], None, now))
        await pilot.pause()
        table.append(Page(rows[4:6], None, now))
        await _as_drawn_afresh(pilot, table, "two rows appended")

        table._update(replace(rows[1], customer="Someone Else"), now)
        await _as_drawn_afresh(pilot, table, "a cell updated")
        assert "Someone Else" in _text(table)
        table.append(Page(rows[6:7], None, now))
        await _as_drawn_afresh(pilot, table, "appended after a cell updated")

        before = table.columns[table.ordered_columns[2].key].get_render_width(table)
        wide = replace(rows[7], customer="Marguerite-Élise")  # wider than any customer shown
        table.append(Page([wide], None, now))
        await pilot.pause()
        assert table.ordered_columns[2].get_render_width(table) > before
        await _as_drawn_afresh(pilot, table, "a row appended that widened a column")
        assert "Marguerite-Élise" in _text(table)

        table.remove_row(rows[2].run_id)
        await _as_drawn_afresh(pilot, table, "a row removed")
        assert rows[2].task_id not in _text(table)
        table.append(Page(rows[8:9], None, now))
        await _as_drawn_afresh(pilot, table, "appended after a row removed")

        table.sort("ticket", key=lambda ticket: ticket.plain, reverse=True)
        await _as_drawn_afresh(pilot, table, "the rows sorted")
        tickets = [line.split()[1] for line in _text(table).splitlines()[1:] if line.strip()]
        assert len(tickets) >= 5 and tickets == sorted(tickets, reverse=True), tickets
        table.append(Page(rows[9:10], None, now))
        await _as_drawn_afresh(pilot, table, "appended after a sort")

        table.replace(Page([rows[10], *rows[:3]], None, now))  # a run new before the kept ones: rebuilt
        await _as_drawn_afresh(pilot, table, "the rows replaced")
        assert rows[10].task_id in _text(table) and rows[5].task_id not in _text(table)
        table.append(Page(rows[11:14], None, now))
        await _as_drawn_afresh(pilot, table, "appended after the rows were replaced")

        await pilot.resize_terminal(90, 12)
        await _as_drawn_afresh(pilot, table, "a narrower terminal")
        table.append(Page(rows[14:16], None, now))
        await _as_drawn_afresh(pilot, table, "appended after a resize")
        assert table.row_count == len({r.run_id for r in [rows[10], *rows[:3], *rows[11:16]]})


async def test_a_key_that_scrolls_draws_the_rows_it_changed_and_no_other(demo_home):
    """A key down at the bottom of a scrolled table draws three rows: the one the cursor left, the
    one it reached and the one scrolled into view (every visible line was drawn again on each key,
    the cursor being part of each line's cache key)."""
    rows = demo_home.queue.page(None).rows
    table = RunTable()
    async with OneWidget(table).run_test(size=(120, 8)) as pilot:
        pilot.app.terminal = Terminal(pilot.app)  # what the frames leave on screen, checked too
        pilot.app.terminal.repaint_all()
        table.replace(Page(rows, None, demo_home.clock.now()))
        await pilot.pause()
        shown = table.scrollable_content_region.height - table.header_height
        assert len(rows) > shown + 3
        for _ in range(shown - 1):
            await pilot.press("down")
        await pilot.pause()
        drawn: list[str] = []
        real = table._render_line_in_row

        def render(row_key, line_no, base_style, cursor_location, hover_location):
            drawn.append(row_key.value)
            return real(row_key, line_no, base_style, cursor_location, hover_location)

        table._render_line_in_row = render  # type: ignore[method-assign]
        for _ in range(3):
            drawn.clear()
            scroll = table.scroll_y
            await pilot.press("down")
            await pilot.pause()
            assert table.scroll_y == scroll + 1
            now = table.cursor_row
            want = {_order_key(table, row) for row in (now - 1, now)}
            assert want <= set(drawn) and len(set(drawn)) <= 3, (now, drawn)
            await _as_drawn_afresh(pilot, table, f"the cursor on row {now}")


async def test_the_caches_of_drawn_lines_hold_a_few_screens(demo_home):
    """Going down a long table keeps the drawings of a few screens, not of every row passed (the
    stock table's 1,000 lines and 10,000 cells, filled, were most of what each full garbage
    collection walked, 100 ms a key at 1,000,000 runs)."""
    from resolver_tui.widgets.run_table import ROWS_SHOWN, SCREENS_KEPT

    base = demo_home.queue.page(None).rows
    rows = [replace(base[i % len(base)], run_id=f"{base[i % len(base)].run_id}-{i}") for i in range(4 * ROWS_SHOWN)]
    table = RunTable()
    async with OneWidget(table).run_test(size=(120, 30)) as pilot:
        pilot.app.terminal = Terminal(pilot.app)  # what the frames leave on screen, checked too
        pilot.app.terminal.repaint_all()
        table.replace(Page(rows, None, demo_home.clock.now()))
        await pilot.pause()
        for _ in range(len(rows) - 1):
            table.action_cursor_down()
            await pilot.pause()
        assert table.cursor_row == len(rows) - 1
        assert len(table._line_cache) <= SCREENS_KEPT * ROWS_SHOWN < len(rows)
        assert len(table._row_render_cache) <= ROWS_SHOWN + 1
        assert len(table._cell_render_cache) <= (ROWS_SHOWN + 1) * len(COLUMNS)
        assert len(table._text_drawn) <= SCREENS_KEPT * ROWS_SHOWN * len(COLUMNS)
        for _ in range(40):  # back up more than a screen: the screen drawn from the caches is right
            table.action_cursor_up()
        await _as_drawn_afresh(pilot, table, "back up 40 rows")


def test_an_ascii_run_id_is_elided_as_the_terminal_measuring_path_elides_it():
    """``elide_middle`` cuts an ASCII run ID by its length (each next page measured 50 run IDs a
    character at a time): at every width, what the path measuring what the terminal draws gives; a
    wider character still takes that path."""
    from resolver_tui.widgets.run_table import _elide_clusters

    for text in ("T-90104-agent_structured-chat-small-1", "T-1", "", "ab"):
        for width in range(-1, len(text) + 3):
            assert elide_middle(text, width) == _elide_clusters(text, width), (text, width)
    assert elide_middle("T-大塚-agent-chat-small-1", 12) == _elide_clusters("T-大塚-agent-chat-small-1", 12)


async def test_a_page_appended_under_a_table_at_its_cap_repaints_its_scroll_bar_and_no_row(demo_home):
    """A table at its height cap (the app's ``height: auto`` up to half the screen) that grows by a
    page below keeps its size: no layout pass of the screen, no row drawn again, and its scroll
    bar's thumb, smaller now, is what the terminal shows."""
    now = demo_home.clock.now()
    rows = _widest_first(demo_home.queue.page(None).rows, now)
    assert len(rows) >= 14
    table = RunTable()
    async with OneWidget(table).run_test(size=(120, 12)) as pilot:
        table.styles.height = "auto"
        table.styles.max_height = 6
        terminal = Terminal(pilot.app)
        table.replace(Page(rows[:8], None, now))
        await pilot.pause()
        table.move_cursor(row=7)
        terminal.repaint_all()
        await pilot.pause()
        bar = [row[-2:] for row in terminal.cells[:6]]  # the scroll bar's column on screen
        grown: list[bool] = []
        real = RunTable._grown_in_place
        drawn = _drawn_rows(table)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(RunTable, "_grown_in_place", lambda self: (grown.append(True), real(self))[1])
            table.append(Page(rows[8:14], None, now))
            await pilot.pause()
            await pilot.pause()
        assert grown == [True] and drawn == []
        assert terminal.differs() == [] and [row[-2:] for row in terminal.cells[:6]] != bar


async def test_a_following_page_is_added_a_batch_per_paint_and_all_at_once_near_the_end(demo_home, monkeypatch):
    """``append_soon`` adds a following page's rows ``APPEND_CHUNK`` at a time, each batch after a
    paint of the screen (a page landing during a key added 50 rows before that key's detail was
    painted, the p99 of a key at 1,000,000 runs); a cursor within ``APPEND_CHUNK`` rows of the end
    takes the waiting rows at once; a first page shown (``replace``) drops the rows still waiting,
    in order, as they followed the rows it replaced."""
    import resolver_tui.widgets.run_table as run_table
    from textual.screen import Screen

    monkeypatch.setattr(run_table, "APPEND_CHUNK", 2)
    now = demo_home.clock.now()
    rows = _widest_first(demo_home.queue.page(None).rows, now)
    assert len(rows) >= 14
    table = RunTable()
    async with OneWidget(table).run_test(size=(120, 20)) as pilot:
        table.replace(Page(rows[:4], None, now))
        await pilot.pause()
        events: list[object] = []
        real_append, real_refresh = RunTable.append, Screen._compositor_refresh
        monkeypatch.setattr(RunTable, "append", lambda self, page: (events.append(len(page.rows)), real_append(self, page))[1])
        monkeypatch.setattr(Screen, "_compositor_refresh", lambda self: (events.append("paint"), real_refresh(self))[1])
        table.append_soon(Page(rows[4:10], None, now))
        assert table.appending and table.row_count == 4  # nothing added before a paint
        for _ in range(10):
            await pilot.pause()
        assert [e for e in events if e != "paint"] == [2, 2, 2] and not table.appending
        batches = [i for i, e in enumerate(events) if e != "paint"]
        assert all("paint" in events[a:b] for a, b in pairwise(batches))
        assert [_order_key(table, i) for i in range(10)] == [r.run_id for r in rows[:10]]

        events.clear()
        table.move_cursor(row=9)  # the last row: the next page's rows come at once, without a paint first
        table.append_soon(Page(rows[10:14], None, now))
        assert table.row_count == 14 and not table.appending
        for _ in range(4):
            await pilot.pause()
        assert [e for e in events if e != "paint"] == [4] and table.row_count == 14

        events.clear()
        table.append_soon(Page(rows[14:], None, now))
        table.replace(Page(rows[:5], None, now))  # a refresh: the waiting rows followed what it replaced
        for _ in range(4):
            await pilot.pause()
        assert not table.appending and [_order_key(table, i) for i in range(table.row_count)] == [r.run_id for r in rows[:5]]
