"""The runs table: a keyed ``DataTable`` fed a page at a time, refreshed by diff.

The table is handed pages (:class:`core.api.queue.Page`) and knows nothing of the store. It posts
:class:`RunTable.RunHighlighted` when the cursor lands on a run, with ``at_end`` set when the
cursor came within :data:`NEXT_PAGE_AHEAD` rows of the last loaded row (the screen then asks for
the next page).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import replace as replace_page
from datetime import datetime
from itertools import chain
from typing import Any

from core.api.queue import Page, RunSummary
from core.api.views import age_text, role_label, status_short
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text, TextType
from textual import on
from textual._segment_tools import line_crop
from textual.binding import Binding
from textual.cache import LRUCache
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from resolver_tui.widgets.bars import queue_title
from resolver_tui.widgets.safe import cell

PAGE_ROWS = 50
"""Rows the app reads a page at a time: a first page fills a tall terminal
(50 rows instead of the store's 200 cut 44 % of the work per filter key; the stock table costs
about 0.1 ms a row). The next page loads when the cursor comes near the last row
(:data:`NEXT_PAGE_AHEAD`)."""

NEXT_PAGE_AHEAD = 10
"""How many rows before the last loaded one the cursor asks for the next page: the
page is read and its rows added while the approver reads the rows before it, so the key
onto the last row neither waits for the read nor pays for adding 50 rows (at 1,000,000 runs
those keys were the main thread's slowest, 110 ms of CPU, the p99 of a key)."""

APPEND_CHUNK = 10
"""How many rows of a following page are added at a time, each batch after the screen's next
paint (:meth:`RunTable.append_soon`): a page that landed during a key added
its 50 rows before that key's detail was painted, about 20 ms of the main thread, the p99 of a
key at 1,000,000 runs. Within this many rows of the last one loaded, the cursor takes the rest
at once."""

ROWS_SHOWN = 50
"""The rows a tall terminal shows at once: the least the caches of drawn rows are sized for
(:meth:`RunTable._keep`; a taller table grows them)."""

SCREENS_KEPT = 3
"""How many screens of drawn lines the table keeps: a key that scrolls back up a screen or two
finds them drawn."""

COLUMNS = [
    ("run", "run ID"),
    ("ticket", "ticket"),
    ("customer", "customer"),
    ("actions", "actions"),
    ("total", "total CAD"),
    ("role", "role"),
    ("age", "age"),
    ("status", "status"),
]
"""Every column, in the order shown (a narrow terminal drops some: :data:`PRIORITY`)."""

PRIORITY = ("run", "total", "status", "age", "role", "ticket", "customer", "actions")
"""Which columns a narrow terminal keeps first: the amount and the status are never cut."""

WIDTHS = {"run": 60, "customer": 16, "actions": 22, "ticket": 8, "total": 9, "role": 9, "age": 7, "status": 9}
"""Widest cell of each column, in terminal cells; the run ID is elided in the middle only when
the terminal is too narrow for it whole (IDs were once elided at 200 columns, 60 empty)."""

RUN_MIN = 18
"""The run ID column never gets narrower than this (its middle is elided)."""

SORTS: list[tuple[str | None, str]] = [
    (None, "default"),
    ("created", "newest run"),
    ("amount", "amount"),
    ("role", "role needed"),
]
"""The sorts the ``s`` key cycles through: the store's sort name and what the table's title calls
it (``created``, newest run first, goes with the age column, which counts from the run's
creation; the default sort of the waiting queue is oldest change first)."""

HEADER_SORTS = {"age": "created", "total": "amount", "role": "role"}
"""Clicking a column header sorts by it."""

ELSEWHERE = Coordinate(-2, 0)
"""A place on no row (the header is row -1, the runs 0 and up): where :meth:`RunTable._render_line_in_row`
says the cursor is when it is not on the row being drawn."""

ACTION_WORDS = {"request_refund": "refund", "reship_item": "reship", "create_return_label": "return label", "send_reply": "reply"}


def action_words(summary: str) -> str:
    """``request_refund LK-507862 119.00 CAD ...; reship_item ...`` as ``refund, reship``."""
    words = [part.split()[0] for part in summary.split(";") if part.strip()]
    return ", ".join(ACTION_WORDS.get(w, w) for w in words)


def _clusters(text: str) -> list[str]:
    """``text`` cut into what a terminal draws as one: a character with the zero-width marks
    that follow it (combining accents, variation selectors, joiners), so a cut never splits
    ``é`` written as ``e`` + U+0301."""
    out: list[str] = []
    for ch in text:
        if out and cell_len(ch) == 0:
            out[-1] += ch
        else:
            out.append(ch)
    return out


def _take(parts: list[str], width: int) -> list[str]:
    """The leading ``parts`` that fit ``width`` cells."""
    taken, used = [], 0
    for part in parts:
        used += cell_len(part)
        if used > width:
            break
        taken.append(part)
    return taken


def _short(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal cells (Rich's ``cell_len``: a CJK character or an
    emoji takes two, a combining mark none), ``…`` marking the cut."""
    if cell_len(text) <= width:
        return text
    return "".join(_take(_clusters(text), width - 1)) + "…"


def elide_middle(text: str, width: int) -> str:
    """``T-90104-agent_structured-chat-small-1`` as ``T-90104-age…at-small-1``: the ticket at the
    start and the run number at the end stay readable. ``width`` is in terminal cells;
    an ASCII text (a character a cell) is cut by its length, without measuring each
    character (a page of 50 run IDs at each next page)."""
    if not text.isascii():
        return _elide_clusters(text, width)
    if len(text) <= width:
        return text
    head = max(0, (width - 1) // 2)
    tail = max(0, width - 1 - head)
    return text[:head] + "…" + text[len(text) - tail :]


def _elide_clusters(text: str, width: int) -> str:
    """:func:`elide_middle` measuring what the terminal draws as one (:func:`_clusters`)."""
    if cell_len(text) <= width:
        return text
    parts = _clusters(text)
    head = _take(parts, (width - 1) // 2)
    room = width - 1 - cell_len("".join(head))
    tail = _take(parts[len(head) :][::-1], room)[::-1]
    return "".join(head) + "…" + "".join(tail)


def fit_columns(width: int) -> tuple[list[str], int]:
    """Which columns fit ``width`` characters of table, in display order, and the width given to
    the run ID: columns are kept in :data:`PRIORITY` order while they fit (each costs its width
    and two of padding); the run ID gets what is left up to its full width."""
    budget = width - 2  # the vertical scrollbar
    chosen = ["run"]
    used = RUN_MIN + 2
    for key in PRIORITY[1:]:
        cost = WIDTHS[key] + 2
        if used + cost <= budget:
            chosen.append(key)
            used += cost
    run_width = max(RUN_MIN, min(WIDTHS["run"], RUN_MIN + budget - used))
    return [k for k, _ in COLUMNS if k in chosen], run_width


def since(s: RunSummary) -> str:
    """When the run's age counts from: its creation (a resume or a decision does not restart it)."""
    return s.created_at or s.updated_at


def row_cells(s: RunSummary, now: datetime, corrupt: bool = False) -> tuple[str, ...]:
    """The table's cells for one summary, as plain strings in :data:`COLUMNS` order (ages against
    ``now``); the run ID is whole (the table elides it to its column)."""
    status = "corrupt" if (corrupt or not s.state_ok) else status_short(s.status)
    return (
        s.run_id,
        s.task_id,
        _short(s.customer or "", WIDTHS["customer"]),
        _short(action_words(s.actions or ""), WIDTHS["actions"]),
        s.total_amount or "",
        role_label(s.required_role),
        age_text(since(s), now),
        status,
    )


def styled(key: str, value: str, run_width: int = WIDTHS["run"]) -> Text:
    """One cell as literal text: ``corrupt`` in bold red, totals right-aligned, run IDs elided
    in the middle to ``run_width``."""
    if key == "status" and value == "corrupt":
        return cell(value, "bold red")
    if key == "total":
        return cell(value.rjust(WIDTHS["total"]))
    if key == "run":
        return cell(elide_middle(value, run_width))
    return cell(value)


class RunTable(DataTable):
    """The runs of one filter, keyed by run ID; ``summaries`` and ``cells`` hold what is shown.

    Its title (on its top border) says ``queue`` with the filter by text and the sort it is told
    (:meth:`caption`), marked ``▶`` while it has the focus (the focused region shows in
    a text capture, not in colour alone).
    """

    class RunHighlighted(Message):
        """The cursor is on ``run_id``; ``at_end`` when it is within :data:`NEXT_PAGE_AHEAD` rows
        of the last loaded row."""

        def __init__(self, run_id: str, at_end: bool) -> None:
            super().__init__()
            self.run_id = run_id
            self.at_end = at_end

    class EndInSight(Message):
        """The table was scrolled (the mouse wheel, the scrollbar, a key) so that a row within
        :data:`NEXT_PAGE_AHEAD` rows of the last loaded one shows: the screen reads the next page
        as it does for the cursor (a scroll moves no cursor, so the next page never came)."""

    BINDINGS = [Binding("enter", "screen.read", "Read", show=False)]
    """Enter runs the screen's ``read`` (the pane takes the focus) in the key's own handling,
    before the keys after it: the stock table's enter posted a selection message, which reached
    the screen after the keys typed with the enter in one read, so ``enter j j j j`` moved the
    cursor four runs and then focused the pane on the run reached, not the one chosen (a trial;
    a key decides only what is shown). A click on a row still selects it."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.summaries: dict[str, RunSummary] = {}
        self.cells: dict[str, tuple[str, ...]] = {}
        self.broken: set[str] = set()
        self.shown: list[str] = [k for k, _ in COLUMNS]
        self.run_width = WIDTHS["run"]
        self._caption: tuple[str | None, bool, str] = (None, False, "")
        self._text_drawn: LRUCache[tuple[RowKey, ColumnKey, int], tuple[Text, list[Segment]]] = LRUCache(0)
        """Each cell's own text as drawn, by row, column and width (:meth:`_render_cell`)."""
        for cache, size in self._cache_sizes(ROWS_SHOWN):
            cache.maxsize = size
        self.keys: dict[str, str] = {}
        """The keys its title names (``back``, ``read``), told by the screen from the action table."""
        self._pending: deque[Page] = deque()
        """Rows of following pages not added yet (:meth:`append_soon`), in order."""
        self._drain_due = False

    def on_mount(self) -> None:
        self._add_columns()
        self._title()

    def caption(self, search: str | None, following: bool, sort: str) -> None:
        """Say in the title the filter by text (``following``: the one-run view after an
        action) and the sort's name ('' for the default)."""
        self._caption = (search, following, sort)
        self._title()

    def _title(self, focused: bool | None = None) -> None:
        self.border_title = queue_title(self.has_focus if focused is None else focused, *self._caption, self.keys)

    def on_focus(self) -> None:
        self._title(True)  # Textual sets has_focus after this handler

    def on_blur(self) -> None:
        self._title(False)

    def _add_columns(self) -> None:
        labels = dict(COLUMNS)
        for key in self.shown:
            self.add_column(labels[key], key=key)

    def on_resize(self) -> None:
        self.fit(self.outer_size.width)
        self._keep(self.outer_size.height)

    def _keep(self, rows: int) -> None:
        """Size the caches of drawn lines, rows and cells to a table showing ``rows`` rows: the
        lines and the cells' texts of :data:`SCREENS_KEPT` screens, the rows and cells styled of
        one. The stock table keeps 1,000 lines, 1,000 rows and 10,000 cells,
        whatever it shows: filled as the cursor went down the pages, they were most of what the
        garbage collector's full collections walked, and those grew to 100 ms a key at
        1,000,000 runs. A line is drawn from its row, and a row from its cells' texts, so a
        row or cell let go costs a restyle, not a new drawing of its text. They only grow."""
        for cache, size in self._cache_sizes(max(rows, ROWS_SHOWN)):
            cache.grow(size)

    def _cache_sizes(self, rows: int) -> list[tuple[LRUCache[Any, Any], int]]:
        """Each cache of drawings and its size for a table showing ``rows`` rows (the cursor's
        row is drawn twice, with and without the cursor)."""
        cells = rows * len(COLUMNS)
        return [
            (self._line_cache, SCREENS_KEPT * rows),
            (self._text_drawn, SCREENS_KEPT * cells),
            (self._row_render_cache, rows + 1),
            (self._cell_render_cache, cells + len(COLUMNS)),
        ]

    def fit(self, width: int) -> None:
        """Show the columns that fit ``width`` (a resize calls it); the rows are rebuilt only
        when the set of columns or the run ID's width changes."""
        shown, run_width = fit_columns(width)
        if (shown, run_width) == (self.shown, self.run_width):
            return
        keep = self.current
        self.shown, self.run_width = shown, run_width
        with self.app.batch_update():
            super().clear(columns=True)
            self._add_columns()
            for run_id, cells in self.cells.items():
                self._add(run_id, cells)
            if keep is not None:
                self.move_cursor(row=self.get_row_index(keep), animate=False)

    def _add(self, run_id: str, cells: tuple[str, ...]) -> None:
        values = dict(zip((k for k, _ in COLUMNS), cells, strict=True))
        self.add_row(*(styled(k, values[k], self.run_width) for k in self.shown), key=run_id)

    @property
    def current(self) -> str | None:
        """The run ID under the cursor, or None when the table is empty."""
        if not self.row_count:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    def forget(self) -> None:
        """Empty the table (a new filter)."""
        self._pending.clear()
        self.clear()
        self.summaries.clear()
        self.cells.clear()

    @property
    def appending(self) -> bool:
        """True while rows of a following page wait to be added (:meth:`append_soon`)."""
        return bool(self._pending)

    def append_soon(self, page: Page) -> None:
        """Add the rows of a following page :data:`APPEND_CHUNK` at a time, each batch after
        the screen's next paint, so a key pressed meanwhile waits for one batch at most, not a
        page. A cursor within :data:`APPEND_CHUNK` rows of the last row
        added takes every waiting row at once. :meth:`replace` and :meth:`forget` drop the
        rows still waiting (they followed the rows those replace)."""
        self._pending.append(page)
        if self._near_end():  # the approver is waiting for these rows (the cursor or ``G`` at the end)
            self._drain()
        else:
            self._drain_soon()

    def _near_end(self) -> bool:
        return self.row_count - 1 - self.cursor_row < APPEND_CHUNK

    def _drain_soon(self) -> None:
        if self._pending and not self._drain_due:
            self._drain_due = True
            self.call_after_refresh(self._drain)

    def _drain(self) -> None:
        self._drain_due = False
        if not self._pending:
            return
        if self._near_end():  # the cursor came near the end: all now
            while self._pending:
                self.append(self._pending.popleft())
            return
        page = self._pending[0]
        self.append(replace_page(page, rows=page.rows[:APPEND_CHUNK]))
        if len(page.rows) > APPEND_CHUNK:
            self._pending[0] = replace_page(page, rows=page.rows[APPEND_CHUNK:])
        else:
            self._pending.popleft()
        self._drain_soon()

    def append(self, page: Page) -> None:
        """Add the rows of a following page (those not shown yet) now."""
        with self.app.batch_update():
            for s in page.rows:
                if s.run_id in self.summaries:
                    continue
                self.summaries[s.run_id] = s
                cells = self.cells[s.run_id] = row_cells(s, page.now, s.run_id in self.broken)
                self._add(s.run_id, cells)

    def replace(self, page: Page, select: str | None = None) -> None:
        """Show a first page by diff (rows updated, not rebuilt): runs gone
                from the page are removed, the runs kept update their changed cells only, and runs new
                at the end are appended. Only a page whose kept runs changed order, or a run new before
                a kept one, rebuilds the table (the table cannot insert a row), and so does a page that
        keeps none of the runs shown (a new filter). The cursor stays on the
                same run (or moves to ``select``)."""
        self._pending.clear()  # rows that followed the rows replaced
        new_order = [s.run_id for s in page.rows]
        wanted = set(new_order)
        kept = [run_id for run_id in self.summaries if run_id in wanted]
        keep_row = self.cursor_row
        top, bottom = self.rows_in_view()
        follow = top <= keep_row < bottom  # a cursor scrolled out of view by the wheel is not scrolled back to
        with self.app.batch_update():
            if kept and kept == new_order[: len(kept)]:
                for run_id in [r for r in self.summaries if r not in wanted]:
                    self.remove_row(run_id)
                    self.summaries.pop(run_id, None)
                    self.cells.pop(run_id, None)
                for s in page.rows[: len(kept)]:
                    self._update(s, page.now)
                self.append(replace_page(page, rows=page.rows[len(kept) :]))
            else:
                self.forget()
                self.append(page)
            if select and select in self.summaries:
                self.move_cursor(row=self.get_row_index(select), animate=False, scroll=follow)
            elif self.row_count:
                self.move_cursor(row=min(keep_row, self.row_count - 1), animate=False, scroll=follow)

    def rows_in_view(self) -> tuple[int, int]:
        """``(first, after last)``: the indexes of the rows the table shows now (rows are one
        line high), where the wheel or the scrollbar left it."""
        header = self.header_height if self.show_header else 0
        top = round(self.scroll_y)
        return top, top + max(0, self.scrollable_content_region.height - header)

    def _update(self, s: RunSummary, now: datetime) -> None:
        """Update the cells of a shown run that changed."""
        cells = row_cells(s, now, s.run_id in self.broken)
        before = self.cells.get(s.run_id) or ("",) * len(cells)
        self.summaries[s.run_id] = s
        if cells != before:
            self.cells[s.run_id] = cells
            for (key, _), value, old in zip(COLUMNS, cells, before, strict=True):
                if value != old and key in self.shown:
                    self.update_cell(s.run_id, key, styled(key, value, self.run_width), update_width=True)

    def mark_corrupt(self, run_id: str) -> None:
        """Show ``corrupt`` in the run's status cell (its checkpoint could not be read). A run
        shown as corrupt already is left alone: a cell's update makes the table draw every
        visible row again (each key onto a corrupt run redrew them all)."""
        self.broken.add(run_id)
        if run_id in self.summaries and self.cells[run_id][-1] != "corrupt":
            cells = self.cells[run_id]
            self.cells[run_id] = (*cells[:-1], "corrupt")
            if "status" in self.shown:
                self.update_cell(run_id, "status", styled("status", "corrupt"))

    def jump(self, run_id: str) -> bool:
        """Move the cursor to ``run_id`` if it is loaded; False otherwise."""
        if run_id not in self.summaries:
            return False
        self.move_cursor(row=self.get_row_index(run_id))
        return True

    def move(self, where: str) -> None:
        """``down``, ``up``, ``top`` or ``bottom``."""
        if where == "down":
            self.action_cursor_down()
        elif where == "up":
            self.action_cursor_up()
        elif where == "top":
            self.move_cursor(row=0)
        elif self.row_count:
            self.move_cursor(row=self.row_count - 1)

    def end_in_sight(self) -> bool:
        """True when the cursor, or the last row in view of a table scrolled down (the wheel,
        the scrollbar), is within :data:`NEXT_PAGE_AHEAD` rows of the last row added: the next
        page is due. A table showing all its rows unscrolled waits for the cursor."""
        if not self.row_count:
            return False
        last = self.row_count - 1
        if self.cursor_row >= last - NEXT_PAGE_AHEAD:
            return True
        _top, bottom = self.rows_in_view()
        return self.scroll_y > 0 and bottom > last - NEXT_PAGE_AHEAD

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Scroll as the stock table does, and post :class:`EndInSight` when the scroll shows a
        row within :data:`NEXT_PAGE_AHEAD` rows of the last loaded one, however it scrolled
        (the wheel or the scrollbar move no cursor, so :class:`RunHighlighted` never said so)."""
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) == round(new_value) or new_value < old_value:
            return
        lines = self._total_row_height
        _top, bottom = self.rows_in_view()  # the line after the last shown
        if lines and bottom >= lines - NEXT_PAGE_AHEAD:
            self.post_message(self.EndInSight())

    def add_row(self, *cells: object, height: int | None = 1, key: str | None = None, label: TextType | None = None) -> RowKey:
        """Add a row below the last one, as the stock table does, keeping every line drawn so far
        when the row cannot change one. The stock table counts an added row as
        an update, and its drawn lines, rows and cells are kept by that count, so the key on
        which a page of 50 rows landed drew every visible row again (the slowest keys at
        1,000,000 runs). A row of a fixed height, without a label, below the fixed rows, changes
        no line above it: the count stays, and the lines by row (the count's offsets, if
        computed) are extended by the new row's. A column that the new rows widen still moves
        the count once they are measured (:meth:`_update_dimensions`), as any other update
        (a cell, a removal, a sort, a resize, a cleared table) does.

        Raises:
            DuplicateKey: a row of ``key`` is in the table already (the stock table's error).
        """
        count = self._update_count
        offsets = self._offset_cache.get(count)
        row_key = super().add_row(*cells, height=height, key=key, label=label)
        if height and label is None and self._row_locations.get(row_key) == self.row_count - 1 >= self.fixed_rows:
            self._update_count = count
            if offsets is not None:
                offsets.extend((row_key, y) for y in range(height))
        return row_key

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Measure new rows (the stock table does it when idle) and, when a column grew, forget
        every row and cell drawn at the old widths. The stock table keys those drawings by its
        update count, which measuring does not change, so rows painted between ``add_row`` and
        the next idle kept their label-wide columns (``T-652…  waiti…``) beside rows drawn
        later at full width: a test failed about one run in twelve."""
        before = [column.get_render_width(self) for column in self.ordered_columns]
        size, laying_out = self.virtual_size, self._layout_required
        scrolled = size.height > self.scrollable_content_region.height  # the table's height is at its cap
        super()._update_dimensions(self._measure_text_rows(new_rows))
        widths = [column.get_render_width(self) for column in self.ordered_columns]
        if widths != before:
            self._update_count += 1
            self.refresh()
        elif scrolled and not laying_out and self._layout_required and self.virtual_size.height >= size.height:
            self._grown_in_place()

    def _measure_text_rows(self, new_rows: Iterable[RowKey]) -> list[RowKey]:
        """Widen the columns for the new rows whose cells are all Rich ``Text`` on one line of
        height (unlabelled, not auto-height), measured as Rich measures a ``Text`` (its widest
        line in terminal cells) without Rich's measuring machinery (a sixth of
        the main thread's work of a filter key); returns the other rows, for the stock table."""
        rest: list[RowKey] = []
        columns = self.ordered_columns
        for row_key in new_rows:
            row = self.rows.get(row_key)
            data = self._data.get(row_key)
            values = [data.get(column.key) for column in columns] if data is not None else []
            if (
                row is None
                or data is None
                or row_key not in self._row_locations
                or row.label is not None
                or row.auto_height
                or not all(type(value) is Text for value in values)
            ):
                rest.append(row_key)
                continue
            for column, value in zip(columns, values, strict=True):
                width = max((cell_len(line) for line in value.plain.splitlines()), default=0)  # type: ignore[union-attr]
                if width > column.content_width:
                    column.content_width = width
        return rest

    def _grown_in_place(self) -> None:
        """Rows were added below a table that scrolls already, its columns as wide as before: its
        size on screen cannot change (``height: auto`` up to its cap), so the layout pass of the
        whole screen that a new virtual size asks for is dropped, and only its scroll bar repaints:
        the new rows are below the last one in view, so no line in view changes
        (a page appended under the cursor cost a layout and repaint of the screen, then a repaint of
        every line of the table, the slowest keys at 1,000,000 runs)."""
        self._layout_required = False
        self._scroll_update(self.virtual_size)

    def _set_hover_cursor(self, active: bool) -> None:
        """Show or hide the mouse's faint cursor, as the stock table does, repainting its row only
        when that changes. The stock table repaints the hovered row at every cursor key, shown or
        not, so each key's frame spanned from the first row (where the hover rests while the
        mouse never moved) down to the cursor's: up to a screen of table lines composed again
        per key."""
        if active != self._show_hover_cursor:
            super()._set_hover_cursor(active)

    _paint_style: Style | None = None
    """The table's Rich style while one paint draws its lines (see :meth:`render_lines`)."""

    def render_lines(self, crop: Region) -> list[Strip]:
        """Draw the lines of ``crop`` as the stock table does, working out the table's style once
        for them all: the stock table works it out again for each line (through every ancestor's
        background), and a key that scrolls the table draws every line in view."""
        self._paint_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._paint_style = None

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the table in view (the stock table's, with the style of this paint)."""
        style = self._paint_style
        if style is None:
            return super().render_line(y)
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        fixed_keys: list[RowKey] = [self._row_locations.get_key(i) for i in range(self.fixed_rows)]  # type: ignore[misc]
        fixed = sum(self.get_row_height(key) for key in fixed_keys)
        if self.show_header:
            fixed += self.get_row_height(self._header_row_key)
        if y >= fixed:
            y += scroll_y
        return self._render_line(y, scroll_x, scroll_x + width, style)

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip:
        """Draw line ``y`` of the table (the header's lines first, then the rows' at their place
        in the whole table, whatever the scroll), as the stock table does, keeping the line drawn
        by where the cursor and the mouse's hover are only on their own rows.
        The stock table keeps each drawn line by where the cursor is, so each key drew every
        visible line again and kept them all in its cache of 1,000 lines: with a row cursor a
        line is drawn the same wherever else the cursor is, so a key draws the two rows it
        changed and the one it scrolled into view. Lines the cache let go were a thousand
        objects a key for the garbage collector, whose full collections, every fifteen keys or
        so, took 50 to 100 ms each at 1,000,000 runs (the p99 of a key). A table with another
        cursor type goes to the stock table."""
        if self.cursor_type != "row":
            return super()._render_line(y, x1, x2, base_style)
        width = self.size.width
        try:
            row_key, y_offset_in_row = self._get_offsets(y)
        except LookupError:
            return Strip.blank(width, base_style)
        row = self._row_locations.get(row_key) if row_key in self._row_locations else -1
        cursor, hover = self.cursor_coordinate, self.hover_coordinate
        cache_key = (
            y,
            x1,
            x2,
            width,
            cursor if cursor.row == row else ELSEWHERE,
            hover if hover.row == row else ELSEWHERE,
            base_style,
            self.cursor_type,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        cached = self._line_cache.get(cache_key)
        if cached is not None:
            return cached
        fixed, scrollable = self._render_line_in_row(
            row_key, y_offset_in_row, base_style, cursor_location=cursor, hover_location=hover
        )
        fixed_width = sum(column.get_render_width(self) for column in self.ordered_columns[: self.fixed_columns])
        fixed_line: list[Segment] = list(chain.from_iterable(fixed)) if fixed else []
        scrollable_line: list[Segment] = list(chain.from_iterable(scrollable))
        segments = fixed_line + line_crop(scrollable_line, x1 + fixed_width, x2, width)
        strip = Strip(segments).adjust_cell_length(width, base_style).simplify()
        self._line_cache[cache_key] = strip
        return strip

    def _render_line_in_row(
        self, row_key: RowKey, line_no: int, base_style: Style, cursor_location: Coordinate, hover_location: Coordinate
    ) -> tuple[list[list[Segment]], list[list[Segment]]]:
        """Draw one line of a row, reusing the drawing of a row the cursor is not on.
        The stock table keys its cache of drawn rows by where the cursor is, so each
        move of the cursor drew every visible row again, and a move that scrolls repaints them
        all: 30 % of the main thread's time per key at 1,000,000 runs. With a row cursor a row
        is drawn the same wherever else the cursor (or the mouse's hover) is, so those places
        are given as :data:`ELSEWHERE`, and the cache hits for every row but the two that
        changed."""
        if self.cursor_type == "row":
            row = self._row_locations.get(row_key) if row_key in self._row_locations else -1
            if cursor_location.row != row:
                cursor_location = ELSEWHERE
            if hover_location.row != row:
                hover_location = ELSEWHERE
        return super()._render_line_in_row(row_key, line_no, base_style, cursor_location, hover_location)

    def _render_cell(
        self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool = False, hover: bool = False
    ) -> list[list[Segment]]:
        """Draw one body cell: the segments the stock table draws (its padding, its cursor, hover
        and zebra styles, the cell's row and column in the style's meta), without Rich's
        ``Styled(Padding(...))`` layers (they were three quarters of drawing a new page).
        The cell's own text is drawn once per cell and width, kept by row and column key while
        the cell is the same object, so a page appended, a cell updated elsewhere or the cursor
        moving only restyles it. The header, labelled, fixed or taller rows and cells that are
        not Rich ``Text`` go to the stock table."""
        pad = self.cell_padding
        if row_index < 0 or column_index < 0 or self.fixed_rows or self.fixed_columns or width <= 2 * pad:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        cache_key = (
            row_key,
            column_key,
            base_style,
            cursor,
            hover,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        cached = self._cell_render_cache.get(cache_key)
        if cached is not None:
            return cached
        row = self.rows.get(row_key)
        cell = self._data[row_key].get(column_key) if row is not None else None
        if row is None or row.height != 1 or row.label is not None or not isinstance(cell, Text):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        drawn = self._text_drawn.get((row_key, column_key, width))
        if drawn is None or drawn[0] is not cell:
            drawn = (cell, self._draw_text(cell, width - 2 * pad))
            self._text_drawn[(row_key, column_key, width)] = drawn
        component, post = self._get_styles_to_render_cell(
            False,
            False,
            False,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        pre = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component
        edge = Segment(" " * pad, pre + post) if pad else None
        line = [Segment(text, pre + style + post if style else pre + post) for text, style, _ in drawn[1]]
        lines = [[edge, *line, edge] if edge else line]
        self._cell_render_cache[cache_key] = lines
        return lines

    def _draw_text(self, text: Text, width: int) -> list[Segment]:
        """One cell's ``text`` drawn to ``width`` cells, as Rich's ``render_lines`` draws it
        (its segments, then spaces of no style): a one-line text that fits, with no justify of
        its own, is rendered directly (Rich's wrapping, joining and cropping
        were a tenth of a filter key's work); anything else goes through Rich."""
        plain = text.plain
        used = cell_len(plain)
        if used <= width and text.justify in (None, "default") and "\n" not in plain and "\t" not in plain:
            console = self.app.console
            segments = text.render(console, end="")  # its spans; the text's own style is under them
            if text.style:
                segments = Segment.apply_style(segments, console.get_style(text.style))
            line = [segment for segment in segments if segment.text]
            if used < width:
                line.append(Segment(" " * (width - used)))
            return line
        options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
        return self.app.console.render_lines(text, options.update_width(width), pad=True)[0]

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key is not None and event.row_key.value is not None:
            at_end = event.cursor_row >= self.row_count - 1 - NEXT_PAGE_AHEAD
            self.post_message(self.RunHighlighted(event.row_key.value, at_end))
