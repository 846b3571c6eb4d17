"""Big team stores for the PostgreSQL benchmark and the queue's plan test.

:func:`copy_runs` fills the ``runs`` table of a team store with ``n`` runs, SQL copies of the
real runs already in it (one of each status: ``benchmarks/harness.py``'s templates), in one
``INSERT ... SELECT`` over ``generate_series``: every column of the real row, the run ID
replaced in every text column (the header's ``state`` JSON included), a made-up ticket ID
(about 11 runs a ticket at 1,000,000), times spread 25 s apart, statuses mixed as in :data:`MIX`. Only ``runs`` is copied:
the queue's pages read nothing else (a copy's ``entries`` rows would only be read by a load).
"""

from __future__ import annotations

import time
from typing import Any

SPACING_S = 25.0
"""Seconds between two copies' times."""


MIX = {
    "done": 85,
    "waiting_approval": 5,
    "handed_to_person": 4,
    "stopped": 3,
    "executing": 2,
    "running": 1,
}
"""Copies of each status per 100: a queue where most runs are done and a few wait, as a shop's
store looks after months (the waiting filter must not read its way through the done runs)."""


def copy_runs(conn: Any, n: int, mix: dict[str, int] | None = None) -> float:
    """Add copies of the runs in ``conn``'s ``runs`` table (a psycopg connection on the store's
    schema) until it holds ``n`` runs: per ``sum(mix)`` copies, ``mix[status]`` of the first run
    (in run-ID order) of that status (default :data:`MIX`; a status with no run to copy is left
    out), interleaved; then ``ANALYZE runs``. Returns the seconds it took. Raises ValueError
    when no run of the mix is there to copy."""
    t0 = time.perf_counter()
    first: dict[str, str] = {}
    for run_id, status in conn.execute("SELECT run_id, status FROM runs ORDER BY run_id"):
        first.setdefault(status, run_id)
    templates = [first[s] for s, k in (mix or MIX).items() for _ in range(k) if s in first]
    if not templates:
        raise ValueError("The runs table holds no run of the mix: save at least one real run to copy first.")
    copies = max(0, n - conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    columns = [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'runs' AND is_generated = 'NEVER' "
            "AND is_identity = 'NO' ORDER BY ordinal_position"
        )
    ]
    exprs = []
    for name, kind in columns:
        if name == "run_id":
            exprs.append("p.new_id")
        elif name == "task_id":
            exprs.append("p.task")
        elif name.endswith("_ts"):
            exprs.append("p.ts")
        elif name in ("created_at", "updated_at"):
            exprs.append("p.at")
        elif kind == "text":
            exprs.append(f"replace(src.{name}, src.run_id, p.new_id)")
        else:
            exprs.append(f"src.{name}")
    base = conn.execute("SELECT COALESCE(MAX(updated_ts), extract(epoch FROM now())) FROM runs").fetchone()[0]
    plan = f"""
        SELECT g,
               'T-' || lpad((10000 + g % 90000)::text, 5, '0') || '-agent-chat-small-' || (g / 90000 + 2) AS new_id,
               'T-' || lpad((10000 + g % 90000)::text, 5, '0') AS task,
               {float(base)} - {SPACING_S} * g AS ts,
               to_char(to_timestamp({float(base)} - {SPACING_S} * g) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"') AS at,
               (g % {len(templates)}) AS k
        FROM generate_series(1, {copies}) AS g"""
    names = ", ".join(name for name, _ in columns)
    with conn.transaction():
        conn.execute("CREATE TEMP TABLE bulk_templates (k integer PRIMARY KEY, run_id text) ON COMMIT DROP")
        # spread each status over the cycle: position k of the cycle takes template (k * step) mod len
        order = sorted(range(len(templates)), key=lambda k: (k * 7919) % len(templates))
        for k, i in enumerate(order):
            conn.execute("INSERT INTO bulk_templates VALUES (%s, %s)", (k, templates[i]))
        conn.execute(
            f"INSERT INTO runs ({names}) SELECT {', '.join(exprs)} FROM ({plan}) AS p "
            "JOIN bulk_templates AS t ON t.k = p.k JOIN runs AS src ON src.run_id = t.run_id ORDER BY p.g"
        )
    conn.execute("ANALYZE runs")
    return time.perf_counter() - t0
