"""Messages the thread workers post back to the queue screen.

Workers never touch widgets: they read or write through :mod:`core` on their own connection
and report with one of these (``post_message`` is thread-safe).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.checkpoint import RunSummary
from core.state import TaskState
from textual.message import Message


class PageLoaded(Message):
    """A page of the queue: ``rows`` from ``offset`` for ``status``/``search``, and the counts."""

    def __init__(self, rows: list[RunSummary], counts: dict[str, int], offset: int, status: str | None,
                 search: str | None, select: str | None = None) -> None:
        super().__init__()
        self.rows = rows
        self.counts = counts
        self.offset = offset
        self.status = status
        self.search = search
        self.select = select


@dataclass
class Detail:
    """What the detail pane shows for one run (loaded in a worker)."""

    run_id: str
    summary: RunSummary | None = None
    state: TaskState | None = None
    error: str | None = None
    others: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)


class DetailLoaded(Message):
    """The detail of the highlighted run is ready."""

    def __init__(self, detail: Detail) -> None:
        super().__init__()
        self.detail = detail


class OperationDone(Message):
    """The executor saved one operation of ``run_id`` (``state`` is a copy after it)."""

    def __init__(self, run_id: str, state: TaskState) -> None:
        super().__init__()
        self.run_id = run_id
        self.state = state


class ActionFinished(Message):
    """An approve, reject, resume or demo load finished; ``text`` says how it ended."""

    def __init__(self, run_id: str | None, text: str, state: TaskState | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.text = text
        self.state = state


class ActionFailed(Message):
    """An action ended with an error sentence (refusal, lost race, lease held, busy store)."""

    def __init__(self, run_id: str | None, text: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.text = text
