"""The contract's rows for moving a store (:class:`core.contract.store.StoreRows`), on every back-end: what
one place exports another imports verbatim, one transaction per part, and a used target is refused
with nothing written."""

from __future__ import annotations

from pathlib import Path

import core.stores
import pytest
from core.api.home import Home
from core.contract.store import StoreNotEmpty
from core.ground.errors import ResolverError
from core.stores import open_rows
from core.stores.common import COPY_PARTS, GUARDED

from pg import team_store

RUN = "T-65273-agent-chat-small-1"


@pytest.fixture
def used(home: Home, team_url: str | None):
    """The rows of a home that ran T-65273 and approved it (runs, entries, audit, a refund)."""
    home.run("T-65273", repeat=1)
    home.approve(RUN, "grace", "Grace")
    return open_rows(team_url or home.root)


@pytest.fixture
def empty(backend: str, tmp_path: Path):
    """The rows of a new, empty place on the same back-end."""
    with team_store(backend) as url:
        yield open_rows(url or tmp_path / "empty")


def test_what_one_place_exports_another_imports_verbatim(used, empty):
    for part in COPY_PARTS:
        if used.has_part(part):
            empty.import_rows(part, used.export_rows(part))
    for part in COPY_PARTS:
        assert list(empty.export_rows(part)) == list(used.export_rows(part)), part
    counts = empty.row_counts()
    assert counts == used.row_counts()
    assert (counts["runs"], counts["audit"]) == (1, 1) and counts["refunds"] == 1 and counts["entries"] > 10
    assert counts["operations"] == counts["refunds"] + counts["replies"]


def test_the_audit_keeps_its_ids_and_chain(used, empty):
    empty.import_rows("audit", used.export_rows("audit"))
    (_table, columns, rows), *_ = list(empty.export_rows("audit"))
    ids = [r[columns.index("id")] for r in rows]
    assert ids == list(range(1, len(rows) + 1))
    assert rows[0][columns.index("prev")] == "0" * 64


def test_a_used_target_is_refused_and_nothing_is_written(used):
    before = used.row_counts()
    for part in ("runs", "audit", "world"):
        with pytest.raises(StoreNotEmpty, match=r"already holds .*nothing is merged"):
            used.import_rows(part, used.export_rows(part))
    assert used.row_counts() == before


def test_a_batch_of_another_layout_rolls_the_part_back(used, empty):
    good = list(used.export_rows("runs"))
    bad = ("entries", ("run_id", "n"), [(RUN, 1)])
    with pytest.raises(ResolverError, match=r"has the columns run_id, n; this resolver copies"):
        empty.import_rows("runs", [*good, bad])
    assert empty.row_counts()["runs"] == 0


def test_a_new_place_has_no_registry_nor_world_and_counts_nothing(empty):
    assert not empty.has_part("registry")
    assert not empty.has_part("world")
    assert list(empty.export_rows("registry")) == []
    assert all(empty.row_counts()[t] == 0 for t in GUARDED)


def test_a_team_store_records_its_kind_and_a_folder_leaves_it_to_home_json(used, backend):
    assert used.recorded_kind() == ("practice" if core.stores.backend_named(backend).team else None)


def test_role_separations_mapping_is_read_and_carried_where_the_back_end_has_database_users(used, empty, backend):
    """``store copy`` and role separation: a store never set up reports no database users and no
    tables' role; a team store maps an imported approver's entry to a user and reads it back (an
    entry it lacks is skipped); a SQLite store refuses in one sentence."""
    assert used.db_users() == ({}, None)
    if backend == "memory":
        pytest.skip("the memory back-end has no database users to map")
    if backend == "sqlite":
        with pytest.raises(ResolverError, match=r"^A SQLite home has no database users; role separation is for a team store\.$"):
            empty.map_db_users({"Ana": "someone_db"})
        return
    from core.stores.common import copy_columns

    columns = copy_columns("approvers")
    row = {"name": "Ana", "role": "team_lead", "public_key": "k", "added_at": "", "signature": "s", "private_key": ""}
    empty.import_rows("registry", [("approvers", columns, [tuple(row.get(c) for c in columns)])])
    assert empty.map_db_users({"Ana": "someone_db", "Nobody": "other_db"}) == 1
    assert empty.db_users() == ({"Ana": "someone_db"}, None)
