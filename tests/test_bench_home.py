"""The benchmarks' big homes are homes of sound runs: ``harness.build_home``'s SQL copies read back
as the runs they copy, so a benchmark measures the app and the store on the path a real queue
takes. Before this, each copy kept its template's entry checksums over a body that names another
run, so every copy was a corrupt checkpoint: the app's key-to-detail figures timed the corrupt-run
sentence, and the table redrew all its rows at every key."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_copy_of_a_built_home_reads_back_as_a_sound_run(tmp_path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from harness import build_home, make_templates
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from core.api.home import Home

    templates = make_templates(tmp_path / "templates")
    build_home(tmp_path / "home", 40, templates)
    conn = sqlite3.connect(tmp_path / "home" / "runs.sqlite")
    try:
        ids = [r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY run_id")]
        copied = conn.execute("SELECT COUNT(*) FROM entries WHERE checksum IS NOT NULL AND run_id LIKE '%-small-2'").fetchone()
    finally:
        conn.close()
    assert len(ids) == 40 and copied[0] > 0  # the copies' entries carry checksums (format 4)
    store = Home(tmp_path / "home").store
    statuses = {run_id: store.load_view(run_id).status for run_id in ids}  # a corrupt one raises its sentence
    assert statuses[ids[0]] is not None and len(set(statuses.values())) > 3
