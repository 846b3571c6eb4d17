"""The lesson's model (seed 000): ``MockProvider``.

Public API of the lesson, defined in :mod:`core.trainer.lesson_api`:

- ``MockProvider().complete(messages, *, task_id, variant, model, repeat=1)``: the recorded
  model, a test double replaying ``data/recordings``; ``run_task`` calls it once per step.
"""

from __future__ import annotations

from core.trainer.lesson_api import MockProvider

__all__ = ["MockProvider"]
