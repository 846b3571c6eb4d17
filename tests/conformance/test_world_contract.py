"""The practice world's contract (core/contract/world.py), run against every back-end
(tests/conformance/conftest.py): idempotent write services that check their own invariants, the
operations register, the read-only tools, and the write services' table."""

from __future__ import annotations

from decimal import Decimal

import pytest
from core.contract.world import WRITE_SERVICES, ServiceRefused, UnknownTool, derived_id
from core.ground.state import RefundAction, ReplyAction, ReshipAction, ReturnLabelAction


def test_the_weekend_refund_has_the_seed_id_and_a_second_call_changes_nothing(world):
    first = world.request_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    again = world.request_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    assert first["refund_id"] == "RF-4CFEAE8E" == derived_id("RF", "manual-1")
    assert again == first
    assert len(world.refunds_of("LK-507862")) == 1
    assert world.lookup_operation("manual-1")["result"] == first


def test_a_refund_of_a_refunded_charge_is_refused_with_the_services_sentence(world):
    world.request_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    with pytest.raises(ServiceRefused, match=r"^PAY-507862-2 is not a captured charge of LK-507862$"):
        world.request_refund("op-2", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    with pytest.raises(ServiceRefused, match="is not a captured charge of LK-640436"):
        world.request_refund("op-3", "LK-640436", "1.00", "RFD-DOUBLE", "PAY-507862-1")
    assert world.lookup_operation("op-2") is None


def test_a_refund_cannot_exceed_what_is_left(world):
    world.request_refund("a", "LK-793996", "9.95", "RFD-LATE", "PAY-793996-1")
    with pytest.raises(ServiceRefused, match=r"more than the 48\.00 CAD left"):
        world.request_refund("b", "LK-793996", "50.00", "RFD-LATE", "PAY-793996-1")


def test_reship_only_items_of_the_order_and_one_label_per_item(world):
    world.reship_item("r1", "LK-640436", "PLANTER", 1)
    with pytest.raises(ServiceRefused, match="MUG-SET is not an item of LK-640436"):
        world.reship_item("r2", "LK-640436", "MUG-SET", 1)
    world.create_return_label("l1", "LK-640436", "PLANTER", "damaged", "free")
    with pytest.raises(ServiceRefused, match="already has return label"):
        world.create_return_label("l2", "LK-640436", "PLANTER", "damaged", "free")


def test_changes_lists_every_write_and_reset_forgets_them(home, world):
    world.request_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    world.send_reply("m1", "LK-507862", "C-1001", "Hello")
    assert [c["kind"] for c in world.changes()] == ["refund", "reply"]
    home.reset(everything=True)
    assert home.world().changes() == []
    assert home.world().get_payments("LK-507862")[1]["status"] == "captured"


def test_tools_return_json_evidence_and_refuse_unknown_tools(world):
    assert world.call_tool("get_order", {"order_id": "LK-507862"})["total"] == "119.00"
    assert world.call_tool("get_order", {"order_id": "LK-000000"}) == {"error": "No order LK-000000"}
    assert world.call_tool("get_policy", {"rule_id": "W7"})["rule_id"] == "W7"
    with pytest.raises(UnknownTool):
        world.call_tool("delete_everything", {})
    with pytest.raises(UnknownTool):
        world.call_tool("get_order", {"id": "x"})


def test_every_action_type_has_its_write_service():
    assert set(WRITE_SERVICES) == {
        t.model_fields["type"].default for t in (RefundAction, ReshipAction, ReturnLabelAction, ReplyAction)
    }


def test_call_service_dispatches_through_the_table(home):
    world = home.world("test")
    result = world.call_service(
        "op-1", RefundAction(order_id="LK-793996", amount=Decimal("9.95"), reason_code="RFD-LATE", payment_id="PAY-793996-1")
    )
    assert result["amount"] == "9.95" and world.lookup_operation("op-1")["service"] == "request_refund"


def test_two_writers_at_once_number_the_register_in_commit_order(home):
    """Every entry's number is taken in its write's transaction, in commit order, so a reader never
    sees a number whose predecessor is not yet committed (no gap, at any moment)."""
    import threading

    from core.stores import register_entries

    writers = [home.world("writer-a"), home.world("writer-b")]
    start = threading.Barrier(len(writers) + 1)
    done = threading.Event()
    failed: list[BaseException] = []
    samples: list[list[int]] = []

    def write(world, who: str) -> None:
        try:
            start.wait()
            for n in range(20):
                world.send_reply(f"{who}-{n}", "LK-507862", "C-1001", f"Hello {n}")
        except BaseException as exc:  # pragma: no cover - reported below
            failed.append(exc)

    def read() -> None:
        start.wait()
        while not done.is_set():
            samples.append([e["seq"] for e in register_entries(home.world_at)])

    threads = [threading.Thread(target=write, args=(w, w.actor)) for w in writers]
    reader = threading.Thread(target=read)
    for t in (*threads, reader):
        t.start()
    for t in threads:
        t.join()
    done.set()
    reader.join()
    assert failed == []
    assert all(seqs == list(range(1, len(seqs) + 1)) for seqs in samples)  # never a gap
    entries = register_entries(home.world_at)
    assert [e["seq"] for e in entries] == list(range(1, 41))
    for who in ("writer-a", "writer-b"):  # each writer's entries in the order it wrote them
        mine = [e["operation_id"] for e in entries if e["actor"] == who]
        assert mine == [f"{who}-{n}" for n in range(20)]
    assert home.world().register_seq() == 40
