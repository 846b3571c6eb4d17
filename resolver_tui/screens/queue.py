"""The queue screen: status filters with counts, the runs table, and the detail pane.

Every read and write goes through :class:`core.home.Home` in a thread worker that reports back
with a message from :mod:`resolver_tui.messages`; the screen only turns messages into widgets.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from core.checkpoint import PAGE_SIZE, RunSummary
from core.clock import age, parse_time
from core.demo import build_demo
from core.errors import ResolverError
from core.policy import ROLE_LABELS, may_approve, who_may_approve
from core.provider import show_usd
from core.request import approval_request, decision_lines, diff_lines, operation_lines, standing, trace_lines
from core.runner import outcome_line
from core.state import FINAL_STATUSES, action_line
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import Worker, WorkerState

from resolver_tui.messages import ActionFailed, ActionFinished, Detail, DetailLoaded, OperationDone, PageLoaded
from resolver_tui.screens.dialogs import ConfirmScreen, RejectScreen
from resolver_tui.screens.text import CompareScreen, TraceScreen
from resolver_tui.widgets.bars import FILTERS, FilterBar, TopBar
from resolver_tui.widgets.safe import cell, clean, lines, plain

if TYPE_CHECKING:
    from resolver_tui.app import ResolverApp

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
WIDTHS = {"run": 28, "customer": 14, "actions": 20}
"""Characters of the longer columns shown in the table (the pane shows them whole)."""

STATUS_LABELS = {"waiting_approval": "waiting", "handed_to_person": "handed"}
"""Short status labels for the table (the filter bar and the pane spell them out)."""

DECISIONS = ("approve", "reject", "resume", "trace", "compare")


ACTION_WORDS = {"request_refund": "refund", "reship_item": "reship", "create_return_label": "return label",
                "send_reply": "reply"}


def _action_words(summary: str) -> str:
    """``request_refund LK-507862 119.00 CAD ...; reship_item ...`` as ``refund, reship``."""
    words = [part.split()[0] for part in summary.split(";") if part.strip()]
    return ", ".join(ACTION_WORDS.get(w, w) for w in words)


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class QueueScreen(Screen):
    """The approvals queue of one home, as ``app.name`` with ``app.role``."""

    app: ResolverApp

    BINDINGS = [
        Binding("a", "approve", "Approve"),
        Binding("x", "reject", "Reject"),
        Binding("u", "resume", "Resume"),
        Binding("t", "trace", "Trace"),
        Binding("d", "compare", "Compare"),
        Binding("R", "refresh", "Refresh"),
        Binding("slash", "filter", "Filter"),
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
    detail_serial: reactive[int] = reactive(0)
    busy: reactive[str] = reactive("")
    empty: reactive[bool] = reactive(False)
    offered: reactive[tuple[bool, ...]] = reactive((), bindings=True)
    """Which of DECISIONS (and load_demo) are offered: the footer is refreshed only when this
    changes, not at every cursor move (recomposing the footer cost ~20 ms a key)."""

    def __init__(self) -> None:
        super().__init__(id="queue")
        self.filter_index = 0
        self.search: str | None = None
        self.following = False  # the one-run view the app switched to after an action
        self.counts: dict[str, int] = {}
        self.summaries: dict[str, RunSummary] = {}
        self.cells: dict[str, tuple[str, ...]] = {}
        self.has_more = False
        self.loading_more = False
        self.detail: Detail | None = None
        self.broken: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.last_failure: tuple[str, str] | None = None
        self.refreshed = ""
        self.first_page_shown = False

    # -- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        yield FilterBar(id="filters")
        yield Input(placeholder="filter: ticket, order, customer or run ID (Enter applies, Esc clears)", id="search")
        yield Static(id="empty")
        table: DataTable = DataTable(cursor_type="row", zebra_stripes=True, id="runs")
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        yield table
        with VerticalScroll(id="detail", classes="panel"):
            yield Static(id="detail-title")
            yield Static(id="detail-notice")
            yield Static(id="detail-keys")
            yield Static(id="detail-body")
        yield Footer()

    def _show_top(self) -> None:
        """Who is at the keyboard, and the clock when it is simulated (the trainer moves it)."""
        app = self.app
        now = app.clock.now() if getattr(app.clock, "simulated", False) else None
        self.query_one(TopBar).show(app.approver_name, app.role, now)

    def on_mount(self) -> None:
        app = self.app
        self._show_top()
        self.query_one("#detail", VerticalScroll).border_title = "run"
        self._show_filters()
        self.reload()
        if app.refresh_interval:
            self.set_interval(app.refresh_interval, self.auto_refresh)

    @property
    def table(self) -> DataTable:
        return self.query_one("#runs", DataTable)

    @property
    def status(self) -> str | None:
        return FILTERS[self.filter_index][0]

    def _show_filters(self) -> None:
        self.query_one(FilterBar).show(self.filter_index, self.counts, self.search, self.refreshed, self.following)

    # -- loading the queue ----------------------------------------------------------------------

    def reload(self, select: str | None = None) -> None:
        """Load the first page again (keeping the selection, or moving it to ``select``)."""
        self.load_page(self.status, self.search, 0, select or self.selected_id)

    def auto_refresh(self) -> None:
        """The timer: refresh unless a dialog is open or an action is running."""
        if self.app.screen is not self or self.busy:
            return
        self.reload()

    @work(thread=True, exclusive=True, group="page", exit_on_error=False)
    def load_page(self, status: str | None, search: str | None, offset: int, select: str | None = None,
                  after: RunSummary | None = None) -> None:
        store = self.app.home.store
        rows = store.page(status, search=search, limit=PAGE_SIZE, after=after if offset else None)
        counts = store.counts()
        self.post_message(PageLoaded(rows, counts, offset, status, search, select))

    def _row_cells(self, s: RunSummary) -> tuple[str, ...]:
        try:
            waited = age(parse_time(s.updated_at), self.app.clock.now())
        except (ValueError, TypeError):
            waited = "?"
        status = "corrupt" if (not s.state_ok or s.run_id in self.broken) else STATUS_LABELS.get(s.status, s.status)
        return (
            _short(s.run_id, WIDTHS["run"]), s.task_id, _short(s.customer or "", WIDTHS["customer"]),
            _short(_action_words(s.actions or ""), WIDTHS["actions"]), s.total_amount or "",
            ROLE_LABELS.get(s.required_role, s.required_role or ""), waited, status,
        )

    @staticmethod
    def _cell(key: str, value: str) -> object:
        if key == "status" and value == "corrupt":
            return cell(value, "bold red")
        if key == "total":
            return cell(value.rjust(9))
        return cell(value)

    @on(PageLoaded)
    def page_loaded(self, message: PageLoaded) -> None:
        if message.status != self.status or message.search != self.search:
            return  # a page of a filter no longer shown
        self.counts = message.counts
        self.refreshed = self.app.clock.now().strftime("%H:%M:%S")
        self._show_top()
        self._show_filters()
        self.empty = not sum(message.counts.values())
        self._show_empty()
        table = self.table
        if message.offset:
            if message.offset != table.row_count:
                return
            self.loading_more = False
            self._append(message.rows)
        else:
            self._replace(message.rows, message.select)
        self.has_more = len(message.rows) == PAGE_SIZE
        self.first_page_shown = True
        self._sync_selection()

    def _append(self, rows: list[RunSummary]) -> None:
        table = self.table
        with self.app.batch_update():
            for s in rows:
                if s.run_id in self.summaries:
                    continue
                self.summaries[s.run_id] = s
                cells = self.cells[s.run_id] = self._row_cells(s)
                table.add_row(*(self._cell(k, v) for (k, _), v in zip(COLUMNS, cells, strict=False)), key=s.run_id)

    def _replace(self, rows: list[RunSummary], select: str | None) -> None:
        """Refresh by diff: same rows in the same order update changed cells only; otherwise
        rebuild and put the cursor back on the same run."""
        table = self.table
        old_order = list(self.summaries)
        new_order = [s.run_id for s in rows]
        keep_row = table.cursor_row
        with self.app.batch_update():
            if old_order[: len(new_order)] == new_order and len(old_order) <= max(len(new_order), PAGE_SIZE):
                for s in rows:
                    cells = self._row_cells(s)
                    before = self.cells.get(s.run_id)
                    self.summaries[s.run_id] = s
                    if cells != before:
                        self.cells[s.run_id] = cells
                        for (key, _), value, old in zip(COLUMNS, cells, before or ("",) * len(cells), strict=False):
                            if value != old:
                                table.update_cell(s.run_id, key, self._cell(key, value), update_width=True)
                for run_id in old_order[len(new_order):]:
                    table.remove_row(run_id)
                    self.summaries.pop(run_id, None)
                    self.cells.pop(run_id, None)
            else:
                table.clear()
                self.summaries.clear()
                self.cells.clear()
                self._append(rows)
            if select and select in self.summaries:
                table.move_cursor(row=table.get_row_index(select), animate=False)
            elif table.row_count:
                table.move_cursor(row=min(keep_row, table.row_count - 1), animate=False)

    def _show_empty(self) -> None:
        empty = self.query_one("#empty", Static)
        table_shown = not (self.empty and not self.search)
        empty.display = not table_shown
        self.table.display = table_shown
        self.query_one("#detail").display = table_shown
        if not table_shown:
            empty.update(plain(
                f"No saved runs in {self.app.home.root}.\n\n"
                "Run `resolver run T-65273` in a shell to make one (the app notices it),\n"
                "or press L to load the Larkfield demo queue."
            ))

    def _sync_selection(self) -> None:
        table = self.table
        if not table.row_count:
            self.selected_id = None
            self.detail = None
            self._render_detail()
            return
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        run_id = row_key.value
        s = self.summaries.get(run_id)
        stale = (
            self.detail is None or self.detail.run_id != run_id or self.detail.summary is None or s is None
            or (s.version, s.status) != (self.detail.summary.version, self.detail.summary.status)
        )
        self.selected_id = run_id
        if stale:
            self.load_detail(run_id)

    @on(DataTable.RowHighlighted, "#runs")
    def row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        run_id = event.row_key.value if event.row_key else None
        if run_id is None or (run_id == self.selected_id and self.detail and self.detail.run_id == run_id):
            return
        self.selected_id = run_id
        self.load_detail(run_id)
        table = self.table
        if self.has_more and not self.loading_more and event.cursor_row >= table.row_count - 1:
            self.loading_more = True
            self.load_page(self.status, self.search, table.row_count, after=self.summaries[table.ordered_rows[-1].key.value])

    @on(DataTable.RowSelected, "#runs")
    def row_selected(self) -> None:
        self.query_one("#detail").focus()

    # -- the detail pane ------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_detail(self, run_id: str) -> None:
        store = self.app.home.store
        detail = Detail(run_id)
        try:
            detail.summary = store.summary(run_id)
            detail.others = [r.run_id for r in store.runs_of_task(detail.summary.task_id) if r.run_id != run_id]
            detail.state = store.load(run_id)
            if detail.state.status == "running":
                detail.trace = trace_lines(store.events(run_id))
        except ResolverError as exc:
            detail.error = str(exc)
        self.post_message(DetailLoaded(detail))

    @on(DetailLoaded)
    def detail_loaded(self, message: DetailLoaded) -> None:
        detail = message.detail
        if detail.run_id != self.selected_id:
            return
        self.detail = detail
        if detail.error and detail.summary is not None and detail.run_id not in self.broken:
            self.broken[detail.run_id] = detail.error
            if detail.run_id in self.summaries:
                self.table.update_cell(detail.run_id, "status", self._cell("status", "corrupt"))
        self.detail_serial += 1
        self._update_offered()
        self._render_detail()

    def why_not(self, action: str) -> str | None:
        """Why ``action`` is not offered on the highlighted run now, or None when it is."""
        if action == "load_demo":
            return None if self.empty else "The home already has saved runs."
        d = self.detail
        if self.selected_id is None:
            return "No run is highlighted."
        if self.busy:
            return f"Wait: an action on run {self.busy} is in progress."
        if d is None or d.run_id != self.selected_id:
            return "The run is still loading."
        if action == "trace":
            return None
        if d.error or d.state is None:
            return "Its checkpoint cannot be read, so nothing can be done with this run."
        state = d.state
        status = state.status.replace("_", " ")
        if action == "compare":
            return None if d.others else f"Ticket {state.task_id} has only this run."
        if action == "resume":
            return f"The run is {status}: there is nothing to resume." if state.status in FINAL_STATUSES else None
        if state.status != "waiting_approval" or state.proposal is None:
            return f"The run is {status}: only a run waiting approval can be {action.rstrip('e')}ed."
        if action == "approve":
            needed = d.summary.required_role if d.summary and d.summary.required_role else "agent"
            if not may_approve(self.app.role, needed):
                return f"It needs {who_may_approve(needed)}; you are {ROLE_LABELS[self.app.role]}."
        return None

    def _update_offered(self) -> None:
        self.offered = (*tuple(self.why_not(a) is None for a in DECISIONS), self.empty)

    def watch_busy(self) -> None:
        self._update_offered()

    def watch_empty(self) -> None:
        self._update_offered()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in DECISIONS or action == "load_demo":
            if action == "load_demo":
                return bool(self.empty)
            return True if self.why_not(action) is None else None
        return True

    def _render_detail(self) -> None:
        title = self.query_one("#detail-title", Static)
        notice = self.query_one("#detail-notice", Static)
        keys = self.query_one("#detail-keys", Static)
        body = self.query_one("#detail-body", Static)
        pane = self.query_one("#detail", VerticalScroll)
        notice.set_classes("")
        d = self.detail
        if d is None:
            pane.border_title = plain("run")
            title.update("")
            notice.update("")
            keys.update("")
            body.update(plain("No run here." if self.table.row_count == 0 else "Loading…"))
            return
        pane.border_title = plain(d.run_id)
        s = d.summary
        title.update(plain(f"{d.run_id}  ·  ticket {s.task_id if s else '?'}  ·  {(s.status if s else '?').replace('_', ' ')}", "bold"))
        notes: list[str] = []
        cls = ""
        if d.run_id in self.errors:
            notes.append(self.errors[d.run_id])
            cls = "error"
        elif self.last_failure and self.last_failure[0] != d.run_id:
            notes.append(f"Last action on {self.last_failure[0]} failed: {self.last_failure[1]}")
            cls = "error"
        if d.error:
            notes.append(d.error)
            notes.append("No action is allowed on this run.")
            cls = "error"
        state = d.state
        out: list[str] = []
        if state is not None:
            if state.status == "waiting_approval":
                line = standing(state, self.app.role)
                if line:
                    notes.append(line)
                    cls = cls or ("ok" if line.startswith("You are") else "warn")
                if d.others:
                    n = len(d.others) + 1
                    notes.append(f"{state.task_id} has {n} runs; press d to compare.")
                    cls = cls or "warn"
                out = [f"Outcome: {outcome_line(state)}", "", *approval_request(state)]
            elif state.status == "running":
                u = state.usage
                out = [f"Running: saved after step {state.step} of at most {state.max_steps}. Press u to continue its loop "
                       "from the checkpoint (no model call is repeated).", "",
                       f"Usage: {u.model_calls} model call(s), {u.tool_calls} tool call(s), {u.tokens_in} tokens in, "
                       f"{u.tokens_out} tokens out, {show_usd(u.cost_usd)}", "", "Trace so far:"] + (d.trace or ["  (no events)"])
            else:
                decided = decision_lines(state)
                ops = operation_lines(state)
                if state.status == "executing":
                    notes.append("Executing: approved, not finished. Press u to reconcile and finish it.")
                    cls = cls or "warn"
                out = [*decided, ""] if decided else []
                if ops:
                    out += ["Operations:"] + [f"  {x}" for x in ops] + [""]
                if state.status in FINAL_STATUSES and state.events:
                    last = state.events[-1]
                    out += [f"Last event: {last.kind}: {clean(last.message)}", ""]
                if state.proposal is not None:
                    out += [f"Outcome: {outcome_line(state)}", ""]
                out += approval_request(state)
        notice.update(lines(notes))
        if cls:
            notice.set_classes(cls)
        offered, refused = [], []
        for action, label in (("approve", "a approve"), ("reject", "x reject"), ("resume", "u resume"),
                              ("trace", "t trace"), ("compare", "d compare")):
            why = self.why_not(action)
            if why is None:
                offered.append(label)
            else:
                refused.append(f"Not offered: {label}: {why}")
        keys.update(lines([f"Keys: {', '.join(offered) or 'none'}", *refused]))
        body.update(lines(out))

    # -- keys -----------------------------------------------------------------------------------

    def try_action(self, action: str) -> None:
        """Run ``action`` if offered, else say why (the palette calls this)."""
        why = self.why_not(action) if action in DECISIONS or action == "load_demo" else None
        if why:
            self.notify(why, severity="warning", markup=False)
            return
        self.call_later(self.run_action, action)

    def action_cursor(self, where: str) -> None:
        table = self.table
        if where == "down":
            table.action_cursor_down()
        elif where == "up":
            table.action_cursor_up()
        elif where == "top":
            table.move_cursor(row=0)
        elif table.row_count:
            table.move_cursor(row=table.row_count - 1)
        table.focus()

    def action_status(self, index: int) -> None:
        if self.following:  # a status key leaves the one-run view the app switched to by itself
            self.search = None
            self.following = False
        elif index == self.filter_index:
            return
        self.filter_index = index
        self._show_filters()
        self.table.clear()
        self.summaries.clear()
        self.cells.clear()
        self.reload()

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
        self._show_filters()
        self.table.clear()
        self.summaries.clear()
        self.cells.clear()
        self.reload()

    def jump_to(self, run_id: str) -> None:
        """Show ``run_id`` in the queue, whatever its status (the palette's Jump to run)."""
        if run_id in self.summaries:
            self.table.move_cursor(row=self.table.get_row_index(run_id))
        else:
            self.show_only(run_id)
        self.table.focus()

    def unfollow(self) -> None:
        """Leave the one-run view (if the app switched to it) and reload the queue."""
        if self.following:
            self.action_status(self.filter_index)
        else:
            self.reload()

    def show_only(self, run_id: str) -> None:
        """Switch to all statuses filtered to ``run_id`` and select it. A number key (or Esc)
        leaves this view."""
        self.following = True
        self.search = run_id
        self.filter_index = len(FILTERS) - 1
        self._show_filters()
        self.table.clear()
        self.summaries.clear()
        self.cells.clear()
        self.load_page(None, run_id, 0, run_id)

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
        self.notify("Loading the Larkfield demo queue…", markup=False)
        self.run_demo()

    @work(thread=True, exclusive=True, group="action", exit_on_error=False)
    def run_demo(self) -> None:
        try:
            made = build_demo(self.app.home)
            self.post_message(ActionFinished(None, f"Loaded the demo queue: {len(made)} runs."))
        except ResolverError as exc:
            self.post_message(ActionFailed(None, str(exc)))

    def _captured(self) -> tuple[str, str, int, list[str]] | None:
        d = self.detail
        if d is None or d.state is None or d.state.proposal is None:
            return None
        state = d.state
        return state.run_id, state.proposal.digest, state.version, [action_line(a) for a in state.proposal.actions]

    def _progress(self, run_id: str):
        """The executor's ``on_progress``: post each finished operation to the pane (from a worker)."""

        def progress(state, _op) -> None:
            self.post_message(OperationDone(run_id, state.model_copy(deep=True)))

        return progress

    def _who(self) -> str:
        return f"{self.app.approver_name} ({ROLE_LABELS[self.app.role]})"

    def action_approve(self) -> None:
        captured = self._captured()
        if captured is None or self.why_not("approve"):
            return
        run_id, digest, version, actions = captured
        body = [f"Run {run_id} (ticket {self.detail.state.task_id})", "", "Actions (nothing has happened yet):"]
        body += [f"  {i}. {a}" for i, a in enumerate(actions, 1)]
        if self.detail.state.proposal.reply_draft.strip():
            body.append(f"  {len(actions) + 1}. send the reply draft to the customer")
        body += ["", f"Digest: {digest[:12]} (sha256 {digest})", f"Approving as: {self._who()}", "",
                 "Approve and execute these operations now? (default: No)"]

        def answered(yes: bool | None) -> None:
            if yes:
                self.busy = run_id
                self.errors.pop(run_id, None)
                self.run_approve(run_id, digest, version)

        self.app.push_screen(ConfirmScreen(f"Approve run {run_id}?", body, yes="Approve"), answered)

    @work(thread=True, exclusive=True, group="action", exit_on_error=False)
    def run_approve(self, run_id: str, digest: str, version: int) -> None:
        app = self.app
        try:
            state = app.home.approve(run_id, app.role, app.approver_name, digest=digest, expect_version=version,
                                     owner=app.lease_owner, on_progress=self._progress(run_id))
        except ResolverError as exc:
            self.post_message(ActionFailed(run_id, str(exc)))
            return
        head = f"Run {run_id} approved by {self._who()}: now {state.status.replace('_', ' ')}."
        self.post_message(ActionFinished(run_id, "\n".join([head, *operation_lines(state)]), state))

    def action_reject(self) -> None:
        captured = self._captured()
        if captured is None or self.why_not("reject"):
            return
        run_id, digest, _version, actions = captured
        body = [f"Run {run_id} (ticket {self.detail.state.task_id})", "", "Proposed actions (none will happen):"]
        body += [f"  {i}. {a}" for i, a in enumerate(actions, 1)]
        body += ["", f"Digest: {digest[:12]}", f"Rejecting as: {self._who()}",
                 "The run goes to a person and can never execute."]

        def answered(reason: str | None) -> None:
            if reason:
                self.busy = run_id
                self.errors.pop(run_id, None)
                self.run_reject(run_id, digest, reason)

        self.app.push_screen(RejectScreen(f"Reject run {run_id}?", body), answered)

    @work(thread=True, exclusive=True, group="action", exit_on_error=False)
    def run_reject(self, run_id: str, digest: str, reason: str) -> None:
        app = self.app
        try:
            state = app.home.reject(run_id, app.role, reason, app.approver_name, digest)
        except ResolverError as exc:
            self.post_message(ActionFailed(run_id, str(exc)))
            return
        self.post_message(ActionFinished(run_id, f"Run {run_id} rejected by {self._who()}: {reason}", state))

    def action_resume(self) -> None:
        d = self.detail
        if d is None or d.state is None or self.why_not("resume"):
            return
        if d.state.status == "waiting_approval":
            self.query_one("#detail").focus()
            self.notify(f"Run {d.run_id} is waiting approval: its request is in the pane.", markup=False)
            return
        self.busy = d.run_id
        self.errors.pop(d.run_id, None)
        self.run_resume(d.run_id)

    @work(thread=True, exclusive=True, group="action", exit_on_error=False)
    def run_resume(self, run_id: str) -> None:
        app = self.app
        try:
            resumed = app.home.resume(run_id, on_progress=self._progress(run_id), owner=app.lease_owner)
        except ResolverError as exc:
            self.post_message(ActionFailed(run_id, str(exc)))
            return
        how = {"continued": "continued its loop", "executed": "reconciled and finished", "request": "is waiting approval",
               "final": "was already final"}[resumed.kind]
        state = resumed.state
        said = [f"Run {run_id} {how}: {resumed.before.replace('_', ' ')} -> {state.status.replace('_', ' ')}."]
        said += [f"Outcome: {outcome_line(state)}"] if resumed.kind == "continued" else operation_lines(state)
        self.post_message(ActionFinished(run_id, "\n".join(said), state))

    @on(OperationDone)
    def operation_done(self, message: OperationDone) -> None:
        if self.detail is not None and self.detail.run_id == message.run_id:
            self.detail = replace(self.detail, state=message.state)
            self._render_detail()

    @on(ActionFinished)
    def action_finished(self, message: ActionFinished) -> None:
        self.busy = ""
        self.last_failure = None
        handed = message.state is not None and message.state.status == "handed_to_person"
        self.notify(message.text, markup=False, severity="warning" if handed else "information", timeout=10)
        if message.state is not None and self.detail is not None and self.detail.run_id == message.run_id:
            self.detail = replace(self.detail, state=message.state)
            self._render_detail()
        if message.state is not None and self.status not in (None, message.state.status):
            # The run left this filter: follow it, so its outcome stays in the pane.
            self.show_only(message.run_id)
            self.notify(f"Showing {message.run_id} under all statuses; press 1 for the waiting queue.", markup=False)
            return
        self.reload()
        if self.selected_id:
            self.load_detail(self.selected_id)

    @on(ActionFailed)
    def action_failed(self, message: ActionFailed) -> None:
        self.busy = ""
        self.notify(message.text, severity="error", markup=False, timeout=10)
        if message.run_id:
            self.errors[message.run_id] = message.text
            self.last_failure = (message.run_id, message.text)
        self._render_detail()
        self.reload()
        if self.selected_id:
            self.load_detail(self.selected_id)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """One handler for unexpected worker errors: shown, never a crash."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.busy = ""
            self.loading_more = False
            self.notify(clean(f"{type(error).__name__}: {error}" if not isinstance(error, ResolverError) else error),
                        severity="error", markup=False, timeout=10)

    def action_trace(self) -> None:
        if self.selected_id and not self.why_not("trace"):
            self.load_trace(self.selected_id)

    @work(thread=True, exclusive=True, group="view", exit_on_error=False)
    def load_trace(self, run_id: str) -> None:
        try:
            body = trace_lines(self.app.home.store.events(run_id))
        except ResolverError as exc:
            self.post_message(ActionFailed(run_id, str(exc)))
            return
        self.app.call_from_thread(self.app.push_screen, TraceScreen(f"Trace of {run_id}", body, id="trace"))

    def action_compare(self) -> None:
        d = self.detail
        if d is None or self.why_not("compare"):
            return
        self.load_compare(d.run_id, d.others[-1] if d.others else "")

    @work(thread=True, exclusive=True, group="view", exit_on_error=False)
    def load_compare(self, run_id: str, other: str) -> None:
        store = self.app.home.store
        try:
            a, b = store.load(run_id), store.load(other)
        except ResolverError as exc:
            self.post_message(ActionFailed(run_id, str(exc)))
            return
        first, second = sorted((a, b), key=lambda s: (s.created_at, s.run_id))
        self.app.call_from_thread(self.app.push_screen,
                                  CompareScreen(f"{first.task_id}: {first.run_id} vs {second.run_id}",
                                                diff_lines(first, second), id="compare"))
