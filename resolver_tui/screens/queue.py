"""The queue screen: the top bar, the status filters with counts, the runs table and the detail
pane, for one home and one approver.

One class: widgets are told what to show (:class:`TopBar`, :class:`FilterBar`,
:class:`RunTable`, :class:`DetailPane`), and every read and write on the home is a call of the
plain :class:`~resolver_tui.screens.decisions.Decisions` object run in a thread worker, which
reports with a message. What may be done with a run, and why not, comes from the rulebook in the
run's :class:`~core.api.views.RunDetail`; every key comes from :mod:`resolver_tui.keys`.

Keys act on what is on screen and settled: approve and reject act on the highlighted row, and
only once its detail is shown; the approve dialog opens after the run's lookups ran again, so it
shows the world as it is; the focus returns to the table after a decision, a resume or a dialog,
and only ``enter`` moves it to the pane.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from core.api.home import Home
from core.api.views import ACTIONS, Approver, RunDetail, approve_dialog, decision_seal, reject_dialog
from core.ground.errors import ResolverError
from textual import events, on
from textual.app import ComposeResult
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer, TimerCallback
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState

from resolver_tui.frames import SCREEN_UPDATE, FrameClock
from resolver_tui.keys import bindings, core_keys, key_for, rule_keys
from resolver_tui.messages import (
    ChangesFound,
    DetailLoaded,
    DialogReady,
    Failed,
    Finished,
    KeyUnlocked,
    LinesReady,
    LiveState,
    PageLoaded,
    QueueChanged,
)
from resolver_tui.screens.decisions import Decisions
from resolver_tui.screens.dialogs import ConfirmScreen, MarkScreen, PassphraseApproveScreen, PickRunScreen, RejectScreen
from resolver_tui.screens.text import CompareScreen, HistoryScreen, TraceScreen
from resolver_tui.widgets.bars import ALL, FILTERS, MINE, FilterBar, TopBar
from resolver_tui.widgets.detail_pane import DetailPane
from resolver_tui.widgets.footer import Footer
from resolver_tui.widgets.run_table import HEADER_SORTS, PAGE_ROWS, SORTS, RunTable
from resolver_tui.widgets.safe import clean, plain

if TYPE_CHECKING:
    from core.api.views import WorldSeen
    from core.engine.approvers import Unlocked

OFFERED = (*ACTIONS, "load_demo")
CURSOR_DOWN, CURSOR_UP = "cursor('down')", "cursor('up')"
"""The actions whose keys are offered or dimmed by a rule (the rulebook's, and the demo's)."""

WORKER_WORDS = {
    "page": "reading the queue",
    "detail": "reading the run",
    "dialog": "reading the run again",
    "view": "reading the trace",
    "action": "carrying out the decision",
}
"""What each worker group was doing, for the sentence shown when it fails unexpectedly."""


def unexpected_sentence(group: str) -> str:
    """The sentence shown for an unexpected error in a worker of ``group``: what failed and what
    to do, never the exception's own text (it goes to the log)."""
    doing = WORKER_WORDS.get(group, "working")
    return (
        f"Something went wrong while {doing}; nothing was lost. Press {key_for('refresh')} to read the queue "
        "again, or run `resolver show RUN` in a shell."
    )


def is_stale(new: RunDetail, shown: RunDetail | None) -> bool:
    """True when ``new`` was read at an older checkpoint version of the run ``shown`` shows."""
    return (
        shown is not None
        and shown.run_id == new.run_id
        and new.version is not None
        and shown.version is not None
        and new.version < shown.version
    )


def empty_text(root: Path | str, kind: str, loading_demo: bool) -> str:
    """What the screen says when the home has no runs: how to make one, and in a practice home
    the demo queue's key (never offered in a shop home). ``root`` is where the runs are kept: the
    home folder, or a team store's label (``the team store test@127.0.0.1:5432``; it named the
    home folder, which holds none of a team store's runs)."""
    if loading_demo:
        return f"No saved runs in {root} yet: loading the Larkfield demo queue…"
    if kind == "shop":
        return f"No saved runs in {root}.\n\nRun `resolver run TICKET` in a shell to make one (the app notices it)."
    return (
        f"No saved runs in {root}.\n\n"
        "Run `resolver run T-65273` in a shell to make one (the app notices it),\n"
        f"or press {key_for('load_demo')} to load the Larkfield demo queue."
    )


DEMO_TOAST_S = 15
"""Seconds the notice of a ``--demo`` not loaded stays: it explains the whole screen."""


def demo_not_loaded(home: Home, runs: int) -> str:
    """What ``--demo`` says when the home already holds ``runs`` runs: the demo queue is loaded only
    into an empty home (it would mix the demo's runs with the person's), so the home is opened as
    it is, and the sentence says so instead of letting the queue pass for the demo."""
    label = home.runs_live_at
    place = f"The home {home.root}" if label is None else f"The team store {label}"
    held = "1 run" if runs == 1 else f"{runs} runs"
    return f"{place} already holds {held}; --demo loads the demo queue only into an empty home, so it was opened as it is."


