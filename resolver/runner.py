"""The lesson's agent loop (seed 000): ``new_state`` and ``run_task``.

Public API of the lesson, defined in :mod:`core.trainer.lesson_api` and :mod:`core.engine.runner`:

- ``new_state(task, variant, model, run_id, clock=None, repeat=1)``: a fresh ``running``
  ``TaskState`` with a new unique ``run_uid``.
- ``run_task(task, variant, model, complete, world, *, state=None, on_step=None)``: the loop,
  one ``complete`` call per step, ``on_step(state)`` after each; T-65273 ends
  ``waiting_approval`` after 3 model calls and 7,155 tokens in.
- ``outcome_line(state)``: ``resolve (rule W7) | 3 model call(s), 2 tool call(s) | ...``.

Raises ShopRefused in a shop home.
"""

from __future__ import annotations

from core.engine.runner import outcome_line
from core.trainer.lesson_api import new_state, run_task

__all__ = ["new_state", "outcome_line", "run_task"]
