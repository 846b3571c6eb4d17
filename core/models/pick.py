"""Which model answers a run: picked from the run's saved model route.

Above both kinds of model: the recorded one (:mod:`core.models.recorded_model`, the test double
of the practice world) and a live chat-completions client (:mod:`core.models.live_model`), so
neither imports the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.models.model import CallJournal, Model, live_route_of

if TYPE_CHECKING:
    from core.contract.store import CallStore
    from core.ground.state import TaskState


def model_for(state: TaskState, store: CallStore | None = None, recordings: Path | None = None) -> Model:
    """The model ``state``'s route names: the recorded model (``recordings``: a home's folder of
    ``resolver record`` runs, read after ``data/recordings``) or a live chat-completions client
    (journaled in ``store`` when given: each attempt written before it is sent, each answer
    before it is acted on, a step answered before a crash answered again from there).

    Raises:
        NoRecording: a recorded route without its recording.
        ResolverError: the ``openai`` extra is not installed, or the route does not read.
    """
    live = live_route_of(state.meta.model_route)
    if live is not None:
        from core.models.live_model import OpenAIChatModel  # lazy: openai is imported only for a live route

        journal = CallJournal(store, state.run_id, state.meta.model_route) if store is not None else None
        return OpenAIChatModel(live, journal, state.run_id)
    from core.models.recorded_model import RecordedModel  # lazy: only the route's kind of model is loaded

    return RecordedModel(state.task_id, state.variant, state.model, state.repeat, recordings)