def where_runs_are(home: Home) -> Path | str:
    """Where ``home``'s runs are kept, as the empty queue names it: the home folder, or ``the
    team store DB@HOST:PORT`` (:attr:`core.api.home.Home.runs_live_at`)."""
    label = home.runs_live_at
    return home.root if label is None else f"the team store {label}"


LIVE_SAFETY_NET_S = 30.0
"""On a team store, whose changes arrive by notification, the timer's refresh is kept as a safety
net at no less than this many seconds (a change missed in a way the listener cannot see)."""

ERROR_TOAST_S = 10
"""Seconds an error's toast stays; a page load that fails again with the same sentence within
them (the timer's reads of a store moved away, say) adds no second toast."""

RECONNECTED = "Live updates reconnected; queue re-read."
LOST = "Live updates stopped: the connection to the team store dropped; reconnecting."


class QueueScreen(Screen):
    """The approvals queue of ``home`` as ``approver``.

    On a team store the queue is live: a listener (``home.queue_changes()``)
    hears every change any machine commits and the screen reads the first page and the shown
    run's detail again, once per burst (a change heard while a page is in flight, an action runs
    or a dialog is open is read when that ends). A listener that loses its connection says so,
    and once it listens again the screen says :data:`RECONNECTED` and reads the queue again (what
    was sent in between is lost). On the home folder's SQLite files the timer polls.

    Args:
        home: the home folder (writes) with its read side ``home.queue``.
        approver: who is at the keyboard (role and name).
        refresh_interval: seconds between automatic refreshes (None: off); on a team store at
            least :data:`LIVE_SAFETY_NET_S`, a safety net behind the notifications.
        lease_owner: the lease owner this app executes as.
        load_demo_if_empty: load the demo queue when the first page finds the home empty; a home
            with runs is opened as it is, and a notice says so (:func:`demo_not_loaded`).
    """

    BINDINGS = bindings("queue")
    AUTO_FOCUS = "#runs"

    # None of these paints anything itself: a change must not repaint the whole screen (a
    # reactive's default repaint marked the screen dirty at every key).
    selected_id: reactive[str | None] = reactive(None, repaint=False)
    busy: reactive[str] = reactive("", repaint=False)
    empty: reactive[bool] = reactive(False, repaint=False)
    offered: reactive[tuple[bool, ...]] = reactive((), bindings=True, repaint=False)
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
        self.live = home.queue_changes()
        """The live queue's listener on a team store (None on SQLite files: the timer polls)."""
        if self.live is not None and refresh_interval:
            refresh_interval = max(refresh_interval, LIVE_SAFETY_NET_S)
        self.refresh_interval = refresh_interval
        self.live_due = False  # a change was heard and the queue is not read again yet
        self.live_heard = 0  # batches of changes heard (for tests and the benchmark)
        self.live_state = ""  # the listener's last word: "", "lost" or "reconnected"
        self.load_demo_if_empty = load_demo_if_empty
        self.decisions = Decisions(home, approver, lease_owner or home.lease_owner("resolver-tui"), core_keys())
        self.key_labels = {action: f"{k.shown} {k.label.lower()}" for action, k in rule_keys().items()}
        self.filter_index = 0
        self.search: str | None = None
        self.sort: str | None = None
        self.following = False  # the one-run view the screen switched to after an action
        self.counts: dict[str, int] = {}
        self.aside = 0
        """How many waiting runs are set aside now (the waiting count leaves them out)."""
        self.next_page: str | None = None
        self.loading_more = False
        self.page_serial = 0
        self.first_serial = 0  # the serial of the newest first-page load (a filter, sort, search, refresh)
        self.first_landed = 0  # the serial of the first page the table shows
        self.more_serial = 0  # the serial of the newest next-page load
        self._keep_selection = False  # the latest page load keeps the selection as it is when it lands
        self._page_worker: Worker | None = None
        self.detail: RunDetail | None = None
        self.opening = ""  # the run read again for the approve dialog
        self.errors: dict[str, str] = {}
        self.outcomes: dict[str, list[str]] = {}  # what the last decision in this app did, by run
        self.last_failure: tuple[str, str] | None = None
        self.refreshed = ""
        self.first_page_shown = False
        self.clock_error = ""
        self.page_error: tuple[str, float] = ("", 0.0)  # the last page load's failure and when it was told
        self._render_due = False  # a render of the pane is queued behind the keys already sent

    def set_interval(
        self,
        interval: float,
        callback: TimerCallback | None = None,
        *,
        name: str | None = None,
        repeat: int = 0,
        pause: bool = False,
    ) -> Timer:
        """Textual's ``set_interval``, but the screen's timer of frames is a
        :class:`~resolver_tui.frames.FrameClock`: after a quiet moment the next frame comes at
        the next tick due, not the one after (before, a key's detail was painted
        17 to 33 ms after its cursor)."""
        if name != SCREEN_UPDATE:
            return super().set_interval(interval, callback, name=name, repeat=repeat, pause=pause)
        timer = FrameClock(self, interval, name=name, callback=callback, repeat=repeat or None, pause=pause)
        timer._start()
        self._timers.add(timer)
        return timer

    # -- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        yield FilterBar(id="filters")
        yield Static(id="marked")  # how many runs you may decide a mark keeps from this filter
        back, read = key_for("back"), key_for("read")
        yield Input(  # never selects on focus: keys typed with the / would replace each other (a trial)
            placeholder=f"filter: ticket, order, customer or run ID ({read} applies, {back} clears)",
            id="search",
            select_on_focus=False,
        )
        yield Static(id="empty")
        table = RunTable(id="runs")
        table.keys = {"back": back, "read": read}
        yield table
        pane = DetailPane(id="detail", classes="panel")
        pane.hint = f"{key_for(CURSOR_DOWN)}/{key_for(CURSOR_UP)} scroll · {back}: back to the queue"
        yield pane
        yield Footer()

    def on_resize(self) -> None:
        self._show_bars()  # the bars say less on a narrow terminal

    def on_mount(self) -> None:
        self._show_bars()
        self.reload()
        if self.refresh_interval:
            self.set_interval(self.refresh_interval, self.refresh_on_timer)
        if self.live is not None:
            self.live.start(lambda changes: self.post_message(QueueChanged(changes)), lambda s: self.post_message(LiveState(s)))

    def on_unmount(self) -> None:
        """The app exits: the listener's thread stops (within a fraction of a second)."""
        if self.live is not None:
            self.live.stop()

    def on_screen_resume(self) -> None:
        """A dialog or a screen of lines closed: the focus returns to the queue."""
        self.remove_class("-covered")
        if self.table.display:
            self.set_focus(self.table)
        self._live_refresh()

    # -- the live queue (a team store) ----------------------------------------------------------

    @on(QueueChanged)
    def queue_changed(self, message: QueueChanged) -> None:
        self.live_heard += 1
        self.live_due = True
        self._live_refresh()

    @on(LiveState)
    def live_state_changed(self, message: LiveState) -> None:
        self.live_state = message.state
        self._show_bars()
        if message.state == "lost":
            self.notify(LOST, severity="warning", markup=False, timeout=10)
        else:
            self.notify(RECONNECTED, markup=False, timeout=10)
            self.live_due = True
            self._live_refresh()

    def _live_refresh(self) -> None:
        """Read the queue again for the changes heard, unless a dialog is open, an action runs or
        a load is in flight (then when that ends: the changes heard meanwhile make one read)."""
        ready = self.is_mounted and self.app.screen is self and not self.busy and not self.opening
        if self.live_due and ready and not self.page_in_flight():
            self.live_due = False
            self.reload()

    def on_screen_suspend(self) -> None:
        """A dialog or a screen of lines opened over the queue: under 100 columns its toasts are
        hidden (``app.tcss``), so none shows through over the dialog."""
        self.add_class("-covered")

    @property
    def table(self) -> RunTable:
        """The runs table (its row under the cursor is the highlighted run)."""
        return self.query_one(RunTable)

    @property
    def pane(self) -> DetailPane:
        """The detail pane (it shows the highlighted run)."""
        return self.query_one(DetailPane)

    @property
    def summaries(self) -> dict:
        """The summaries of the loaded rows, by run ID (the palette lists them)."""
        return self.table.summaries

    @property
    def status(self) -> str | None:
        """The status filter shown (None: every status; ``mine``: the waiting runs I may approve)."""
        return FILTERS[self.filter_index][0]

    @property
    def unlocked(self) -> Unlocked | None:
        """The shop-home approver's key once unlocked in this session, else None."""
        return self.decisions.unlocked

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

    def _show_bars(self) -> None:
        """Who is at the keyboard, the simulated clock, the filters with their counts and the time
        of the last read (on a team store: ``, live``, or ``, live updates lost`` while the
        listener reconnects), and the table's title (the filter by text and the sort)."""
        self.query_one(TopBar).show(
            self.approver.name, self.approver.role, self.simulated_now(), self.home.kind, self.home.runs_live_at
        )
        live = ""  # a team store: whether changes arrive as they are made
        if self.live is not None:
            live = "live updates lost" if self.live_state == "lost" else "live"
        self.query_one(FilterBar).show(self.filter_index, self.counts, self.refreshed, aside=self.aside, live=live)
        self.table.caption(self.search, self.following, dict(SORTS).get(self.sort, "") if self.sort else "")

    # -- workers --------------------------------------------------------------------------------

    def _in_thread(self, group: str, work: Callable[[], Message], exclusive: bool = True) -> Worker:
        """Run ``work`` (a :class:`Decisions` call) in a thread worker and post its message."""

        def run() -> None:
            self.post_message(work())

        return self.run_worker(run, name=group, group=group, thread=True, exclusive=exclusive, exit_on_error=False)

    def load_page(
        self, status: str | None, search: str | None, after: str | None, select: str | None = None, rows: int = 0
    ) -> None:
        """Read a page (``after`` None: the first) in the screen's ``sort`` and the counts. A
        newer first page supersedes every load before it, a next page included (which then never
        lands, so the next page is read again after it: a trial's filter key pressed while the
        next page was read left no further page ever read); a next page continues the first page
        the table shows (see :meth:`_load_more`)."""
        self.page_serial += 1
        if after is None:
            self.first_serial = self.page_serial
            self.loading_more = False
            self._keep_selection = False
        else:
            self.more_serial = self.page_serial
        work = partial(self.decisions.page, status, search, after, select, self.page_serial, self.sort, rows)
        self._page_worker = self._in_thread("page", work, exclusive=False)

    def page_in_flight(self) -> bool:
        """True while a page load has not reported yet (the timer waits for it)."""
        worker = self._page_worker
        return worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    def load_detail(self, run_id: str) -> None:
        """Read the detail of ``run_id`` (a waiting run's lookups run again)."""
        self._in_thread("detail", partial(self.decisions.detail, run_id))

    def load_history(self, kind: str, key: str) -> None:
        """History: ``run``, ``name`` or ``changes`` (see :meth:`Decisions.history`)."""
        self._in_thread("view", partial(self.decisions.history, kind, key))

    # -- the queue ------------------------------------------------------------------------------

    def reload(self, select: str | None = None) -> None:
        """Load the first page again (keeping the selection, or moving it to ``select``). Kept
        means the selection as it is when the page lands: a timer refresh asked for before the
        approver moved the cursor never moves it back (a refresh every 0.1 s did, under load).
        It reads the rows loaded down to a page below the cursor (a filter's table, emptied
        first, reads one page): a refresh that read one page dropped the rows past it and moved
        the cursor to another run, every 2 s on a home folder, so nobody reading past row 50
        stayed there (a trial). Rows further below are read again as the cursor nears them, so a
        refresh costs what the cursor's depth does, not every row ever loaded. The rows the
        wheel scrolled into view count as the cursor does (a trial: a reader who scrolled with the
        wheel was thrown back to the top at each refresh)."""
        _top, bottom = self.table.rows_in_view()
        rows = min(self.table.row_count, max(self.table.cursor_row + 1, bottom) + PAGE_ROWS)
        self.load_page(self.status, self.search, None, select or self.selected_id, rows=rows)
        self._keep_selection = select is None

    def refresh_on_timer(self) -> None:
        """The timer: refresh unless a dialog is open, an action runs or a load is in flight."""
        if self.app.screen is self and not self.busy and not self.opening and not self.page_in_flight():
            self.reload()

    def _refilter(self) -> None:
        self._show_bars()
        self.table.forget()
        self.reload()

    @on(PageLoaded)
    def page_loaded(self, message: PageLoaded) -> None:
        page = message.page
        first = page.after is None
        current = message.serial == self.first_serial if first else self.loading_more and message.serial == self.more_serial
        if not current or page.status != self.status or page.search != self.search:
            return  # an older load, or a filter no longer shown
        self.page_error = ("", 0.0)
        self.counts = message.counts
        self.aside = message.aside
        self._show_marked(message.away)
        self.refreshed = page.now.strftime("%H:%M:%S")
        self.empty = not sum(message.counts.values())
        self._show_bars()
        self._show_empty()
        if first:
            self.first_landed = message.serial
            keep = self.table.current if self._keep_selection else None  # the cursor as it is now
            self.table.replace(page, keep or message.select)
        else:
            self.loading_more = False
            self.table.append_soon(page)
        self.next_page = page.next
        self.first_page_shown = True
        self._sync_selection(reread=first)
        if self.table.end_in_sight():  # the cursor or the view at the end already: no move will ask
            self._load_more()
        if self.load_demo_if_empty and first:  # --demo is looked at once, on the first page
            self.load_demo_if_empty = False
            if self.empty:
                self.action_load_demo()
            else:  # never in silence: the person asked for the demo and sees their own runs
                self.notify(demo_not_loaded(self.home, sum(message.counts.values())), markup=False, timeout=DEMO_TOAST_S)

    def _show_marked(self, line: str | None) -> None:
        """Show under the filters ``line`` (:meth:`core.engine.marks.MarkedAway.line`: how many waiting
        runs this approver may decide are set aside or claimed by someone else), or hide it: a
        mark never takes a run out of the queue of those who may decide it without saying so."""
        marked = self.query_one("#marked", Static)
        marked.display = bool(line)
        marked.update(plain(line or ""))

    def _show_empty(self) -> None:
        empty = self.query_one("#empty", Static)
        table_shown = not (self.empty and not self.search)
        empty.display = not table_shown
        self.table.display = table_shown
        self.pane.display = table_shown
        if not table_shown:
            empty.update(
                plain(empty_text(where_runs_are(self.home), self.home.kind, self.load_demo_if_empty or self.busy == "demo"))
            )

    def _sync_selection(self, reread: bool = False) -> None:
        """Show the highlighted run; with ``reread`` (a refresh) read its detail again even when
        its checkpoint did not change, so what changed in the world since is current."""
        run_id = self.table.current
        self.selected_id = run_id
        if run_id is None:
            self.detail = None
            self._show_detail()
            return
        s = self.table.summaries.get(run_id)
        d = self.detail
        if reread or d is None or d.run_id != run_id or s is None or (s.version, s.status) != (d.version, d.status):
            self.load_detail(run_id)

    @on(RunTable.RunHighlighted)
    def run_highlighted(self, event: RunTable.RunHighlighted) -> None:
        if not (event.run_id == self.selected_id and self.detail and self.detail.run_id == event.run_id):
            self.selected_id = event.run_id
            self.load_detail(event.run_id)
        elif self.pane.shown_run != event.run_id:  # back on the run read last, whose render was passed over
            self._show_detail_soon()
        if event.at_end:
            self._load_more()

    @on(RunTable.EndInSight)
    def end_in_sight(self) -> None:
        """The table was scrolled near its last loaded row (the wheel, the scrollbar): the
        next page, as for the cursor."""
        self._load_more()

    def _load_more(self) -> None:
        """Read the page after the last loaded one, unless there is none, it is being read, or a
        first page is being read (a refresh, a filter: the rows shown are about to be replaced,
        and a next page read after them would take the refresh's place; a trial's deleted run
        stayed listed). A page that lands with the cursor or the view near the end, and a
        ``j`` or ``G`` on the last row, read the next page too: a refresh that landed with the
        cursor on the last row left the table at 50 rows for good, as no key moved the cursor
        to ask again (a trial)."""
        if self.next_page and not self.loading_more and self.first_landed == self.first_serial:
            self.loading_more = True
            self.load_page(self.status, self.search, self.next_page)

    @on(RunTable.RowSelected)
    def row_selected(self) -> None:
        self.action_read()

    # -- the detail and what is offered ---------------------------------------------------------

    @on(DetailLoaded)  # and OperationDone, its subclass: the executor's progress
    def detail_loaded(self, message: DetailLoaded) -> None:
        self._take(message.detail)

    def _take(self, detail: RunDetail) -> bool:
        """Show ``detail`` when it is of the highlighted run and not older than the one shown."""
        if detail.run_id != self.selected_id or is_stale(detail, self.detail):
            return False  # another run, or read before the detail shown: a slow read never overwrites a newer one
        self.detail = detail
        if detail.error and detail.status is not None:
            self.table.mark_corrupt(detail.run_id)
        self._update_offered()
        self._show_detail_soon()
        return True

    def _show_detail_soon(self) -> None:
        """Render the pane after the messages already queued: a key sent
        while a detail was read moves the cursor first, and a detail whose run is no longer under
        the cursor is never rendered (its successor's is), so a render never delays the next key
        and the pane never shows a run the cursor left. One render is queued at a time."""
        if not self._render_due:
            self._render_due = True
            self.call_later(self._render_detail)

    def _render_detail(self) -> None:
        self._render_due = False
        d = self.detail
        if d is not None and self.table.current not in (None, d.run_id):
            return  # the cursor moved on: the detail of the run under it renders when it comes
        self._show_detail()

    def why_not(self, action: str) -> str | None:
        """Why ``action`` is not offered on the highlighted run now, or None when it is: the
        screen's own reasons (nothing highlighted, busy, its detail not shown yet), else the
        rulebook's. The highlighted run is the table's row under the cursor now, so a key typed
        right after a move waits for that run's detail instead of acting on the one before."""
        if action == "load_demo":
            if self.home.kind == "shop":
                return "The Larkfield demo queue loads only in a practice home; this is a shop home."
            return None if self.empty else "The home already has saved runs."
        run_id = self.table.current if self.is_mounted else self.selected_id
        d = self.detail
        if run_id is None:
            return "No run is highlighted."
        if self.busy:
            return f"Wait: an action on run {self.busy} is in progress."
        if self.opening:
            return f"Wait: run {self.opening} is being read again for its dialog."
        if d is None or d.run_id != run_id:
            return "The run is still loading."
        return d.offers.get(action)  # type: ignore[call-overload]

    def _update_offered(self) -> None:
        self.offered = tuple(self.why_not(a) is None for a in OFFERED)

    def watch_busy(self) -> None:
        self._update_offered()
        if self.is_mounted:
            self._show_detail()
            self._live_refresh()

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
        self.pane.show(d, empty=self.table.row_count == 0, failure=failure, why_not=why, outcome=outcome, keys=self.key_labels)

    # -- keys -----------------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """A dimmed key of the rulebook's actions says why it is not offered (the binding does
        not run: :meth:`check_action` refused it)."""
        key = next((k for k in rule_keys().values() if k.key == event.key), None)
        if key is None or isinstance(self.focused, Input):
            return
        why = self.why_not(key.action)
        if why:
            event.stop()
            self.notify(f"{key.shown}: {key.name} is not offered: {why}", severity="warning", markup=False)

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

    def action_mine(self) -> None:
        """Show only the waiting runs whose role needed is within mine (``m`` again: back to
        every waiting run)."""
        mine = [status for status, _ in FILTERS].index(MINE)
        self.action_status(0 if self.filter_index == mine else mine)

    def action_refresh(self) -> None:
        self.reload()
        if self.selected_id:
            self.load_detail(self.selected_id)

    def action_filter(self) -> None:
        """Open the filter box and focus it at once (not at the next idle moment), so the keys
        typed right after ``/`` in the same burst go into it."""
        box = self.query_one("#search", Input)
        box.display = True
        box.value = self.search or ""
        self.set_focus(box)

    @on(Input.Submitted, "#search")
    def search_submitted(self, event: Input.Submitted) -> None:
        self.set_search(event.value.strip() or None)
        event.input.display = False
        self.set_focus(self.table)

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
        self.set_focus(self.table)

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

    def action_read(self) -> None:
        """Move the focus to the detail pane (``enter``): ``j`` and ``k`` scroll it."""
        if self.pane.display:
            self.set_focus(self.pane)

    def action_back(self) -> None:
        """Esc: back to the queue from the pane or the filter box, else clear the filter. Whose
        the focus is, here and in :meth:`action_cursor`, is the screen's ``focused``, set when the
        focus moves; a widget's ``has_focus`` follows only once its focus event is handled, after
        keys typed in the same read (a trial's ``enter j j j j`` moved the table's cursor)."""
        box = self.query_one("#search", Input)
        if self.focused is box or box.display:
            had_focus = self.focused is box
            box.display = False
            self.set_focus(self.table)
            if had_focus:
                return
        if self.focused is not self.table:
            self.set_focus(self.table)
        elif self.search:
            self.set_search(None)

    def action_cursor(self, where: str) -> None:
        pane = self.pane
        if self.focused is pane:  # the pane has the focus (enter): j and k scroll it
            {"down": pane.scroll_down, "up": pane.scroll_up, "top": pane.scroll_home, "bottom": pane.scroll_end}[where](
                animate=False
            )
            return
        self.table.move(where)
        self.set_focus(self.table)
        if where in ("down", "bottom") and self.table.end_in_sight():
            self._load_more()  # on the last row the cursor does not move, so no highlight asks (a trial)

    def action_sort(self, sort: str | None = "") -> None:
        """Sort the queue by ``sort`` (a store sort name; "": the next of :data:`SORTS`); the
        table's title says which."""
        names = [name for name, _ in SORTS]
        if sort == "":
            sort = names[(names.index(self.sort) + 1) % len(names)] if self.sort in names else names[1]
        self.sort = sort
        self._refilter()

    @on(RunTable.HeaderSelected)
    def header_selected(self, event: RunTable.HeaderSelected) -> None:
        sort = HEADER_SORTS.get(str(event.column_key.value))
        if sort is not None:
            self.action_sort(sort)

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

    def action_load_demo(self) -> None:
        self.busy = "demo"
        self._show_empty()  # says it is loading the demo queue (no toast over the screen)
        self._in_thread("action", self.decisions.demo)

    # -- decisions ------------------------------------------------------------------------------

    def _start(self, run_id: str) -> None:
        self.busy = run_id
        self.errors.pop(run_id, None)

    def _markable(self, action: str, word: str) -> RunDetail | None:
        """The highlighted run's detail when ``action`` (``claim``, ``handover``, ``snooze``; the
        key named from :data:`~resolver_tui.keys.KEYS`) may mark it now, else None: only a
        waiting run is marked, by an approver whose role may decide it (the rulebook's
        :attr:`~core.api.views.RunDetail.mark_offers`; a notice says why not). In a shop home a mark is signed: while the key
        is locked the passphrase dialog opens first, and the action goes on once it is unlocked
        (:meth:`key_unlocked`)."""
        d = self.detail
        run_id = self.table.current
        if run_id is None or d is None or d.run_id != run_id or self.busy or self.opening:
            return None
        if d.status != "waiting_approval":
            self.notify(f"{key_for(action)}: only a waiting run is {word}; {run_id} is {d.status}.", markup=False)
            return None
        why = None if action == "claim" and d.my_claim else d.mark_offers.get(action)  # releasing one's claim needs no role
        if why:  # the rulebook's sentence, as the command line's (before any passphrase)
            noun = {"claim": "claim", "handover": "hand-over", "snooze": "snooze"}[action]
            self.notify(f"{key_for(action)}: {noun} is not offered: {why}", severity="warning", markup=False)
            return None
        if self.home.kind == "shop" and self.unlocked is None:
            self._unlock_for(run_id, action)
            return None
        return d

    def _unlock_for(self, run_id: str, action: str) -> None:
        """Ask the passphrase (the approve dialog's box), unlock the key in a thread, then go on
        with ``action`` (:class:`KeyUnlocked`); a wrong passphrase is core's sentence."""
        noun = {"claim": "claim", "handover": "hand-over", "snooze": "snooze"}[action]

        def typed(passphrase: str | None) -> None:
            self.set_focus(self.table)
            if passphrase:
                self._start(run_id)
                self._in_thread("action", partial(self.decisions.unlock, run_id, action, passphrase))

        body = [f"A {noun} is signed with your key. Unlock it for this session (as your first approve does), then go on."]
        screen = PassphraseApproveScreen(f"Unlock your key: {noun} run {run_id}", body, self.approver.name, yes="Unlock")
        self.app.push_screen(screen, typed)

    @on(KeyUnlocked)
    def key_unlocked(self, message: KeyUnlocked) -> None:
        """The key is unlocked: the mark goes on, on the run the cursor is on if it is still the
        one the passphrase was asked for (else the next press of the key does it)."""
        self.busy = ""
        self.set_focus(self.table)
        if self.table.current == message.run_id:
            {"claim": self.action_claim, "handover": self.action_handover, "snooze": self.action_snooze}[message.action]()

    def action_claim(self) -> None:
        """Claim the highlighted waiting run, or release this approver's claim on it.
        In a shop home the claim is signed: the key must be unlocked in this session."""
        d = self._markable("claim", "claimed")
        if d is not None:
            self._start(d.run_id)
            self._in_thread("action", partial(self.decisions.claim, d.run_id, d.my_claim))

    def _mark_dialog(self, d: RunDetail, kind: str, title: str, fields: list[tuple[str, str, str]], yes: str) -> None:
        """Open the hand-over or snooze dialog on run ``d``; its answer is written in a thread
        (:meth:`Decisions.mark`), core's refusal shown as a notice (nothing written)."""
        run_id = d.run_id

        def answered(values: dict[str, str] | None) -> None:
            self.set_focus(self.table)
            if values is not None:
                self._start(run_id)
                self._in_thread("action", partial(self.decisions.mark, run_id, kind, **values))

        body = [line for line in (d.claim,) if line]
        self.app.push_screen(MarkScreen(title, body, fields, yes), answered)

    def action_handover(self) -> None:
        """Hand the highlighted waiting run over to a colleague with a one-line note."""
        d = self._markable("handover", "handed over")
        if d is not None:
            fields = [("to", "To (the colleague's name):", "name"), ("note", "Note (one line, required):", "note")]
            self._mark_dialog(d, "handover", f"Hand run {d.run_id} over", fields, "Hand over")

    def action_snooze(self) -> None:
        """Set the highlighted waiting run aside until a time."""
        d = self._markable("snooze", "snoozed")
        if d is not None:
            fields = [("until", "Until (ISO 8601, 2026-10-12T15:00, or a duration from now: 90m, 2h):", "90m")]
            self._mark_dialog(d, "snooze", f"Snooze run {d.run_id}", fields, "Snooze")

    def action_approve(self) -> None:
        """Read the highlighted run again (its lookups run again, no model call), then open the
        approve dialog on what that read returned (:meth:`dialog_ready`)."""
        run_id = self.table.current
        if run_id is None or self.why_not("approve"):
            return
        self.opening = run_id
        self._update_offered()
        self._in_thread("dialog", partial(self.decisions.dialog, run_id, "approve"))

    @on(DialogReady)
    def dialog_ready(self, message: DialogReady) -> None:
        self.opening = ""
        self._update_offered()
        self.call_after_refresh(self._live_refresh)  # changes heard while the run was read (a dialog waits for them)
        if message.detail.run_id != self.table.current or not self._take(message.detail):
            return  # the cursor moved while the run was read: nothing opens
        why = self.why_not("approve")
        decision = message.detail.decision
        if why or decision is None:
            self.notify(
                f"{key_for('approve')}: approve is not offered: {why or 'nothing to decide'}", severity="warning", markup=False
            )
            return
        body = approve_dialog(decision, self.approver)
        if message.detail.claim:  # a colleague is on it; the dialog (default No) says so first
            body = [message.detail.claim, "", *body]
        title = f"Approve run {decision.run_id}?"
        others = message.detail.others

        def answered(yes: bool | None) -> None:
            self.set_focus(self.table)
            if yes:
                self._approve(decision.run_id, decision.digest, decision.version, others, decision.seen)

        def typed(passphrase: str | None) -> None:
            self.set_focus(self.table)
            if passphrase:
                self._approve(decision.run_id, decision.digest, decision.version, others, decision.seen, passphrase)

        seal = decision_seal(decision, self.approver)
        if self.home.kind == "shop" and self.unlocked is None:  # the key is unlocked once per session
            self.app.push_screen(PassphraseApproveScreen(title, body, self.approver.name, seal), typed)
        else:
            self.app.push_screen(ConfirmScreen(title, body, yes="Approve", seal=seal), answered)

    def _approve(
        self, run_id: str, digest: str, version: int, others: list[str], seen: WorldSeen | None, passphrase: str | None = None
    ) -> None:
        """Approve what the dialog showed (``digest`` at ``version``, the world as ``seen``), then
        execute, in the action worker."""
        self._start(run_id)
        work = partial(self.decisions.approve, run_id, digest, version, others, seen, self.post_message, passphrase)
        self._in_thread("action", work)

    def action_reject(self) -> None:
        d = self.detail
        if d is None or d.decision is None or self.why_not("reject"):
            return
        decision = d.decision

        def answered(reason: str | None) -> None:
            self.set_focus(self.table)
            if reason:
                self._start(decision.run_id)
                self._in_thread("action", partial(self.decisions.reject, decision.run_id, decision.digest, reason, d.others))

        body = reject_dialog(decision, self.approver)
        if d.claim:  # a colleague is on it
            body = [d.claim, "", *body]
        self.app.push_screen(RejectScreen(f"Reject run {decision.run_id}?", body), answered)

    def action_resume(self) -> None:
        d = self.detail
        if d is None or self.why_not("resume"):
            return
        if d.status == "waiting_approval":  # the focus stays on the queue
            self.notify(f"Run {d.run_id} is waiting approval: its request is in the pane.", markup=False)
            return
        self._start(d.run_id)
        self._in_thread("action", partial(self.decisions.resume, d.run_id, d.others, self.post_message))

    @on(ChangesFound)
    def changes_found(self, message: ChangesFound) -> None:
        """A running loop's resume was refused for what changed since it started: show core's
        sentence (a notice and in the pane), then offer accepting the changes for this run only
        in a dialog naming them (No is the default); Yes resumes it with ``accept_changes``."""
        self.busy = ""
        self.set_focus(self.table)
        run_id, others = message.run_id, message.others
        self.notify(clean(message.text), severity="warning", markup=False, timeout=10)
        self.errors[run_id] = message.text
        self._show_detail()
        body = [
            message.text,
            "",
            "What changed since its loop started:",
            *(f"  {line}" for line in message.changes),
            "",
            "Accept them for this run only and continue its loop from the checkpoint under the new ones?",
        ]

        def answered(yes: bool | None) -> None:
            self.set_focus(self.table)
            if yes:
                self._start(run_id)
                self._in_thread("action", partial(self.decisions.resume, run_id, others, self.post_message, True))

        self.app.push_screen(ConfirmScreen(f"Resume run {run_id} under the new rules?", body, yes="Accept and resume"), answered)

    def action_trace(self) -> None:
        if self.selected_id and not self.why_not("trace"):
            self._in_thread("view", partial(self.decisions.trace, self.selected_id))

    def action_compare(self) -> None:
        d = self.detail
        if d is None or self.why_not("compare"):
            return
        if len(d.others) == 1:
            self._in_thread("view", partial(self.decisions.compare, d.run_id, d.others[0]))
            return
        run_id = d.run_id

        def picked(other: str | None) -> None:
            self.set_focus(self.table)
            if other:
                self._in_thread("view", partial(self.decisions.compare, run_id, other))

        # More than two runs of the ticket: choose which one (the latest is not always the one).
        self.app.push_screen(PickRunScreen(f"Compare {run_id} with which other run of its ticket?", d.others), picked)

    # -- what the workers report ----------------------------------------------------------------

    @on(Finished)
    def show_finished(self, message: Finished) -> None:
        self.busy = ""
        self.last_failure = None
        self.set_focus(self.table)
        if message.run_id:
            self.outcomes[message.run_id] = list(message.lines)  # stays in the pane, not only a toast
        detail = message.detail
        handed = detail is not None and detail.status == "handed_to_person"
        if message.run_id:  # the demo queue shows itself; a toast would only cover the screen
            self.notify(
                clean("\n".join(message.lines)), markup=False, severity="warning" if handed else "information", timeout=10
            )
        if detail is not None and self.detail is not None and self.detail.run_id == message.run_id:
            self.detail = detail
            self._show_detail()
        if detail is not None and message.run_id and (self.status not in (None, detail.status) or message.set_aside):
            # The run left this filter (a snoozed run leaves the waiting ones): follow it, so its
            # outcome stays in the pane.
            self.show_only(message.run_id)
            self.notify(
                f"Showing {message.run_id} under all statuses; press {key_for('status(0)')} for the waiting queue.",
                markup=False,
            )
            return
        self.action_refresh()

    @on(Failed)
    def show_failed(self, message: Failed) -> None:
        self.busy = ""
        self.opening = ""
        self.set_focus(self.table)
        self.notify(clean(message.text), severity="error", markup=False, timeout=10)
        if message.run_id:
            self.errors[message.run_id] = "\n".join([message.text, *message.lines])  # the world as it is now, first
            self.last_failure = (message.run_id, message.text)
            self._show_detail()
            # The run may have left this filter (another approver won the race): keep the cursor
            # on it, so the pane names the winner instead of offering the next run.
            self.show_only(message.run_id)
            return
        self._show_detail()
        self.action_refresh()

    @on(LinesReady)
    def show_lines(self, message: LinesReady) -> None:
        screen = {"trace": TraceScreen, "history": HistoryScreen}.get(message.kind, CompareScreen)
        self.app.push_screen(screen(message.title, message.lines, id=message.kind))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one handler for worker errors: every one becomes a visible sentence, never a crash.
        A page load that ended lets the changes heard meanwhile be read (the live queue)."""
        if event.worker.group == "page" and event.state in (WorkerState.SUCCESS, WorkerState.ERROR):
            self._live_refresh()
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.busy = ""
            self.opening = ""
            self.loading_more = False
            self.log.error(f"worker {event.worker.name} failed", error)
            text = str(error) if isinstance(error, ResolverError) else unexpected_sentence(event.worker.group)
            if event.worker.group == "page":  # the timer reads again every few seconds: one toast of a sentence at a time
                if self.page_error[0] == text and time.monotonic() - self.page_error[1] < ERROR_TOAST_S:
                    return
                self.page_error = (text, time.monotonic())
            self.notify(clean(text), severity="error", markup=False, timeout=ERROR_TOAST_S)
