"""The lesson's Python API: seed 000's names and call shapes, over the core.

Seed 000 has the learner paste Python that imports ``resolver.systems``, ``resolver.checkpoint``,
``resolver.data``, ``resolver.providers`` and ``resolver.runner``. Those modules of the
``resolver`` package only name what is defined here; everything here is a thin call shape over
the core (the SQLite store and world of :mod:`core.stores.sqlite`, :mod:`core.engine.runner`,
:mod:`core.models.recorded_model`).

Defaults follow the lesson: the home is ``--home``-less, so ``$RESOLVER_HOME``, ``home`` in the config file, or
``./work`` in the project folder where the lesson runs (:func:`core.ground.homepath.default_home`); a store or world without a path is the home's, on the store the
command line would use (``$RESOLVER_STORE`` or ``store`` in the config file: a page's Python and
its commands see one store and one world); a clock not given is the home's (the
trainer's clock in a practice home). ``CheckpointStore(path)`` with a path stays a SQLite file. Every entry point that touches a
home refuses a shop home (:class:`~core.ground.errors.ShopRefused`): the lesson's API is for practice.

The lesson's calls, all tested by ``tests/trainer/test_lesson_page.py`` against the page itself::

    World(ticket_id="phone-call").request_refund("manual-1", "LK-507862", 119.00, "RFD-DOUBLE", "PAY-507862-2")
    store = CheckpointStore()
    state = new_state(task, "agent", "chat-small", "T-65273-crash-1")
    world = World(PRACTICE_DB, task.task_id, Faults(task.faults))
    run_task(task, "agent", "chat-small", MockProvider().complete, world, state=state, on_step=save_then_crash)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from core.api.home import locate_home
from core.api.homekind import home_clock, require_practice, team_kind
from core.api.queue import queue_columns
from core.contract import world as _world
from core.engine import runner as _runner
from core.ground.clock import Clock
from core.ground.data import Fault, FinalTurn, Ticket, ToolCallTurn
from core.ground.errors import ResolverError
from core.ground.state import Message, TaskState
from core.models.recorded_model import RecordedModel
from core.stores import Place, folder_backend, is_team_store, open_store, open_world

_SqliteStore: Any
SqliteWorld: Any
_SqliteStore, SqliteWorld = folder_backend().lesson_classes()
"""The classes of the home folder's store and world (SQLite's ``runs.sqlite`` and
``larkfield.sqlite``), which the lesson's ``CheckpointStore(path)`` and ``World(path)`` are."""

LESSON_API = "the lesson's Python API (resolver.systems, resolver.checkpoint, resolver.runner)"
"""How a refusal in a shop home names this API."""

Turn = ToolCallTurn | FinalTurn


def home_root() -> Path:
    """The lesson's home folder (:func:`core.api.home.locate_home`: ``$RESOLVER_HOME``, ``home`` in the config
    file, else ``./work`` in the project folder), made absolute now."""
    return locate_home().path.resolve()


def team_store() -> str | None:
    """The team store's URL when ``$RESOLVER_STORE`` or the config file chose one, else None."""
    return locate_home().store.url


def _practice_team_clock(url: str, clock: Clock | None) -> Clock:
    """``clock``, or the practice clock of the lesson's home on the team store ``url`` (the
    trainer's, kept in the store); either way refused (ShopRefused) when the home folder or the
    store is a shop's: the lesson's API never reaches a shop store, whatever folder points at it.
    Shared by :class:`CheckpointStore` and :class:`World`."""
    root = home_root()
    require_practice(root, LESSON_API, team_kind(root, url))
    return clock or home_clock(root, url, "practice")


def practice_db() -> Place:
    """The home's practice world (the lesson's ``PRACTICE_DB``): ``larkfield.sqlite`` in the
    home folder, or the team store's URL when one was chosen."""
    return team_store() or home_root() / "larkfield.sqlite"


class CheckpointStore(_SqliteStore):
    """The checkpoint store of seed 000 (``resolver.checkpoint.CheckpointStore``).

    Args:
        path: the ``runs.sqlite`` file; default the home's (``$RESOLVER_HOME/runs.sqlite`` or
            ``work/runs.sqlite``). The folder it is in is taken as its home.
        clock: stamps ``updated_at`` at every save; default the home's clock.

    ``save(state)``, ``load(run_id)`` and ``latest(task_id)`` are the core store's. Every save
    writes the run's queue columns (:func:`core.api.queue.queue_columns`: total, role needed,
    actions), so a run saved here shows in the queue and in an approver's "mine" as one saved by
    ``resolver run`` does.

    It is opened without the home's key (the lesson replays recordings only): the journal of
    live model calls, whose rows are sealed with a key derived from ``approval.key``, is neither
    written nor taken here (each refused with one sentence), and a store of an earlier format
    whose journal holds rows is refused until resolver opens the home once (the upgrade seals
    them with the key); see :class:`core.stores.sqlite.checkpoint.CheckpointStore`.

    Raises:
        ShopRefused: the folder is a shop home.
        UnsupportedStoreFormat: an earlier format's store with journal rows to seal.
    """

    def __new__(cls, path: Path | str | None = None, clock: Clock | None = None) -> Any:
        """With no ``path`` and a team store chosen, that store (the same contract, another class);
        else a SQLite store of this class."""
        url = team_store() if path is None else None
        if url is None:
            return super().__new__(cls)
        return open_store(url, _practice_team_clock(url, clock), summarize=queue_columns)

    def __init__(self, path: Path | str | None = None, clock: Clock | None = None) -> None:
        where = Path(path) if path is not None else home_root() / "runs.sqlite"
        require_practice(where.parent, LESSON_API)
        super().__init__(where, clock or home_clock(where.parent), summarize=queue_columns)


