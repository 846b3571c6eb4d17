"""The queue screen's reads and writes on the home, as a plain object.

:class:`Decisions` is handed the home, the approver and the lease owner; each method does one
read or write through ``home.queue`` or :class:`core.api.home.Home` and returns the one message of
:mod:`resolver_tui.messages` that reports it. It blocks, so the screen calls it in a thread
worker; it never touches a widget. An expected error (:class:`~core.ground.errors.ResolverError`)
becomes :class:`~resolver_tui.messages.Failed`; any other reaches the screen's one worker-error
handler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from core.api.home import Home
from core.api.views import (
    Approver,
    RunDetail,
    after_approve,
    after_reject,
    after_resume,
    changes_lines,
    history_lines,
    unreachable_detail,
)
from core.ground.errors import ConnectionLost, ResolverError, ResumeChanged, StoreBusy, StoreUnreachable, WorldChanged
from core.ground.safetext import one_line
from core.trainer.demo import build_demo
from textual.message import Message

from resolver_tui.keys import key_for
from resolver_tui.messages import (
    ChangesFound,
    DetailLoaded,
    DialogReady,
    Failed,
    Finished,
    KeyUnlocked,
    LinesReady,
    OperationDone,
    PageLoaded,
)
from resolver_tui.widgets.bars import FILTERS, MINE
from resolver_tui.widgets.run_table import PAGE_ROWS

if TYPE_CHECKING:
    from core.api.views import WorldSeen
    from core.engine.approvers import Unlocked
    from core.engine.marks import RunMarks
    from core.engine.signing import KeyHolder

Post = Callable[[Message], object]
"""Where a long write reports its progress (the screen's thread-safe ``post_message``)."""


def guarded(run_id: str | None, work: Callable[[], Message]) -> Message:
    """``work()``'s message, or for an expected error a :class:`Failed` message about ``run_id``
    (with the section as it is now when the world changed under an approval)."""
    try:
        return work()
    except WorldChanged as exc:
        return Failed(run_id, str(exc), list(exc.lines))
    except ResolverError as exc:
        return Failed(run_id, str(exc))


M = TypeVar("M")


def read_again(read: Callable[[], M]) -> M:
    """``read()``, made once more when a team store's connection was lost under it
    (:class:`core.ground.errors.ConnectionLost`: the pool dropped its dead connections, so the second
    read connects anew). For reads only: ``R`` after the server ended every connection reads the
    queue quietly instead of showing the dead connection's error. A second failure
    is raised with its sentence."""
    try:
        return read()
    except ConnectionLost:
        return read()


@dataclass
class Decisions:
    """The reads and writes of one approver on one home.

    Args:
        home: the home folder (writes) with its read side ``home.queue``.
        approver: who is at the keyboard (role and name).
        lease_owner: the lease owner this app executes as.
        keys: the app's key for each rulebook action, for core's sentences
            (:func:`resolver_tui.keys.core_keys`).
    """

    home: Home
    approver: Approver
    lease_owner: str
    keys: Mapping[str, str] = field(default_factory=dict)
    key_holder: KeyHolder | None = None
    """Holds the unlocked key until ``key_idle_minutes`` of the approver's config pass
    without a decision (default 5); made at first use (a config that cannot be read keeps the
    default)."""

    def _holder(self) -> KeyHolder:
        if self.key_holder is None:
            # lazy: the approver's config is read at the first decision, not for the first page
            from core.engine.approver_config import KEY_IDLE_MINUTES, key_idle_seconds
            from core.engine.signing import KeyHolder  # lazy: cryptography is imported at the first decision, not at start

            try:
                idle = key_idle_seconds()
            except ResolverError:
                idle = KEY_IDLE_MINUTES * 60.0
            self.key_holder = KeyHolder(idle)
        return self.key_holder

    @property
    def unlocked(self) -> Unlocked | None:
        """The shop-home approver's key, unlocked in memory at the first approval and
        kept for this session only (never written anywhere), until it was idle too long."""
        return self._holder().get()

    @unlocked.setter
    def unlocked(self, key: Unlocked | None) -> None:
        self._holder().put(key)

    # -- reads ----------------------------------------------------------------------------------

    def page(
        self,
        status: str | None,
        search: str | None,
        after: str | None,
        select: str | None,
        serial: int,
        sort: str | None,
        rows: int = 0,
    ) -> PageLoaded:
        """A page of :data:`~resolver_tui.widgets.run_table.PAGE_ROWS` runs, or ``rows`` when
        more (a refresh reads as many rows as the table has loaded: see
        :meth:`QueueScreen.reload`), ``after`` None: the first; in ``sort``, with the counts;
        ``serial`` numbers the load (an older one is dropped)."""
        queue = self.home.queue
        limit = max(PAGE_ROWS, rows)

        def read() -> PageLoaded:
            if status == MINE:  # the waiting runs I may approve: the role needed is within mine
                page = replace(
                    queue.page(
                        "waiting_approval", search=search, after=after, sort=sort, max_role=self.approver.role, limit=limit
                    ),
                    status=MINE,
                )
            else:
                page = queue.page(status, search=search, after=after, sort=sort, limit=limit)
            return PageLoaded(page, queue.counts(), serial, select, aside=queue.set_aside(), away=self._away(status))

        return read_again(read)

    def _away(self, status: str | None) -> str | None:
        """Under the waiting and mine filters, the line saying how many waiting runs this
        approver may decide are set aside or claimed by someone else
        (:meth:`core.engine.marks.MarkedAway.line`): a mark never takes a run out of the queue of those
        who may decide it silently. The app's "mine" keeps runs handed to others (it filters by
        role only), so only ``resolver runs --mine`` counts those. None elsewhere or unmarked."""
        if status not in ("waiting_approval", MINE):
            return None
        queue = self.home.queue
        marks, now = queue.marks_now()
        if not marks:
            return None
        where = f"press {key_for(f'status({[f for f, _ in FILTERS].index(None)})')} for all, which lists every run with its marks"
        return queue.marked_away(marks, now, self.approver.role, self.approver.name).line(mine=False, lists_all=where)

    def _run_detail(self, run_id: str) -> RunDetail:
        """The run's detail read once more after a lost connection (:func:`read_again`); a store
        that still does not answer gives the detail that says so
        (:func:`core.api.views.unreachable_detail`), never a damaged checkpoint."""
        try:
            return read_again(lambda: self.home.queue.run(run_id, self.approver, keys=self.keys))
        except (StoreUnreachable, StoreBusy) as exc:
            return unreachable_detail(run_id, str(exc))

    def detail(self, run_id: str) -> DetailLoaded:
        """The run's detail (a waiting run's lookups run again: no model call)."""
        return DetailLoaded(self._run_detail(run_id))

    def dialog(self, run_id: str, kind: str) -> DialogReady:
        """The run's detail read again for the ``kind`` dialog (``approve``): the lookups run
        again, so the dialog shows the world as it is."""
        return DialogReady(self._run_detail(run_id), kind)

    def trace(self, run_id: str) -> Message:
        """The run's trace, or why it cannot be read."""

        def work() -> Message:
            return LinesReady("trace", f"Trace of {run_id}", self.home.queue.trace(run_id))

        return guarded(run_id, work)

    def history(self, kind: str, key: str) -> Message:
        """History: ``run`` (the decisions and refusals of run ``key``), ``name``
        (those of approver ``key``) or ``changes`` (the practice world's changes)."""

        def work() -> Message:
            queue = self.home.queue
            if kind == "changes":
                title, body = "The world's changes", changes_lines(queue.changes())
            elif kind == "name":
                title, body = f"Decisions and refusals of {key}", history_lines(queue.audit(name=key))
            else:
                title, body = f"History of {key}", history_lines(queue.audit(key), with_run=False)
            return LinesReady("history", title, body)

        return guarded(key if kind == "run" else None, work)

    def compare(self, run_id: str, other: str) -> Message:
        """Two runs of one ticket, their actions line by line (the older one first)."""

        def work() -> Message:
            title, lines = self.home.queue.compare(run_id, other, oldest_first=True)
            return LinesReady("compare", title, lines)

        return guarded(run_id, work)

    # -- writes ---------------------------------------------------------------------------------

    def _progress(self, others: list[str], post: Post):
        """The executor's ``on_progress``: post the run after each saved operation."""
        queue, approver, keys = self.home.queue, self.approver, self.keys

        def progress(state, _op) -> None:
            post(OperationDone(queue.describe(state.model_copy(deep=True), approver, others, keys=keys)))

        return progress

    def demo(self) -> Message:
        """Load the demo queue into the empty home."""

        def work() -> Message:
            made = build_demo(self.home)
            return Finished(None, [f"Loaded the demo queue: {len(made)} runs."])

        return guarded(None, work)

    def approve(
        self,
        run_id: str,
        digest: str,
        version: int,
        others: list[str],
        seen: WorldSeen | None,
        post: Post,
        passphrase: str | None = None,
    ) -> Message:
        """Approve what was read (``digest`` at checkpoint ``version``, the world as ``seen``),
        then execute, posting each operation as it finishes. In a shop home ``passphrase``
        unlocks the approver's key, kept in :attr:`unlocked` for the session."""

        def work() -> Message:
            if passphrase is not None:
                self.unlocked = self.home.unlock(self.approver.name, passphrase)
            state = self.home.approve(
                run_id,
                self.approver.role,
                self.approver.name,
                digest=digest,
                expect_version=version,
                owner=self.lease_owner,
                on_progress=self._progress(others, post),
                signer=self.unlocked,
                seen=seen,
            )
            return Finished(run_id, after_approve(state), self.home.queue.describe(state, self.approver, others, keys=self.keys))

        return guarded(run_id, work)

    def unlock(self, run_id: str, action: str, passphrase: str) -> Message:
        """Unlock the approver's key with ``passphrase`` for the mark ``action`` on ``run_id``
        (in a shop home a claim, hand-over or snooze is signed, and ``c``, ``o`` and
        ``z`` ask the passphrase first when the key is locked); kept in :attr:`unlocked` for the
        session. A wrong passphrase comes back as :class:`Failed` with core's sentence."""

        def work() -> Message:
            self.unlocked = self.home.unlock(self.approver.name, passphrase)
            return KeyUnlocked(run_id, action)

        said = guarded(run_id, work)
        if isinstance(said, Failed):  # a mark, not a decision (a trial: "nothing was decided" after c)
            said.text = said.text.replace("nothing was decided", "nothing was marked")
        return said

    def claim(self, run_id: str, release: bool) -> Message:
        """Claim the waiting run ``run_id``, or with ``release`` release this approver's claim
        (:meth:`core.api.home.Home.mark`); in a shop home signed with the unlocked key."""

        def work() -> Message:
            kind = "release" if release else "claim"
            marks = self.home.mark(kind, run_id, self.approver.role, self.approver.name, signer=self.unlocked)
            said = f"Released your claim on {run_id}." if release else f"Claimed {run_id}."
            return self._marked(run_id, said, marks)

        return guarded(run_id, work)

    def mark(self, run_id: str, kind: str, to: str = "", note: str = "", until: str = "") -> Message:
        """Hand the waiting run ``run_id`` over (``kind`` ``handover``: to colleague ``to`` with
        ``note``) or snooze it (``snooze``: ``until``, as ``resolver snooze --until`` reads it, ISO
        8601 or a duration from now such as ``90m``) through :meth:`core.api.home.Home.mark`, the
        command line's path; in a shop home signed with the unlocked key. Core's
        refusal (an unknown colleague, a blank note, a time past the run's expiry, a settled run,
        a time it cannot read) comes back as :class:`Failed` with its sentence; nothing is written
        then."""

        def work() -> Message:
            # lazy: the marks' time parser is needed only when a mark is made
            from core.engine.marks import mark_time

            if kind == "snooze":
                marks = self.home.mark(
                    kind,
                    run_id,
                    self.approver.role,
                    self.approver.name,
                    signer=self.unlocked,
                    until=mark_time(until, self.home.clock.now()),
                )
                said = f"Set {run_id} aside."
            else:
                marks = self.home.mark(
                    kind, run_id, self.approver.role, self.approver.name, signer=self.unlocked, to=to, note=note
                )
                said = f"Handed {run_id} to {one_line(marks.handed_to or '')}."
            return self._marked(run_id, said, marks, set_aside=kind == "snooze")

        return guarded(run_id, work)

    def _marked(self, run_id: str, said: str, marks: RunMarks, set_aside: bool = False) -> Finished:
        """What a claim, release, hand-over or snooze shows: ``said`` and the marks' lines that the
        pane does not show already (after ``c`` or ``o`` the claim or hand-over line was shown
        twice, under Outcome and among the pane's own lines)."""
        detail = self.home.queue.run(run_id, self.approver, keys=self.keys)
        shown = {line.strip() for line in (*detail.notes, *detail.body)}
        lines = [said, *(line for line in marks.lines(self.home.clock.now()) if line.strip() not in shown)]
        return Finished(run_id, lines, detail, set_aside=set_aside)

    def reject(self, run_id: str, digest: str, reason: str, others: list[str]) -> Message:
        """Reject what was read (``digest``) with ``reason``."""

        def work() -> Message:
            state = self.home.reject(run_id, self.approver.role, reason, self.approver.name, digest, signer=self.unlocked)
            return Finished(run_id, after_reject(state), self.home.queue.describe(state, self.approver, others, keys=self.keys))

        return guarded(run_id, work)

    def resume(self, run_id: str, others: list[str], post: Post, accept_changes: bool = False) -> Message:
        """Resume by status, posting each operation an execution finishes. A running loop whose
        policy, tool schema or model route changed is refused with :class:`ChangesFound`
        (nothing changed), unless ``accept_changes``: then it goes on under the new ones, this
        run only (:meth:`core.api.home.Home.resume`)."""

        def work() -> Message:
            try:
                done = self.home.resume(
                    run_id, on_progress=self._progress(others, post), owner=self.lease_owner, accept_changes=accept_changes
                )
            except ResumeChanged as exc:
                return ChangesFound(run_id, str(exc), exc.changes, others)
            return Finished(
                run_id,
                after_resume(done.kind, done.before, done.state),
                self.home.queue.describe(done.state, self.approver, others, keys=self.keys),
            )

        return guarded(run_id, work)
