"""The home folder and the calls both faces (CLI and app) make on it.

One home folder holds all state: ``runs.sqlite`` (checkpoints, events, audit),
``larkfield.sqlite`` (the practice world), ``approval.key`` (the approval signing key, 0600)
and, when a trainer set one, ``clock.json``. It is ``./work`` by default, ``RESOLVER_HOME`` or
``--home DIR`` to change it; both databases are created on first use from ``data/``.

:class:`Home` is the one place the CLI and the app call for writes: run, resume, approve,
reject, execute, the weekend phone call, the demo queue, delete and reset. Reads go through
``home.queue``, the :class:`~core.queue.ApprovalQueue` beside it. Neither face opens the store
or the world itself, and neither holds logic the other lacks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from core.approval import approve, load_key, reject
from core.checkpoint import CheckpointStore, lease_owner_name
from core.clock import Clock
from core.errors import ResolverError
from core.executor import Interrupt, OnProgress, execute
from core.homekind import Kind, home_clock, home_kind, require_practice
from core.homepath import DEFAULT_HOME, HOME_ENV, resolve_home  # noqa: F401  (re-exported: the home's location)
from core.queue import ApprovalQueue, queue_columns
from core.runner import OnStep, continue_run, start_run
from core.state import TaskState
from core.world import World


@dataclass
class Resumed:
    """What :meth:`Home.resume` did: ``continued`` the loop, showed the ``request`` again,
    ``executed`` (reconciled and finished) the writes, or found the run ``final``."""

    kind: Literal["continued", "request", "executed", "final"]
    before: str
    state: TaskState


class Home:
    """The home folder at ``root`` with its store, world and key.

    Args:
        root: the folder (created if absent).
        clock: the clock for every "now" (default: the trainer's ``clock.json``, which is real
            time when the file is absent).

    Raises:
        ResolverError: the folder cannot be made (a file is in the way) or is read-only.

    ``kind`` is ``"practice"`` or ``"shop"`` (:mod:`core.homekind`): the app's top bar and
    ``resolver show`` show it. The clock is the trainer's ``clock.json`` (real time when the
    file is absent), always real time in a shop home.
    """

    def __init__(self, root: Path | str, clock: Clock | None = None) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ResolverError(f"Cannot use {self.root} as the home folder: {exc.strerror or exc}.") from None
        if not os.access(self.root, os.W_OK):
            raise ResolverError(f"The home folder {self.root} is read-only; choose another with --home or RESOLVER_HOME.")
        self.kind: Kind = home_kind(self.root)
        self.clock: Clock = clock or home_clock(self.root)
        self.store = CheckpointStore(self.root / "runs.sqlite", self.clock, summarize=queue_columns)
        self.world_path = self.root / "larkfield.sqlite"
        self.key_path = self.root / "approval.key"
        World(self.world_path, self.clock)  # built on first use
        self.queue = ApprovalQueue(self.store, self.world_path, self.clock)
        """The read side: pages, counts, the detail of a run, trace, compare, audit, changes."""

    def approval_key(self) -> bytes:
        """The approval signing key, read from ``approval.key`` (made on first use: 32 random
        bytes, mode 0600)."""
        return load_key(self.key_path)

    @staticmethod
    def lease_owner(label: str = "resolver") -> str:
        """A lease owner that names this process (``resolver-tui@host:pid:token``), for the
        ``owner`` of :meth:`approve`, :meth:`resume` and :meth:`execute`."""
        return lease_owner_name(label)

    def world(self, actor: str = "manual") -> World:
        """The practice world, writing as ``actor``."""
        return World(self.world_path, self.clock, actor=actor)

    # -- the agent's loop -----------------------------------------------------------------------

    def run(
        self,
        task_id: str,
        variant: str = "agent",
        model: str = "chat-small",
        repeat: int | None = None,
        run_id: str | None = None,
        on_step: OnStep | None = None,
        max_steps: int | None = None,
    ) -> TaskState:
        """A new run of ``task_id`` (see :func:`core.runner.start_run`)."""
        return start_run(self.store, self.world_path, self.clock, task_id, variant, model, repeat, run_id, on_step, max_steps)

    def resume(self, run_id: str, *, on_step: OnStep | None = None, on_progress: OnProgress | None = None,
               owner: str | None = None) -> Resumed:
        """Resume by status: ``running`` continues its loop from the checkpoint (no model call
        repeated); ``waiting_approval`` shows its request again; ``executing`` is reconciled and
        finished; a final status is left alone.

        Raises: RunNotFound, CorruptCheckpoint, UnsupportedSchemaVersion, LeaseHeld, NoRecording.
        """
        state = self.store.load(run_id)
        before = state.status
        if state.status == "running":
            return Resumed("continued", before, continue_run(self.store, self.world_path, self.clock, state, on_step))
        if state.status == "waiting_approval":
            return Resumed("request", before, state)
        if state.status == "executing":
            return Resumed("executed", before, self.execute(run_id, owner=owner, on_progress=on_progress))
        return Resumed("final", before, state)

    # -- decisions and execution ----------------------------------------------------------------

    def approve(
        self,
        run_id: str,
        role: str,
        name: str | None = None,
        digest: str | None = None,
        *,
        interrupt: Interrupt | None = None,
        owner: str | None = None,
        on_progress: OnProgress | None = None,
        expect_version: int | None = None,
    ) -> TaskState:
        """Approve (see :func:`core.approval.approve`) and then execute the run."""
        approve(self.store, self.approval_key(), run_id, role, name, digest, self.clock, expect_version)
        return self.execute(run_id, interrupt=interrupt, owner=owner, on_progress=on_progress)

    def reject(self, run_id: str, role: str, reason: str, name: str | None = None, digest: str | None = None) -> TaskState:
        """Reject with a reason (see :func:`core.approval.reject`)."""
        return reject(self.store, run_id, role, reason, name, digest, self.clock)

    def execute(self, run_id: str, *, interrupt: Interrupt | None = None, owner: str | None = None,
                on_progress: OnProgress | None = None) -> TaskState:
        """Execute or finish the approved operations (see :func:`core.executor.execute`)."""
        return execute(self.store, self.world_path, self.approval_key(), run_id, clock=self.clock, owner=owner,
                       interrupt=interrupt, on_progress=on_progress)

    # -- the world outside any run --------------------------------------------------------------

    def manual_refund(self, operation_id: str, order_id: str, amount: Decimal | str, reason_code: str,
                      payment_id: str) -> dict[str, Any]:
        """A refund made by hand, outside any run (seed 000's weekend phone call:
        ``manual-1``, LK-507862, 119.00 CAD, RFD-DOUBLE, PAY-507862-2 gives ``RF-4CFEAE8E``).

        Raises: ServiceRefused with the payment service's sentence; ShopRefused in a shop home.
        """
        require_practice(self.root, "`manual-refund` (the lesson's weekend phone call)")
        return self.world("manual").request_refund(operation_id, order_id, amount, reason_code, payment_id)

    def load_demo(self) -> list[str]:
        """Fill this empty home with the Larkfield demo queue (see :func:`core.demo.build_demo`);
        one line per run made. Raises ResolverError when the home already has saved runs."""
        from core.demo import build_demo  # demo builds Homes of its own

        return build_demo(self)

    def delete(self, run_id: str) -> None:
        """Delete one run and its events (a corrupt one, say); the audit keeps its rows.
        Raises RunNotFound."""
        self.store.delete(run_id)

    def reset(self, everything: bool = False) -> int:
        """Delete the saved runs (and with ``everything`` rebuild the practice world).
        Returns the number of runs deleted. Raises ShopRefused in a shop home."""
        require_practice(self.root, "`reset`")
        n = self.store.reset()
        if everything:
            self.world().reset()
        return n
