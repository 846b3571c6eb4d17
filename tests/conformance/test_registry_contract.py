"""The approvers registry's rows (core/engine/approvers.py ``ApproverRows``), run against every back-end
(tests/conformance/conftest.py): rows in the order added, each change all or nothing, and a
registry whose signatures and seal hold over the back-end's rows."""

from __future__ import annotations

import pytest
from core.engine.approvers import Registry
from core.ground.clock import parse_time
from core.ground.errors import ApprovalRefused

ROW = ("Grace", "grace", "ab" * 32, "2026-10-09T17:00:00-04:00", None, "sig-1", "PEM-1", "REC-1")


def test_nothing_is_made_before_the_first_change(registry_rows):
    assert registry_rows.rows() == []
    assert not registry_rows.exists()


def test_a_change_writes_rows_in_the_order_added_and_edits_them(registry_rows):
    with registry_rows.change() as tx:
        tx.insert(ROW)
        tx.insert(("Ana", "team_lead", "cd" * 32, "2026-10-09T17:01:00-04:00", None, "sig-2", "PEM-2", None))
        assert [r[0] for r in tx.rows()] == ["Grace", "Ana"]  # the change sees its own writes
    assert registry_rows.exists()
    with registry_rows.change() as tx:
        tx.set_revoked("Ana", "2026-10-10T09:00:00-04:00", "sig-3")
        tx.set_keys("Grace", "PEM-1b", "REC-1b")
        tx.replace_key("Ana", "PEM-old", "PEM-x")  # no longer the key it names: nothing
    rows = {r[0]: r for r in registry_rows.rows()}
    assert rows["Ana"][4:8] == ("2026-10-10T09:00:00-04:00", "sig-3", "PEM-2", None)
    assert rows["Grace"][6:8] == ("PEM-1b", "REC-1b")
    with registry_rows.change() as tx:
        tx.replace_key("Ana", "PEM-2", "PEM-2b")
    assert {r[0]: r for r in registry_rows.rows()}["Ana"][6] == "PEM-2b"


def test_a_change_that_fails_writes_nothing(registry_rows):
    with registry_rows.change() as tx:
        tx.insert(ROW)
    with pytest.raises(RuntimeError), registry_rows.change() as tx:
        tx.insert(("Bot", "agent", "ef" * 32, "2026-10-09T17:02:00-04:00", None, "sig", "PEM", None))
        tx.set_revoked("Grace", "2026-10-10T09:00:00-04:00", "x")
        raise RuntimeError("the seal could not be written")
    assert registry_rows.rows() == [ROW]


def test_a_name_is_one_entry_whatever_its_case(registry_rows):
    with registry_rows.change() as tx:
        tx.insert(ROW)
    with pytest.raises(Exception), registry_rows.change() as tx:  # noqa: B017 - each back-end says it its way
        tx.insert(("grace", "agent", "ef" * 32, "2026-10-09T17:02:00-04:00", None, "sig", "PEM", None))
    assert [r[0] for r in registry_rows.rows()] == ["Grace"]


def test_a_registry_over_the_back_ends_rows_signs_verifies_and_revokes(backend, registry_rows, tmp_path):
    registry = Registry(tmp_path / "shop")  # the shop folder keeps the seal; its rows are the back-end's
    now = parse_time("2026-10-09T17:00:00-04:00")
    made = registry.init("Grace", "correct horse battery staple", now)
    assert made.owner == "Grace" and registry.exists()
    registry.add("Ana", "team_lead", "ana's long passphrase 1", "correct horse battery staple", now)
    assert registry.problems() == []
    assert registry.unlock("Ana", "ana's long passphrase 1").role == "team_lead"
    registry.revoke("Ana", "correct horse battery staple", now)
    assert registry.problems() == [] and registry.version() == 3
    with pytest.raises(ApprovalRefused, match="was revoked"):
        registry.valid_entry("Ana")
