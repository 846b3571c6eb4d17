"""The lesson's practice world (seed 000): ``World``, ``Faults`` and ``PRACTICE_DB``.

Public API of the lesson, defined in :mod:`core.trainer.lesson_api`:

- ``World(path=PRACTICE_DB, ticket_id="manual", faults=(), clock=None)``: the practice world;
  ``World(ticket_id="phone-call").request_refund("manual-1", "LK-507862", 119.00, "RFD-DOUBLE",
  "PAY-507862-2")`` makes refund ``RF-4CFEAE8E`` of 119.00 CAD.
- ``Faults(task.faults)``: a ticket's simulated faults, handed to a ``World``.
- ``PRACTICE_DB``: the home's ``larkfield.sqlite`` (``$RESOLVER_HOME``, ``home`` in the config file, else
  ``./work`` in the project folder: :func:`core.ground.homepath.default_home`), or the
  team store's URL when ``$RESOLVER_STORE`` or the config file chose one, fixed
  when this module is imported.

Raises ShopRefused in a shop home.
"""

from __future__ import annotations

from core.trainer.lesson_api import Faults, World, practice_db

PRACTICE_DB = practice_db()

__all__ = ["PRACTICE_DB", "Faults", "World"]
