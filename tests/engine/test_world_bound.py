"""The approval is bound to the world the approver read. The approve dialog (and the CLI) run the
read-only lookups again; the decision carries what they returned; when it is recorded they run
again and any difference refuses it with the section as it is now. A run saved with checkpoint
schema 4 (before this field) still resumes, approves and executes."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from core.api.home import Home
from core.api.queue import ApprovalQueue
from core.engine.approval import verify
from core.ground.clock import FixedClock
from core.ground.errors import WorldChanged
from core.ground.state import SCHEMA_VERSION, TaskState, migrate

from helpers import MONDAY, T65273_RUN

FIXTURES = Path(__file__).parent.parent / "fixtures"
HOME_V4 = FIXTURES / "home_schema_4"
T90104_V4 = "T-90104-agent_structured-chat-strong-1"  # approved with a schema-4 approval, crashed before its refund


def _refunds(home: Home) -> list[tuple[str, str]]:
    with sqlite3.connect(home.world_path) as conn:
        return conn.execute("SELECT refund_id, amount FROM refunds ORDER BY refund_id").fetchall()


def _weekend_call(home: Home) -> None:
    home.world("manual").request_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")


def test_an_approval_carries_what_the_lookups_returned_and_its_signature_covers_it(home):
    state = home.run("T-65273")
    seen = home.queue.look(state)
    assert [x.tool for x in seen.lookups] == [ev.tool for ev in state.evidence] and seen.effects == []
    done = home.approve(state.run_id, "team_lead", "Grace", seen=seen)
    assert done.status == "done"
    assert done.approval is not None and done.approval.world is not None
    assert done.approval.world.fingerprint == seen.fingerprint
    forged = done.model_copy(deep=True)
    assert forged.approval is not None and forged.approval.world is not None
    forged.approval.world.lookups[0].result = {"edited": True}
    assert "signature does not verify" in (verify(forged, home.approval_key()) or "")


def test_a_world_change_between_reading_and_deciding_refuses_the_approval_with_the_new_section(home):
    state = home.run("T-65273")
    seen = home.queue.look(state)  # the dialog opened: nothing changed yet
    assert "nothing: the lookups give the same results now." in "\n".join(home.queue.world_now(state, seen)[0])
    _weekend_call(home)  # another process, while the dialog is open
    with pytest.raises(WorldChanged) as refused:
        home.approve(state.run_id, "team_lead", "Grace", seen=seen)
    section = "\n".join(refused.value.lines)
    assert section.startswith("What changed since the agent looked:")
    assert "refunded: 0.00 then 119.00" in section and "Preconditions that fail now:" in section
    after = home.store.load(state.run_id)
    assert after.status == "waiting_approval" and after.approval is None
    assert _refunds(home) == [("RF-4CFEAE8E", "119.00")]  # only the weekend's
    assert [a["decision"] for a in home.store.audit(state.run_id)] == ["refused:world"]
    # Read again, the approval binds to the new world and goes on to the write (a practice home:
    # the service refuses it there, seed 000's Monday).
    again = home.approve(state.run_id, "team_lead", "Grace", seen=home.queue.look(state))
    assert again.status == "handed_to_person" and len(_refunds(home)) == 1


def test_the_cli_prints_the_section_as_it_is_now_when_the_world_moved_under_it(cli, monkeypatch):
    assert cli("run", "T-65273")[0] == 0
    real = ApprovalQueue.look

    def look_then_someone_refunds(self, state):
        seen = real(self, state)
        _weekend_call(Home(cli.home))  # between the CLI's read and its decision
        return seen

    monkeypatch.setattr(ApprovalQueue, "look", look_then_someone_refunds)
    code, out, err = cli("approve", T65273_RUN, "--as", "team_lead", "--name", "Grace")
    assert code == 4, (out, err)
    assert "What changed since the agent looked:" in out and "refunded: 0.00 then 119.00" in out
    assert "The world changed while you read run" in err
    assert Home(cli.home).store.load(T65273_RUN).status == "waiting_approval"


def test_a_v4_checkpoint_loads_as_current_with_an_approval_without_world():
    raw = json.loads((FIXTURES / "task_state_v4.json").read_text())
    assert raw["schema_version"] == 4 and "world" not in raw["approval"]
    state = TaskState.model_validate(migrate(raw))
    assert state.schema_version == SCHEMA_VERSION == 7
    assert state.approval is not None and state.approval.world is None
    assert state.proposal is not None and state.proposal.preconditions  # a v4 proposal keeps its binding


@pytest.fixture
def v4_home(tmp_path: Path) -> Home:
    root = tmp_path / "home"
    shutil.copytree(HOME_V4, root)
    (root / "approval.key").chmod(0o600)
    return Home(root, clock=FixedClock(MONDAY))


def test_a_run_waiting_over_the_upgrade_resumes_and_approves(v4_home):
    resumed = v4_home.resume(T65273_RUN)
    assert resumed.kind == "request" and resumed.state.schema_version == SCHEMA_VERSION
    state = v4_home.approve(T65273_RUN, "team_lead", "Grace", seen=v4_home.queue.look(resumed.state))
    assert state.status == "done" and [op.status for op in state.operations] == ["done", "done"]
    assert state.approval is not None and state.approval.world is not None
    assert [amount for _id, amount in _refunds(v4_home)] == ["119.00"]


def test_a_schema_4_approval_still_verifies_and_finishes_its_writes(v4_home):
    # resumed within the approval's hour (Friday 17:00): a crash before the write has not started
    # its execution, so on Monday it would lapse back to waiting instead
    v4_home = Home(v4_home.root, clock=FixedClock("2026-10-09T17:30:00-04:00"))
    state = v4_home.store.load(T90104_V4)
    assert state.status == "executing" and state.approval is not None and state.approval.world is None
    assert verify(state, v4_home.approval_key()) is None
    done = v4_home.resume(T90104_V4)
    assert done.kind == "executed" and done.state.status == "done"
    assert [amount for _id, amount in _refunds(v4_home)] == ["9.95"]
