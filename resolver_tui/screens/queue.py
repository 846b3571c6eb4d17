"""The queue screen: the top bar, the status filters with counts, the runs table and the detail
pane, for one home and one approver.

The screen is handed its services (``QueueScreen(home, approver, ...)``) and looks nothing up
on the app. Reads go through ``home.queue`` and writes through :class:`core.home.Home`, each in
a thread worker (:mod:`resolver_tui.screens.workers`; the keys that decide are in
:mod:`resolver_tui.screens.decisions`) that reports with a message; what may be
done with a run, and why not, comes from the rulebook in the run's
:class:`~core.views.RunDetail`.
"""

from __future__ import annotations

from core.home import Home
from core.views import ACTIONS, Approver, RunDetail
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import Footer, Input, Static

from resolver_tui.messages import DetailLoaded, PageLoaded
from resolver_tui.screens.queue_tools import SORTS, QueueTools, empty_text, is_stale
from resolver_tui.widgets.bars import ALL, FILTERS, FilterBar, TopBar
from resolver_tui.widgets.detail_pane import DetailPane
from resolver_tui.widgets.run_table import RunTable
from resolver_tui.widgets.safe import plain

OFFERED = (*ACTIONS, "load_demo")


class QueueScreen(QueueTools):
    """The approvals queue of ``home`` as ``approver``.

    Args:
        home: the home folder (writes) with its read side ``home.queue``.
        approver: who is at the keyboard (role and name).
        refresh_interval: seconds between automatic refreshes (None: off).
        lease_owner: the lease owner this app executes as.
        load_demo_if_empty: load the demo queue when the first page finds the home empty.
    """

    BINDINGS = [
        Binding("a", "approve", "Approve", id="approve", tooltip="Approve the highlighted run's proposal"),
        Binding("x", "reject", "Reject", id="reject", tooltip="Reject the proposal with a reason"),
        Binding("u", "resume", "Resume", id="resume", tooltip="Resume a run that stopped or is executing"),
        Binding("t", "trace", "Trace", id="trace", show=False, tooltip="The run's trace"),
        Binding("d", "compare", "Compare", id="compare", show=False, tooltip="Compare with another run of the ticket"),
        Binding("R", "refresh", "Refresh", id="refresh", show=False, tooltip="Read the queue again"),
        Binding("slash", "filter", "Filter", id="filter", tooltip="Filter by ticket, order, customer or run ID"),
        Binding("s", "sort", "Sort", id="sort", tooltip="Sort by age, amount or role needed (or click a column header)"),
        Binding("L", "load_demo", "Load demo"),
        Binding("escape", "back", "Back", show=False),
        Binding("j", "cursor('down')", "Down", show=False),
        Binding("k", "cursor('up')", "Up", show=False),
        Binding("g", "cursor('top')", "First", show=False),
        Binding("G", "cursor('bottom')", "Last", show=False),
        *[Binding(str(i + 1), f"status({i})", label, show=False) for i, (_s, label) in enumerate(FILTERS)],
    ]

    AUTO_FOCUS = "#runs"

    selected_id: reactive[str | None] = reactive(None)
    busy: reactive[str] = reactive("")
    empty: reactive[bool] = reactive(False)
    offered: reactive[tuple[bool, ...]] = reactive((), bindings=True)
    """Which of OFFERED are offered: the footer is refreshed only when this changes, not at
    every cursor move (recomposing the footer cost ~20 ms a key)."""

    def __init__(
        self,
        home: Home,
        approver: Approver,
        *,
        refresh_interval: float | None = None,
        lease_owner: str | None = None,
        load_demo_if_empty: bool = False,
    ) -> None:
        super().__init__(id="queue")
        self.home = home
        self.approver = approver
        self.refresh_interval = refresh_interval
        self.lease_owner = lease_owner or home.lease_owner("resolver-tui")
        self.load_demo_if_empty = load_demo_if_empty
        self.filter_index = 0
        self.search: str | None = None
        self.following = False  # the one-run view the screen switched to after an action
        self.counts: dict[str, int] = {}
        self.next_page: str | None = None
        self.loading_more = False
        self.detail: RunDetail | None = None
        self.errors: dict[str, str] = {}
        self.outcomes: dict[str, list[str]] = {}  # what the last decision in this app did, by run
        self.last_failure: tuple[str, str] | None = None
        self.refreshed = ""
        self.first_page_shown = False

    # -- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        yield FilterBar(id="filters")
        yield Input(placeholder="filter: ticket, order, customer or run ID (Enter applies, Esc clears)", id="search")
        yield Static(id="empty")
        yield RunTable(id="runs")
        yield DetailPane(id="detail", classes="panel")
        yield Footer()

    def on_resize(self) -> None:
        self._show_bars()  # the bars say less on a narrow terminal

    def on_mount(self) -> None:
        self._show_bars()
        self.reload()
        if self.refresh_interval:
            self.set_interval(self.refresh_interval, self.refresh_on_timer)

    @property
    def table(self) -> RunTable:
        return self.query_one(RunTable)

    @property
    def summaries(self) -> dict:
        """The summaries of the loaded rows, by run ID (the palette lists them)."""
        return self.table.summaries

    @property
    def status(self) -> str | None:
        return FILTERS[self.filter_index][0]

    def _show_bars(self) -> None:
        """Who is at the keyboard, the simulated clock, and the filters with their counts."""
        self.query_one(TopBar).show(self.approver.name, self.approver.role, self.simulated_now(), self.home.kind)
        self.query_one(FilterBar).show(
            self.filter_index,
            self.counts,
            self.search,
            self.refreshed,
            self.following,
            dict(SORTS).get(self.sort, "") if self.sort else "",
        )

    # -- the queue ------------------------------------------------------------------------------

    def reload(self, select: str | None = None) -> None:
        """Load the first page again (keeping the selection, or moving it to ``select``)."""
        self.load_page(self.status, self.search, None, select or self.selected_id)

    def refresh_on_timer(self) -> None:
        """The timer: refresh unless a dialog is open, an action runs or a load is in flight."""
        if self.app.screen is self and not self.busy and not self.page_in_flight():
            self.reload()

    def _refilter(self) -> None:
        self._show_bars()
        self.table.forget()
        self.reload()

    @on(PageLoaded)
    def page_loaded(self, message: PageLoaded) -> None:
        page = message.page
        if message.serial != self.page_serial or page.status != self.status or page.search != self.search:
            return  # an older load, or a filter no longer shown
        self.counts = message.counts
        self.refreshed = page.now.strftime("%H:%M:%S")
        self.empty = not sum(message.counts.values())
        self._show_bars()
        self._show_empty()
        if page.after is not None:
            self.loading_more = False
            self.table.append(page)
        else:
            self.table.replace(page, message.select)
        self.next_page = page.next
        self.first_page_shown = True
        self._sync_selection()
        if self.empty and self.load_demo_if_empty:
            self.load_demo_if_empty = False
            self.action_load_demo()

    def _show_empty(self) -> None:
        empty = self.query_one("#empty", Static)
        table_shown = not (self.empty and not self.search)
        empty.display = not table_shown
        self.table.display = table_shown
        self.query_one(DetailPane).display = table_shown
        if not table_shown:
            empty.update(plain(empty_text(self.home.root, self.home.kind, self.load_demo_if_empty or self.busy == "demo")))

    def _sync_selection(self) -> None:
        run_id = self.table.current
        self.selected_id = run_id
        if run_id is None:
            self.detail = None
            self._show_detail()
            return
        s = self.table.summaries.get(run_id)
        d = self.detail
        if d is None or d.run_id != run_id or s is None or (s.version, s.status) != (d.version, d.status):
            self.load_detail(run_id)

    @on(RunTable.RunHighlighted)
    def run_highlighted(self, event: RunTable.RunHighlighted) -> None:
        if not (event.run_id == self.selected_id and self.detail and self.detail.run_id == event.run_id):
            self.selected_id = event.run_id
            self.load_detail(event.run_id)
        if event.at_end and self.next_page and not self.loading_more:
            self.loading_more = True
            self.load_page(self.status, self.search, self.next_page)

    @on(RunTable.RowSelected)
    def row_selected(self) -> None:
        self.query_one(DetailPane).focus()

    # -- the detail and what is offered ---------------------------------------------------------

    @on(DetailLoaded)  # and OperationDone, its subclass: the executor's progress
    def detail_loaded(self, message: DetailLoaded) -> None:
        detail = message.detail
        if detail.run_id != self.selected_id:
            return
        if is_stale(detail, self.detail):
            return  # read before the detail shown: a slow read never overwrites a newer one
        self.detail = detail
        if detail.error and detail.status is not None:
            self.table.mark_corrupt(detail.run_id)
        self._update_offered()
        self._show_detail()

    def why_not(self, action: str) -> str | None:
        """Why ``action`` is not offered on the highlighted run now, or None when it is: the
        screen's own reasons (nothing highlighted, busy, loading), else the rulebook's."""
        if action == "load_demo":
            if self.home.kind == "shop":
                return "The Larkfield demo queue loads only in a practice home; this is a shop home."
            return None if self.empty else "The home already has saved runs."
        d = self.detail
        if self.selected_id is None:
            return "No run is highlighted."
        if self.busy:
            return f"Wait: an action on run {self.busy} is in progress."
        if d is None or d.run_id != self.selected_id:
            return "The run is still loading."
        return next((why for a, why in d.offers.items() if a == action), None)

    def _update_offered(self) -> None:
        self.offered = tuple(self.why_not(a) is None for a in OFFERED)

    def watch_busy(self) -> None:
        self._update_offered()
        if self.is_mounted:
            self._show_detail()

    def watch_empty(self) -> None:
        self._update_offered()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "load_demo":  # hidden, not dimmed, once the home has runs and in a shop home
            return bool(self.empty) and self.home.kind != "shop"
        if action in OFFERED:
            return True if self.why_not(action) is None else None
        return True

    def _show_detail(self) -> None:
        d = self.detail
        failure = None
        if d is not None and d.run_id in self.errors:
            failure = self.errors[d.run_id]
        elif d is not None and self.last_failure and self.last_failure[0] != d.run_id:
            failure = f"Last action on {self.last_failure[0]} failed: {self.last_failure[1]}"
        why: dict[str, str | None] | None = {a: self.why_not(a) for a in ACTIONS} if d is not None else None
        outcome = self.outcomes.get(d.run_id) if d is not None else None
        self.query_one(DetailPane).show(d, empty=self.table.row_count == 0, failure=failure, why_not=why, outcome=outcome)

    # -- keys -----------------------------------------------------------------------------------

    def try_action(self, action: str) -> None:
        """Run ``action`` if offered, else say why (the palette calls this)."""
        why = self.why_not(action) if action in OFFERED else None
        if why:
            self.notify(why, severity="warning", markup=False)
            return
        self.call_later(self.run_action, action)

    def action_status(self, index: int) -> None:
        if self.following:  # a status key leaves the one-run view the screen switched to
            self.search = None
            self.following = False
        elif index == self.filter_index:
            return
        self.filter_index = index
        self._refilter()

    def action_refresh(self) -> None:
        self.reload()
        if self.selected_id:
            self.load_detail(self.selected_id)

    def action_filter(self) -> None:
        box = self.query_one("#search", Input)
        box.display = True
        box.value = self.search or ""
        box.focus()

    @on(Input.Submitted, "#search")
    def search_submitted(self, event: Input.Submitted) -> None:
        self.set_search(event.value.strip() or None)
        event.input.display = False
        self.table.focus()

    def set_search(self, search: str | None, status_index: int | None = None) -> None:
        """Filter the queue by ``search`` (and switch to a status filter)."""
        self.following = False
        self.search = search
        if status_index is not None:
            self.filter_index = status_index
        self._refilter()

    def jump_to(self, run_id: str) -> None:
        """Show ``run_id`` in the queue, whatever its status (the palette's Jump to run)."""
        if not self.table.jump(run_id):
            self.show_only(run_id)
        self.table.focus()

    def unfollow(self) -> None:
        """Leave the one-run view (if the screen switched to it) and reload the queue."""
        if self.following:
            self.action_status(self.filter_index)
        else:
            self.reload()

    def show_only(self, run_id: str) -> None:
        """Switch to all statuses filtered to ``run_id`` and select it. A number key (or Esc)
        leaves this view."""
        self.following = True
        self.search = run_id
        self.filter_index = ALL
        self._show_bars()
        self.table.forget()
        self.load_page(None, run_id, None, run_id)

    def action_back(self) -> None:
        box = self.query_one("#search", Input)
        if box.has_focus or box.display:
            box.display = False
            self.table.focus()
            if box.has_focus:
                return
        if not self.table.has_focus:
            self.table.focus()
        elif self.search:
            self.set_search(None)

    def action_load_demo(self) -> None:
        self.busy = "demo"
        self._show_empty()  # says it is loading the demo queue (no toast over the screen)
        self.run_demo()
