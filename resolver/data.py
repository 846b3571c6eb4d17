"""The lesson's tickets (seed 000): ``load_task``.

Public API of the lesson, defined in :mod:`core.ground.data`:

- ``load_task(task_id)``: the ticket (``Ticket``: ``task_id``, ``order_id``, ``customer_id``,
  ``subject``, ``message``, ``faults``) from ``data/tickets``; TaskNotFound for an unknown ID.
- ``task_ids()``: every ticket ID.
"""

from __future__ import annotations

from core.ground.data import Ticket, load_task, task_ids

__all__ = ["Ticket", "load_task", "task_ids"]
