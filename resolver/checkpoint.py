"""The lesson's checkpoint store (seed 000): ``CheckpointStore`` and ``TaskState``.

Public API of the lesson, defined in :mod:`core.trainer.lesson_api` and :mod:`core.ground.state`:

- ``CheckpointStore(path=None, clock=None)``: the home's ``runs.sqlite`` by default.
  ``save(state)`` writes the whole state (and stamps ``updated_at``), ``load(run_id)`` reads it
  back as a ``TaskState`` (RunNotFound, CorruptCheckpoint), ``latest(task_id)`` loads the
  ticket's newest run or gives None.
- ``TaskState``: the whole state of a run; ``state.log(kind, message, **data)`` appends an event.

Raises ShopRefused in a shop home.
"""

from __future__ import annotations

from core.ground.state import TaskState
from core.trainer.lesson_api import CheckpointStore

__all__ = ["CheckpointStore", "TaskState"]
