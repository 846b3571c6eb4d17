"""Messages the thread workers post back to the queue screen.

Workers never touch widgets: they read through ``home.queue`` or write through
:class:`core.api.home.Home` on their own connection
(:class:`~resolver_tui.screens.decisions.Decisions`) and report with one of these
(``post_message`` is thread-safe). Each worker ends with exactly one of them, or with an error
that the screen's one worker-error handler shows.
"""

from __future__ import annotations

from core.api.queue import Page
from core.api.views import RunDetail
from textual.message import Message


class PageLoaded(Message):
    """A page of the queue and the counts per status; ``serial`` is the load it answers
    (older loads are dropped) and ``select`` the run to put the cursor on; ``aside`` how many
    waiting runs are set aside now (the "waiting" count leaves them out); ``away`` the
    line that says how many waiting runs the approver may decide a mark keeps from them
    (:meth:`core.engine.marks.MarkedAway.line`), or None."""

    def __init__(
        self,
        page: Page,
        counts: dict[str, int],
        serial: int,
        select: str | None = None,
        aside: int = 0,
        away: str | None = None,
    ) -> None:
        super().__init__()
        self.page = page
        self.counts = counts
        self.serial = serial
        self.select = select
        self.aside = aside
        self.away = away


class DetailLoaded(Message):
    """The detail of a run is ready (the highlighted one, or a run the executor just advanced)."""

    def __init__(self, detail: RunDetail) -> None:
        super().__init__()
        self.detail = detail


class OperationDone(DetailLoaded):
    """The executor saved one operation; ``detail`` is the run after it."""


class DialogReady(Message):
    """The run was read again for a dialog (``kind``: ``approve``): its lookups ran again, so
    the dialog shows the world as it is now."""

    def __init__(self, detail: RunDetail, kind: str) -> None:
        super().__init__()
        self.detail = detail
        self.kind = kind


class Finished(Message):
    """An approve, reject, resume, mark or demo load finished; ``lines`` say what happened and
    ``detail`` is the run after it (None for the demo); ``set_aside``: the run was snoozed, so it
    left the waiting filters though its status did not."""

    def __init__(self, run_id: str | None, lines: list[str], detail: RunDetail | None = None, set_aside: bool = False) -> None:
        super().__init__()
        self.run_id = run_id
        self.lines = lines
        self.detail = detail
        self.set_aside = set_aside


class Failed(Message):
    """An action or a read ended with an error sentence (refusal, lost race, lease held, busy
    store); ``lines`` the section "What changed since the agent looked" as it is now when the
    world changed under an approval."""

    def __init__(self, run_id: str | None, text: str, lines: list[str] | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.text = text
        self.lines = list(lines or [])


class ChangesFound(Message):
    """A resume of a running loop was refused because its policy, tool schema or model route
    changed since it started (:class:`core.ground.errors.ResumeChanged`): ``text`` is core's sentence,
    ``changes`` a line per change, ``others`` the ticket's other runs (for the resume that
    accepts them). Nothing changed."""

    def __init__(self, run_id: str, text: str, changes: list[str], others: list[str]) -> None:
        super().__init__()
        self.run_id = run_id
        self.text = text
        self.changes = list(changes)
        self.others = list(others)


class LinesReady(Message):
    """A trace or a comparison is ready to be shown: ``kind`` is ``trace`` or ``compare``."""

    def __init__(self, kind: str, title: str, lines: list[str]) -> None:
        super().__init__()
        self.kind = kind
        self.title = title
        self.lines = lines


class MomentDone(Message):
    """A trainer's moment ran (posted to the app): what it said, or the error sentence."""

    def __init__(self, name: str, lines: list[str], error: str | None = None) -> None:
        super().__init__()
        self.name = name
        self.lines = lines
        self.error = error


class QueueChanged(Message):
    """The team store's listener heard changes: ``changes`` is a batch of
    ``(kind, run_id)`` (run_id None: many runs), sent by any machine at its commit."""

    def __init__(self, changes: list[tuple[str, str | None]]) -> None:
        super().__init__()
        self.changes = changes


class LiveState(Message):
    """The listener's connection dropped (``lost``) or listens again (``reconnected``)."""

    def __init__(self, state: str) -> None:
        super().__init__()
        self.state = state


class KeyUnlocked(Message):
    """The shop-home approver's key was unlocked for a mark: ``action`` (``claim``,
    ``handover`` or ``snooze``) goes on, on run ``run_id`` if it is still highlighted."""

    def __init__(self, run_id: str, action: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.action = action
