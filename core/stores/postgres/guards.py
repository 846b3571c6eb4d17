"""The ``CREATE TRIGGER`` statements of role separation's guards, and the one way to make a trigger
again: a leaf that :mod:`core.stores.postgres.roles` (the setup) and
:mod:`core.stores.postgres.triggers` (the check against the migrations) both import.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg

from core.stores.practice import EFFECT_TABLES_COLUMNS

__all__ = ["JOURNAL_TRIGGER", "make_again", "setup_triggers"]

CREATE_TRIGGER = re.compile(
    r"^\s*CREATE TRIGGER (\w+) (BEFORE|AFTER) (.+?) ON (\w+)\b.*?FOR EACH (ROW|STATEMENT)\b.*?EXECUTE FUNCTION (\w+)\(\)",
    re.DOTALL,
)

JOURNAL_TRIGGER = (
    "CREATE TRIGGER model_calls_written_by BEFORE INSERT OR UPDATE ON model_calls FOR EACH ROW "
    "EXECUTE FUNCTION resolver_guard_model_calls()"
)
"""The trigger of migration 17 on the journal of model calls (made again by ``setup``)."""


def make_again(conn: psycopg.Connection[Any], statement: str) -> None:
    """Drop the trigger ``statement`` creates, if it is there, and create it as written: one
    way to make a trigger again, for the setup and for a repair alike."""
    m = CREATE_TRIGGER.match(statement)
    if m is None:
        raise ValueError(f"not a CREATE TRIGGER statement: {statement[:60]}")
    conn.execute(f"DROP TRIGGER IF EXISTS {m.group(1)} ON {m.group(4)}")
    conn.execute(statement)


def setup_triggers(tables: set[str] | frozenset[str], *, journal: bool) -> list[str]:
    """The ``CREATE TRIGGER`` statements of role separation's guards (``resolver store roles
    setup`` runs them), for those of their tables that exist in ``tables``; ``journal``: with
    migration 17's trigger on the journal of model calls, made again too (a store set up before
    migration 17 has not its function)."""
    made = [
        "CREATE TRIGGER runs_guard BEFORE INSERT OR UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION resolver_guard_runs()",
        "CREATE TRIGGER run_marks_guard BEFORE INSERT OR UPDATE OR DELETE ON run_marks FOR EACH ROW "
        "EXECUTE FUNCTION resolver_guard_marks()",
        *([JOURNAL_TRIGGER] if journal else []),
        *(
            f"CREATE TRIGGER {table}_guard BEFORE INSERT OR UPDATE OR DELETE ON {table} FOR EACH ROW "
            "EXECUTE FUNCTION resolver_guard_register()"
            for table in EFFECT_TABLES_COLUMNS
        ),
    ]
    return [s for s in made if (m := CREATE_TRIGGER.match(s)) and m.group(4) in tables]
