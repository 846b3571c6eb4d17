"""The queue screen's thread workers: every read and write on the home, off the event loop.

Each worker opens its own connections (through ``home.queue`` or :class:`core.home.Home`) and
ends by posting one message of :mod:`resolver_tui.messages`; an expected error
(:class:`~core.errors.ResolverError`) becomes :class:`~resolver_tui.messages.Failed`, and any
other error reaches the screen's one worker-error handler.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from core.errors import ResolverError
from core.home import Home
from core.views import Approver, after_approve, after_reject, after_resume, changes_lines, history_lines
from textual import work
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from resolver_tui.messages import DetailLoaded, Failed, Finished, LinesReady, OperationDone, PageLoaded
from resolver_tui.widgets.bars import MINE

if TYPE_CHECKING:
    from core.approvers import Unlocked
    from core.signing import KeyHolder


class QueueWorkers(Screen):
    """The workers of :class:`~resolver_tui.screens.queue.QueueScreen`, which sets ``home``,
    ``approver`` and ``lease_owner``."""

    home: Home
    approver: Approver
    lease_owner: str
    _keys: KeyHolder | None = None

    def _key_holder(self) -> KeyHolder:
        """Issue 28: the key is forgotten after the config's ``key_idle_minutes`` without a
        decision (default 5); a config that cannot be read says so and keeps the default."""
        if self._keys is None:
            from core.approver_config import KEY_IDLE_MINUTES, key_idle_seconds
            from core.signing import KeyHolder  # cryptography is imported at the first decision, not at start

            try:
                idle = key_idle_seconds()
            except ResolverError as exc:
                idle = KEY_IDLE_MINUTES * 60.0
                self.post_message(Failed(None, str(exc)))
            self._keys = KeyHolder(idle)
        return self._keys

    @property
    def unlocked(self) -> Unlocked | None:
        """Issue 14: the shop-home approver's key, unlocked in memory at the first approval and
        kept for this session only (never written anywhere), until it was idle too long."""
        return self._key_holder().get()

    @unlocked.setter
    def unlocked(self, key: Unlocked | None) -> None:
        self._key_holder().put(key)

    page_serial: int = 0
    _page_worker: Worker | None = None

    @contextmanager
    def _failing_as(self, run_id: str | None) -> Iterator[None]:
        """Turn an expected error into a :class:`Failed` message about ``run_id``."""
        try:
            yield
        except ResolverError as exc:
            self.post_message(Failed(run_id, str(exc)))

    # -- reads ----------------------------------------------------------------------------------

    sort: str | None = None

    def load_page(self, status: str | None, search: str | None, after: str | None, select: str | None = None) -> None:
        """Read a page (``after`` None: the first) in the screen's ``sort`` and the counts; a
        newer load supersedes it (its serial is higher)."""
        self.page_serial += 1
        self._page_worker = self._load_page(status, search, after, select, self.page_serial, self.sort)

    def page_in_flight(self) -> bool:
        """True while a page load has not reported yet (the timer waits for it)."""
        worker = self._page_worker
        return worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    @work(thread=True, group="page", exit_on_error=False)
    def _load_page(
        self, status: str | None, search: str | None, after: str | None, select: str | None, serial: int, sort: str | None = None
    ) -> None:
        queue = self.home.queue
        if status == MINE:  # the waiting runs I may approve: the role needed is within mine
            page = replace(
                queue.page("waiting_approval", search=search, after=after, sort=sort, max_role=self.approver.role), status=MINE
            )
        else:
            page = queue.page(status, search=search, after=after, sort=sort)
        self.post_message(PageLoaded(page, queue.counts(), serial, select))

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_detail(self, run_id: str) -> None:
        self.post_message(DetailLoaded(self.home.queue.run(run_id, self.approver)))

    @work(thread=True, exclusive=True, group="view", exit_on_error=False)
    def load_trace(self, run_id: str) -> None:
        with self._failing_as(run_id):
            self.post_message(LinesReady("trace", f"Trace of {run_id}", self.home.queue.trace(run_id)))

    @work(thread=True, exclusive=True, group="view", exit_on_error=False)
    def load_history(self, kind: str, key: str) -> None:
        """History (issue 12): ``run`` (the decisions and refusals of run ``key``), ``name`` (those
        of approver ``key``) or ``changes`` (the practice world's changes, as ``resolver changes``)."""
        with self._failing_as(key if kind == "run" else None):
            queue = self.home.queue
            if kind == "changes":
                title, body = "The world's changes", changes_lines(queue.changes())
            elif kind == "name":
                title, body = f"Decisions and refusals of {key}", history_lines(queue.audit(name=key))
            else:
                title, body = f"History of {key}", history_lines(queue.audit(key), with_run=False)
            self.post_message(LinesReady("history", title, body))

    @work(thread=True, exclusive=True, group="view", exit_on_error=False)
    def load_compare(self, run_id: str, other: str) -> None:
        with self._failing_as(run_id):
            title, lines = self.home.queue.compare(run_id, other, oldest_first=True)
            self.post_message(LinesReady("compare", title, lines))

    # -- writes ---------------------------------------------------------------------------------

    def _progress(self, run_id: str, others: list[str]):
        """The executor's ``on_progress``: post the run after each saved operation."""
        queue, approver = self.home.queue, self.approver

        def progress(state, _op) -> None:
            self.post_message(OperationDone(queue.describe(state.model_copy(deep=True), approver, others)))

        return progress

    @work(thread=True, exclusive=True, group="action", exit_on_error=False)
    def run_demo(self) -> None:
        with self._failing_as(None):
            made = self.home.load_demo()
            self.post_message(Finished(None, [f"Loaded the demo queue: {len(made)} runs."]))

    @work(thread=True, exclusive=True, group="action", exit_on_error=False)
    def run_approve(self, run_id: str, digest: str, version: int, others: list[str], passphrase: str | None = None) -> None:
        """Approve what was read (``digest`` at checkpoint ``version``), then execute. In a shop
        home ``passphrase`` unlocks the approver's key, kept in :attr:`unlocked` for the session."""
        with self._failing_as(run_id):
            if passphrase is not None:
                self.unlocked = self.home.unlock(self.approver.name, passphrase)
            state = self.home.approve(
                run_id,
                self.approver.role,
                self.approver.name,
                digest=digest,
                expect_version=version,
                owner=self.lease_owner,
                on_progress=self._progress(run_id, others),
                signer=self.unlocked,
            )
            self.post_message(Finished(run_id, after_approve(state), self.home.queue.describe(state, self.approver, others)))

    @work(thread=True, exclusive=True, group="action", exit_on_error=False)
    def run_reject(self, run_id: str, digest: str, reason: str, others: list[str]) -> None:
        with self._failing_as(run_id):
            state = self.home.reject(run_id, self.approver.role, reason, self.approver.name, digest, signer=self.unlocked)
            self.post_message(Finished(run_id, after_reject(state), self.home.queue.describe(state, self.approver, others)))

    @work(thread=True, exclusive=True, group="action", exit_on_error=False)
    def run_resume(self, run_id: str, others: list[str]) -> None:
        with self._failing_as(run_id):
            done = self.home.resume(run_id, on_progress=self._progress(run_id, others), owner=self.lease_owner)
            self.post_message(
                Finished(
                    run_id,
                    after_resume(done.kind, done.before, done.state),
                    self.home.queue.describe(done.state, self.approver, others),
                )
            )
