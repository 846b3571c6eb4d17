"""The queue screen's tools for a working day: sorts (the ``s`` key and the column headers),
the pane's focus and scroll, dimmed keys that say why, and the rule that an older read never
replaces a newer one (:func:`is_stale`). Mixed into
:class:`~resolver_tui.screens.queue.QueueScreen`, which provides the table, the filters and
``why_not``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import ResolverError
from core.views import RunDetail
from textual import events, on
from textual.binding import Binding
from textual.widgets import Input

from resolver_tui.screens.decisions import QueueDecisions
from resolver_tui.widgets.bars import FILTERS, MINE
from resolver_tui.widgets.detail_pane import DetailPane
from resolver_tui.widgets.run_table import RunTable
from resolver_tui.widgets.safe import clean

SORTS: list[tuple[str | None, str]] = [
    (None, "default"),
    ("created", "newest run"),
    ("amount", "amount"),
    ("role", "role needed"),
]
"""The sorts the ``s`` key cycles through: the store's sort name and what the filter bar calls it
(``created``, newest run first, goes with the age column, which counts from the run's creation;
the default sort of the waiting queue is oldest change first)."""

HEADER_SORTS = {"age": "created", "total": "amount", "role": "role"}
"""Clicking a column header sorts by it."""

KEY_ACTIONS = {"a": "approve", "x": "reject", "u": "resume", "t": "trace", "d": "compare"}
"""The keys of the rulebook's actions: pressing one that is dimmed says why."""


def is_stale(new: RunDetail, shown: RunDetail | None) -> bool:
    """True when ``new`` was read at an older checkpoint version of the run ``shown`` shows."""
    return (
        shown is not None
        and shown.run_id == new.run_id
        and new.version is not None
        and shown.version is not None
        and new.version < shown.version
    )


def empty_text(root: Path, kind: str, loading_demo: bool) -> str:
    """What the screen says when the home has no runs: how to make one, and in a practice home
    the ``L`` key (the demo queue is never offered in a shop home)."""
    if loading_demo:
        return f"No saved runs in {root} yet: loading the Larkfield demo queue…"
    if kind == "shop":
        return f"No saved runs in {root}.\n\nRun `resolver run TICKET` in a shell to make one (the app notices it)."
    return (
        f"No saved runs in {root}.\n\n"
        "Run `resolver run T-65273` in a shell to make one (the app notices it),\n"
        "or press L to load the Larkfield demo queue."
    )


class QueueTools(QueueDecisions):
    """Sorts, focus and scroll, dimmed keys, and the "mine" filter (see the module's docstring)."""

    BINDINGS = [
        Binding(
            "m", "mine", "Mine", id="mine", show=False, tooltip="Only the waiting runs I may approve (m again: every waiting run)"
        ),
        Binding(
            "h",
            "history",
            "History",
            id="history",
            show=False,
            tooltip="The highlighted run's decisions and refusals, with reasons",
        ),
        Binding(
            "H",
            "my_history",
            "My history",
            id="my_history",
            show=False,
            tooltip="Every decision and refusal of mine, with reasons",
        ),
        Binding(
            "W",
            "changes",
            "World's changes",
            id="changes",
            show=False,
            tooltip="What the practice world changed since its reset (resolver changes)",
        ),
    ]

    if TYPE_CHECKING:  # provided by QueueScreen

        @property
        def table(self) -> RunTable: ...
        def _refilter(self) -> None: ...
        def action_status(self, index: int) -> None: ...

        filter_index: int
        selected_id: str | None

    clock_error = ""
    """The damaged clock's sentence, told once (not at every refresh)."""

    def simulated_now(self) -> datetime | None:
        """The home's simulated time for the top bar (None: real time). A ``clock.json`` damaged
        while the app runs is told once as a message and the bar shows no clock: never a crash."""
        queue = self.home.queue
        try:
            now = queue.now() if queue.simulated else None
        except ResolverError as exc:
            if str(exc) != self.clock_error:
                self.notify(clean(str(exc)), severity="error", markup=False, timeout=10)
            self.clock_error = str(exc)
            return None
        self.clock_error = ""
        return now

    def on_key(self, event: events.Key) -> None:
        """A dimmed key of the rulebook's actions says why it is not offered (the binding does
        not run: :meth:`check_action` refused it)."""
        action = KEY_ACTIONS.get(event.character or "")
        if action is None or isinstance(self.focused, Input):
            return
        why = self.why_not(action)
        if why:
            event.stop()
            self.notify(why, title=f"{event.character}: {action} is not offered", severity="warning", markup=False)

    def action_cursor(self, where: str) -> None:
        pane = self.query_one(DetailPane)
        if pane.has_focus:  # the pane has the focus (enter): j and k scroll it
            {"down": pane.scroll_down, "up": pane.scroll_up, "top": pane.scroll_home, "bottom": pane.scroll_end}[where](
                animate=False
            )
            return
        self.table.move(where)
        self.table.focus()

    def action_mine(self) -> None:
        """Show only the waiting runs whose role needed is within mine (``m`` again: back to
        every waiting run)."""
        mine = [status for status, _ in FILTERS].index(MINE)
        self.action_status(0 if self.filter_index == mine else mine)

    def action_history(self) -> None:
        """The highlighted run's decisions and refusals, with reasons (its audit rows)."""
        if self.selected_id is None:
            self.notify("No run is highlighted.", severity="warning", markup=False)
        else:
            self.load_history("run", self.selected_id)

    def action_my_history(self) -> None:
        """Every decision and refusal recorded under my name."""
        self.load_history("name", self.approver.name)

    def action_approver_history(self, name: str) -> None:
        """One approver's decisions and refusals (the palette's ``Decisions of NAME``)."""
        self.load_history("name", name)

    def action_changes(self) -> None:
        """The practice world's changes since its reset."""
        self.load_history("changes", "")

    def action_sort(self, sort: str | None = "") -> None:
        """Sort the queue by ``sort`` (a store sort name; "": the next of :data:`SORTS`)."""
        names = [name for name, _ in SORTS]
        if sort == "":
            sort = names[(names.index(self.sort) + 1) % len(names)] if self.sort in names else names[1]
        self.sort = sort
        label = dict(SORTS).get(sort, sort or "default")
        self.notify(f"Sorted by {label}.", markup=False, timeout=3)
        self._refilter()

    @on(RunTable.HeaderSelected)
    def header_selected(self, event: RunTable.HeaderSelected) -> None:
        sort = HEADER_SORTS.get(str(event.column_key.value))
        if sort is not None:
            self.action_sort(sort)
