"""``resolver runs`` without the model, the policy or the world: the light read of a listing.

A listing reads only the queue's indexed columns (:meth:`core.contract.store.Store.page`),
so it needs neither pydantic nor the policy and customer data that :class:`core.api.home.Home`
imports to write. :func:`listing_home` opens the store alone when ``runs.sqlite`` is already in
the current store format; anything else (no file yet, release 0.1.0's format to migrate, a file
that cannot be read) is left to the whole :class:`~core.api.home.Home`, which migrates with the
queue's columns and says what is wrong in its own sentence. The start-up target:
``resolver runs --status waiting_approval`` over 100,000 runs under 0.3 s, whole process.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

from core.api.homekind import home_clock, home_kind
from core.contract.store import PAGE_SIZE, QueueColumns, RunSummary, Store
from core.engine.marks import marked_away, standing
from core.stores import folder_backend

if TYPE_CHECKING:
    from core.engine.marks import MarkedAway, RunMarks
    from core.ground.state import TaskState

__all__ = ["ListingHome", "ListingPage", "ListingQueue", "PrintedPage", "PrintedRow", "listing_home"]


class ListedStore(Store, Protocol):
    """The home folder's store as a listing reads it: the contract, and its own read of the
    printed columns (``listed``: :meth:`core.stores.sqlite.checkpoint.CheckpointStore.listed`)."""

    def listed(
        self,
        status: str | None = None,
        *,
        search: str | None = None,
        sort: str | None = None,
        after: tuple[Any, str] | None = None,
        limit: int = PAGE_SIZE,
    ) -> list[tuple[str, str, str, int, Any]]:
        """The rows ``resolver runs`` prints, a page at a time."""


class PrintedRow(NamedTuple):
    """What a line of ``resolver runs`` prints of one run: read as a tuple of four columns
    (quick to build), not as a :class:`RunSummary` of twenty; then the sort key (the page's cursor)."""

    run_id: str
    status: str
    updated_at: str
    state_ok: int
    sort_key: object


@dataclass(frozen=True)
class PrintedPage:
    """One page of printed rows and whether another page may follow (``more``). The rows are
    the tuples SQLite returns, in the shape of :class:`PrintedRow` but not made into one: at
    100,000 runs making them cost a tenth of the listing's CPU."""

    rows: list[tuple[str, str, str, int, object]]
    more: bool


@dataclass(frozen=True)
class ListingPage:
    """One page of a listing: ``rows`` and whether another page may follow (``more``)."""

    rows: list[RunSummary]
    more: bool


class ListingQueue:
    """The two reads ``resolver runs`` makes, with the same order and pages as
    :meth:`core.api.queue.ApprovalQueue.pages` and :meth:`core.api.queue.ApprovalQueue.total`."""

    def __init__(self, store: ListedStore, root: Path | None = None) -> None:
        self._store = store
        self._root = root

    def marks_now(self) -> tuple[dict[str, RunMarks], datetime]:
        """The marks that stand now (claims, hand-overs, snoozes) by run ID, and the
        home's clock time they were read at (the trainer's, in a practice home). The clock is
        read only when some run is marked: an unmarked home lists as fast as before."""
        rows = self._store.run_marks()
        if not rows:
            return {}, datetime.now().astimezone()

        now = home_clock(self._root).now() if self._root is not None else self._store.clock.now()
        return standing(rows, now), now

    def marked_away(self, marks: dict[str, RunMarks], now: datetime, role: str | None, name: str | None) -> MarkedAway:
        """As :meth:`core.api.queue.ApprovalQueue.marked_away`: the waiting runs ``role`` may decide
        that the standing ``marks`` keep from the reader ``name``, counted."""
        return marked_away(self._store, marks, now, role, name)

    def pages(
        self,
        status: str | None = None,
        *,
        search: str | None = None,
        limit: int = 1000,
        sort: str | None = None,
        max_role: str | None = None,
    ) -> Iterator[ListingPage]:
        """Every page in turn, keyset after the last row of the one before, in ``sort`` order
        (:data:`core.contract.store.SORTS`). ``max_role`` needs the policy's ranks: the whole home
        answers ``--mine`` (ValueError here)."""
        if max_role is not None:
            raise ValueError("the light listing does not filter by role; open the whole home")
        after: RunSummary | None = None
        while True:
            rows = self._store.page(status, search=search, sort=sort, after=after, limit=limit)
            more = len(rows) >= limit
            yield ListingPage(rows, more)
            if not more:
                return
            after = rows[-1]

    def printed_pages(
        self, status: str | None = None, *, search: str | None = None, limit: int = 1000, sort: str | None = None
    ) -> Iterator[PrintedPage]:
        """Every page as :meth:`pages` gives it, each row only the columns a line prints
        (:meth:`core.stores.sqlite.checkpoint.CheckpointStore.listed`)."""
        after: tuple[object, str] | None = None
        while True:
            rows = self._store.listed(status, search=search, sort=sort, after=after, limit=limit)
            more = len(rows) >= limit
            yield PrintedPage(rows, more)
            if not more:
                return
            after = (rows[-1][4], rows[-1][0])

    def total(self) -> int:
        """How many runs are saved, whatever their status (the counts table)."""
        return sum(self._store.counts().values())


@dataclass(frozen=True)
class ListingHome:
    """A home opened for listing only: ``root`` and its ``queue`` (a :class:`ListingQueue`)."""

    root: Path
    queue: ListingQueue


def _queue_columns(state: TaskState) -> QueueColumns:
    """:func:`core.api.queue.queue_columns`, imported at the first save only: a listing never saves,
    so it never pays for the policy's import (start-up stays fast), yet its store, like every
    store, writes the queue's columns with every save."""
    # lazy: core.api.queue builds pydantic models; `resolver runs` reads the columns without it
    from core.api.queue import queue_columns

    return queue_columns(state)


def listing_home(root: Path) -> ListingHome | None:
    """The home at ``root`` opened for a listing, or None when the whole home must open it (no
    ``runs.sqlite`` yet, an older store format to migrate, or a file SQLite cannot read).

    Raises:
        HomeKindLost: the folder is a shop home whose ``home.json`` is missing or changed."""
    path = root / "runs.sqlite"
    if not path.is_file():
        return None
    home_kind(root)  # a shop home whose home.json was lost lists nothing either
    folder = folder_backend()
    files = folder.folder_files()
    if files is None or files.store_format(path) != files.STORE_FORMAT:
        return None
    store = folder.open_store(path, None, summarize=_queue_columns, afresh=False, journal_key=None)
    return ListingHome(root, ListingQueue(cast("ListedStore", store), root))
