"""The Larkfield demo queue, made by the real runner and executor from ``data/``.

Nothing here is written by hand: each run is a real run of a recorded ticket, saved by the
checkpoint store, and the decided ones went through the real approval code and executor. Times
start on the last Friday at 16:30 (America/Toronto) before the home's clock, a few minutes apart,
so on Monday morning the oldest request has waited ``2d 16h``.

The runs' unique identities come from a seeded source (:class:`core.ground.identity.SeededRunUids`),
so their operation IDs, the snapshots and the screenshots are the same every time. The seed
counts the decisions the home's audit already holds, so a demo loaded again after a reset never
reuses an identity (or an idempotency key) of the demo before it. The demo is for practice
homes: in a shop home it is refused.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime, timedelta

from core.api.home import Home
from core.api.homekind import require_practice
from core.engine.executor import SimulatedCrash
from core.engine.runner import LoopCrash, crash_after_step
from core.ground.clock import SHOP_TZ, FixedClock
from core.ground.errors import ResolverError
from core.ground.identity import SeededRunUids, using

WAITING = [
    ("T-65273", "agent", "chat-small", 1),  # the double charge of seed 000: team lead or above
    ("T-90103", "agent", "chat-small", 1),  # the cracked planter: reship and free label
    ("T-24410", "agent", "chat-small", 1),
    ("T-49004", "agent", "chat-small", 1),
    ("T-27245", "agent", "chat-small", 1),  # markup-like customer text
    ("T-17910", "agent", "chat-small", 1),  # a terminal escape sequence in the ticket
    ("T-45114", "agent", "chat-small", 1),
    ("T-90103", "agent", "chat-small", 2),  # the common mistake: run again, a different proposal
]


DEMO_MAX_AGE = timedelta(days=4)
"""The demo's oldest run is never older than this, so its evidence is well inside the policy's
``evidence_max_age_s`` (so the README's main job never opens on expired runs)."""


def friday_before(now: datetime) -> datetime:
    """The last Friday 16:30 America/Toronto at least a day before ``now``; when that is more
    than :data:`DEMO_MAX_AGE` back (Tuesday to Friday), ``now`` less 2 days 16 hours 30 minutes
    instead: the same waiting times as on Monday morning, relative to the home's clock."""
    local = now.astimezone(SHOP_TZ) - timedelta(days=1)
    back = (local.weekday() - 4) % 7
    friday = (local - timedelta(days=back)).replace(hour=16, minute=30, second=0, microsecond=0)
    if now - friday > DEMO_MAX_AGE:
        return (now - timedelta(days=2, hours=16, minutes=30)).astimezone(SHOP_TZ).replace(second=0, microsecond=0)
    return friday


def build_demo(home: Home) -> list[str]:
    """Fill an empty home with the demo queue; returns one line per run made.

    Raises:
        ResolverError: the home already has saved runs (reset it first).
        ShopRefused: a shop home.
    """
    require_practice(home.root, "the demo queue", home.kind)
    existing = sum(home.store.counts().values())
    if existing:
        raise ResolverError(
            f"The home already has {existing} saved run(s); the demo queue needs an empty one (`resolver reset --all`)."
        )
    with using(SeededRunUids(f"demo:{len(home.store.audit())}")):
        return _build(home)


def _build(home: Home) -> list[str]:
    clock = FixedClock(friday_before(home.clock.now()))
    demo = Home(home.root, clock=clock)
    made: list[str] = []

    def tick(minutes: int = 4) -> None:
        clock.advance(timedelta(minutes=minutes))

    for task, variant, model, repeat in WAITING:
        s = demo.run(task, variant, model, repeat)
        made.append(f"{s.run_id}: {s.status}")
        tick()

    s = demo.run("T-41629", repeat=1)  # the refund service times out once: done in 2 calls
    s = demo.approve(s.run_id, "grace", "Grace")
    made.append(f"{s.run_id}: {s.status}")
    tick()

    s = demo.run("T-81029", repeat=1)  # the reship service times out 3 times: handed to a person
    s = demo.approve(s.run_id, "grace", "Grace")
    made.append(f"{s.run_id}: {s.status}")
    tick()

    s = demo.run("T-10222", repeat=1)
    s = demo.reject(s.run_id, "team_lead", "The photo shows a scratch, not a break: offer a discount instead.", "Tomás")
    made.append(f"{s.run_id}: {s.status}")
    tick()

    with suppress(LoopCrash):  # a crash in the middle of the loop: saved after step 1, status running
        demo.run("T-97580", repeat=1, on_step=crash_after_step(1))
    made.append("T-97580-agent-chat-small-1: running (crashed after step 1)")
    tick()

    # Approved by an agent and stopped just before the refund is written, ten minutes before the
    # home's now: the service was never called, so the execution has not started and the
    # approval holds for an hour; within it `u` finishes the refund in 1 call.
    friday = clock.now()
    clock.set(home.clock.now() - timedelta(minutes=10))
    s = demo.run("T-90104", "agent_structured", "chat-strong", 1)
    with suppress(SimulatedCrash):
        demo.approve(s.run_id, "agent", "Amira", interrupt="before-write")
    made.append(f"{s.run_id}: executing (stopped before a write)")
    clock.set(friday)
    tick()

    for task in ("T-46819", "T-23776"):  # a reply only (done) and a chargeback (handed to a person)
        s = demo.run(task, repeat=1)
        made.append(f"{s.run_id}: {s.status}")
        tick()

    s = demo.run("T-83376", repeat=1, max_steps=1)  # the step limit: stopped
    made.append(f"{s.run_id}: {s.status}")
    return made
