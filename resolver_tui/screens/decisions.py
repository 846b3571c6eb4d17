"""The decisions of the queue screen: the approve and reject dialogs, resume, trace and compare,
and the handlers that show what the workers report (one of them for every worker error).

What a dialog repeats comes from :mod:`core.views` (:func:`~core.views.approve_dialog`,
:func:`~core.views.reject_dialog`); it captures the run, digest and checkpoint version read, so
a refresh cannot change what is decided.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import ResolverError
from core.views import RunDetail, approve_dialog, reject_dialog
from textual import on
from textual.worker import Worker, WorkerState

from resolver_tui.messages import Failed, Finished, LinesReady
from resolver_tui.screens.dialogs import ConfirmScreen, PassphraseApproveScreen, PickRunScreen, RejectScreen
from resolver_tui.screens.text import CompareScreen, HistoryScreen, TraceScreen
from resolver_tui.screens.workers import QueueWorkers
from resolver_tui.widgets.detail_pane import DetailPane
from resolver_tui.widgets.safe import clean

WORKER_WORDS = {
    "page": "reading the queue",
    "detail": "reading the run",
    "view": "reading the trace",
    "action": "carrying out the decision",
}
"""What each worker group was doing, for the sentence shown when it fails unexpectedly."""


def unexpected_sentence(group: str) -> str:
    """The sentence shown for an unexpected error in a worker of ``group``: what failed and what
    to do, never the exception's own text (it goes to the log)."""
    doing = WORKER_WORDS.get(group, "working")
    return (
        f"Something went wrong while {doing}; nothing was lost. Press R to read the queue again, "
        "or run `resolver show RUN` in a shell."
    )


class QueueDecisions(QueueWorkers):
    """The keys that act on the highlighted run, for :class:`~resolver_tui.screens.queue.QueueScreen`
    (which provides ``detail``, ``why_not``, ``busy``, the filters and the refresh)."""

    detail: RunDetail | None
    busy: str
    errors: dict[str, str]
    outcomes: dict[str, list[str]]
    last_failure: tuple[str, str] | None
    loading_more: bool
    selected_id: str | None

    if TYPE_CHECKING:  # provided by QueueScreen

        @property
        def status(self) -> str | None: ...
        def why_not(self, action: str) -> str | None: ...
        def _show_detail(self) -> None: ...
        def show_only(self, run_id: str) -> None: ...
        def action_refresh(self) -> None: ...

    def _start(self, run_id: str) -> None:
        self.busy = run_id
        self.errors.pop(run_id, None)

    def action_approve(self) -> None:
        d = self.detail
        if d is None or d.decision is None or self.why_not("approve"):
            return
        decision = d.decision

        def answered(yes: bool | None) -> None:
            if yes:
                self._start(decision.run_id)
                self.run_approve(decision.run_id, decision.digest, decision.version, d.others)

        if self.home.kind == "shop" and self.unlocked is None:  # issue 14: the key is unlocked once per session

            def typed(passphrase: str | None) -> None:
                if passphrase:
                    self._start(decision.run_id)
                    self.run_approve(decision.run_id, decision.digest, decision.version, d.others, passphrase)

            self.app.push_screen(
                PassphraseApproveScreen(
                    f"Approve run {decision.run_id}?", approve_dialog(decision, self.approver), self.approver.name
                ),
                typed,
            )
            return
        self.app.push_screen(
            ConfirmScreen(f"Approve run {decision.run_id}?", approve_dialog(decision, self.approver), yes="Approve"), answered
        )

    def action_reject(self) -> None:
        d = self.detail
        if d is None or d.decision is None or self.why_not("reject"):
            return
        decision = d.decision

        def answered(reason: str | None) -> None:
            if reason:
                self._start(decision.run_id)
                self.run_reject(decision.run_id, decision.digest, reason, d.others)

        self.app.push_screen(RejectScreen(f"Reject run {decision.run_id}?", reject_dialog(decision, self.approver)), answered)

    def action_resume(self) -> None:
        d = self.detail
        if d is None or self.why_not("resume"):
            return
        if d.status == "waiting_approval":
            self.query_one(DetailPane).focus()
            self.notify(f"Run {d.run_id} is waiting approval: its request is in the pane.", markup=False)
            return
        self._start(d.run_id)
        self.run_resume(d.run_id, d.others)

    def action_trace(self) -> None:
        if self.selected_id and not self.why_not("trace"):
            self.load_trace(self.selected_id)

    def action_compare(self) -> None:
        d = self.detail
        if d is None or self.why_not("compare"):
            return
        if len(d.others) == 1:
            self.load_compare(d.run_id, d.others[0])
            return
        run_id = d.run_id

        def picked(other: str | None) -> None:
            if other:
                self.load_compare(run_id, other)

        # More than two runs of the ticket: choose which one (the latest is not always the one).
        self.app.push_screen(PickRunScreen(f"Compare {run_id} with which other run of its ticket?", d.others), picked)

    # -- what the workers report ----------------------------------------------------------------

    @on(Finished)
    def show_finished(self, message: Finished) -> None:
        self.busy = ""
        self.last_failure = None
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
        if detail is not None and message.run_id and self.status not in (None, detail.status):
            # The run left this filter: follow it, so its outcome stays in the pane.
            self.show_only(message.run_id)
            self.notify(f"Showing {message.run_id} under all statuses; press 1 for the waiting queue.", markup=False)
            return
        self.action_refresh()

    @on(Failed)
    def show_failed(self, message: Failed) -> None:
        self.busy = ""
        self.notify(clean(message.text), severity="error", markup=False, timeout=10)
        if message.run_id:
            self.errors[message.run_id] = message.text
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
        """The one handler for worker errors: every one becomes a visible sentence, never a crash."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.busy = ""
            self.loading_more = False
            self.log.error(f"worker {event.worker.name} failed", error)
            text = str(error) if isinstance(error, ResolverError) else unexpected_sentence(event.worker.group)
            self.notify(clean(text), severity="error", markup=False, timeout=10)