class Faults(tuple[Fault, ...]):
    """The simulated faults of one ticket (``Faults(task.faults)``), each met once by a write
    service of the :class:`World` that is handed them."""

    def __new__(cls, faults: Iterable[Fault] = ()) -> Faults:
        return super().__new__(cls, tuple(faults))


class World(SqliteWorld):
    """The practice world of seed 000 (``resolver.systems.World``).

    Args:
        path: ``larkfield.sqlite``; default the home's (:data:`PRACTICE_DB`).
        ticket_id: who writes, recorded with every write (``"phone-call"`` for the weekend call).
        faults: the ticket's simulated faults (:class:`Faults`).
        clock: stamps the writes; default the home's clock.

    The read-only tools (``get_order`` ...) and write services (``request_refund(operation_id,
    order_id, amount, reason_code, payment_id)`` ...) are the core world's: ``amount`` is CAD,
    a float such as ``119.00`` is read through its text and becomes ``Decimal('119.00')``.
    ``request_refund`` returns the refund as a dict with its ``refund_id``
    (``RF-4CFEAE8E`` for the operation ``manual-1``).

    Raises:
        ShopRefused: the folder is a shop home.
    """

    def __new__(
        cls,
        path: Path | str | None = None,
        ticket_id: str = "manual",
        faults: Iterable[Fault] = (),
        clock: Clock | None = None,
    ) -> Any:
        """``path`` a team store's URL (``PRACTICE_DB`` when one was chosen), or none given with a
        team store chosen: that store's world (the same contract, another class); else a SQLite
        world of this class."""
        url = str(path) if path is not None and is_team_store(path) else (team_store() if path is None else None)
        if url is None:
            return super().__new__(cls)
        return open_world(url, _practice_team_clock(url, clock), faults=faults, actor=ticket_id)

    def __init__(
        self,
        path: Path | str | None = None,
        ticket_id: str = "manual",
        faults: Iterable[Fault] = (),
        clock: Clock | None = None,
    ) -> None:
        where = Path(path) if path is not None else home_root() / "larkfield.sqlite"
        require_practice(where.parent, LESSON_API)
        super().__init__(where, clock or home_clock(where.parent), faults=faults, actor=ticket_id)


class Complete(Protocol):
    """A provider's ``complete``: the next turn for the working context of one recorded route."""

    def __call__(self, messages: list[Message], *, task_id: str, variant: str, model: str, repeat: int = 1) -> Turn:
        """The next turn (a tool call or the final answer)."""


class MockProvider:
    """The lesson's model: the recorded model (:class:`core.models.recorded_model.RecordedModel`), a test
    double that replays ``data/recordings`` for any ticket, variant, model and repeat."""

    def __init__(self) -> None:
        self._models: dict[tuple[str, str, str, int], RecordedModel] = {}

    def complete(self, messages: list[Message], *, task_id: str, variant: str, model: str, repeat: int = 1) -> Turn:
        """The recorded next turn for ``messages``, counted by the assistant turns already in it.

        Raises:
            NoRecording: no such recording, or the context is past its last turn.
        """
        key = (task_id, variant, model, repeat)
        if key not in self._models:
            self._models[key] = RecordedModel(*key)
        return self._models[key].complete(messages)


class _Route:
    """The core loop's model: ``complete(messages)`` through a provider's ``complete``."""

    def __init__(self, complete: Complete, state: TaskState) -> None:
        self._complete = complete
        self._state = state

    def complete(self, messages: list[Message]) -> Turn:
        s = self._state
        return self._complete(messages, task_id=s.task_id, variant=s.variant, model=s.model, repeat=s.repeat)


def new_state(task: Ticket, variant: str, model: str, run_id: str, clock: Clock | None = None, repeat: int = 1) -> TaskState:
    """A fresh ``running`` TaskState (see :func:`core.engine.runner.new_state`), with a new unique
    ``run_uid``; ``clock`` defaults to the home's."""
    return _runner.new_state(task, variant, model, run_id, clock or home_clock(home_root(), team_store()), repeat)


def run_task(
    task: Ticket,
    variant: str,
    model: str,
    complete: Complete,
    world: _world.World,
    *,
    state: TaskState | None = None,
    on_step: _runner.OnStep | None = None,
) -> TaskState:
    """Run the agent's loop on ``task`` (see :func:`core.engine.runner.run_task`): one ``complete``
    call per step, the tools against ``world``, ``on_step(state)`` after every step (the
    lesson's ``save_then_crash`` saves there). ``state`` continues a saved run; by default a new
    one, ``TASK-VARIANT-MODEL-1``. Returns the state (``waiting_approval`` for T-65273).

    Raises:
        ResolverError: ``state`` belongs to another ticket, variant or model.
        ShopRefused: ``world`` is in a shop home.
        NoRecording, and whatever ``on_step`` raises (the lesson's ``Crash``).
    """
    url = getattr(world, "url", None)  # a team store's world: the lesson's folder, and the store's own kind
    if url is None:
        require_practice(Path(world.path).parent, LESSON_API)
    else:
        _practice_team_clock(str(url), world.clock)  # refuses a shop folder or store
    if state is None:
        state = new_state(task, variant, model, _runner.run_id_for(task.task_id, variant, model, 1), world.clock)
    if (state.task_id, state.variant, state.model) != (task.task_id, variant, model):
        raise ResolverError(
            f"The state {state.run_id} is a run of {state.task_id} by {state.variant}/{state.model}, "
            f"not of {task.task_id} by {variant}/{model}."
        )
    return _runner.run_task(state, _Route(complete, state), world, world.clock, on_step=on_step)
