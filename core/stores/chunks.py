"""Reading rows for a long list of values, a few hundred a statement: what the back-ends and their
shared tables (:mod:`core.stores.events`, :mod:`core.stores.marks`) share, in a leaf of its own so
that those tables and :mod:`core.stores.common` can each import it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["IN_CHUNK", "rows_in"]

IN_CHUNK = 500
"""Values per ``IN (...)`` list of :func:`rows_in`, under SQLite's oldest limit of 999 parameters."""


def rows_in(conn: Any, select: str, values: Sequence[Any]) -> list[Any]:
    """The rows of ``select`` (``?`` SQL ending in ``IN``, e.g. ``"SELECT ... WHERE run_id IN"``)
    for ``values``, read :data:`IN_CHUNK` values a statement on ``conn``; ``[]`` for none."""
    rows: list[Any] = []
    for start in range(0, len(values), IN_CHUNK):
        chunk = values[start : start + IN_CHUNK]
        rows += conn.execute(f"{select} ({', '.join('?' for _ in chunk)})", chunk).fetchall()
    return rows
