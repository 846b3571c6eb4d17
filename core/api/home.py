"""The home folder and the calls both faces (CLI and app) make on it.

One home folder holds all state: ``runs.sqlite`` (checkpoints, events, audit),
``larkfield.sqlite`` (the practice world), ``approval.key`` (the approval signing key, 0600)
and, when a trainer set one, ``clock.json``; on a team store all of these are in the
store, and the folder keeps only what is per person: the log (and the config file, wherever it
is). It is ``--home DIR``, ``RESOLVER_HOME`` or ``home`` in the config file, else the default of
:func:`core.ground.homepath.default_home` (``./work`` in the project folder or where it holds a
home, else the user's data folder); both databases are created on first use from ``data/``.

:class:`Home` is the one place the CLI and the app call for writes: run, resume, approve,
reject, execute, the weekend phone call, the demo queue, delete and reset. Reads go through
``home.queue``, the :class:`~core.api.queue.ApprovalQueue` beside it. Neither face opens the store
or the world itself, and neither holds logic the other lacks.

The home's parts are opened through :mod:`core.stores`: the checkpoint store
(:class:`core.contract.store.Store`), the practice world (:class:`core.contract.world.World`) and, in a shop home,
the approvers' rows: SQLite files in the folder, or the team store on PostgreSQL that
``store`` names.
"""

from __future__ import annotations

import functools
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from core.api.homekind import Kind, home_clock, home_kind, require_practice, team_kind
from core.api.queue import ApprovalQueue, queue_columns
from core.contract.approval_key import load_key, load_stored_key
from core.contract.audit import AuditMoved
from core.contract.store import JournalKey, QueueChanges, ShopParts, Store, lease_owner_name
from core.contract.world import World, WorldMissing
from core.engine.approval import approve, reject
from core.engine.executor import Interrupt, OnProgress, execute
from core.engine.preconditions import drift
from core.engine.runner import OnStep, continue_run, start_run
from core.ground.clock import Clock, FileClock, iso
from core.ground.data import load_policy
from core.ground.errors import ApprovalRefused, ResolverError, StoreConflict
from core.ground.homepath import (  # noqa: F401  (re-exported: where the home is, and why)
    CONFIG_ENV,
    DEFAULT_HOME,
    HOME_ENV,
    HomeLocation,
    config_home,
    config_path,
    locate_home,
    read_config,
    resolve_home,
    team_label,
)
from core.ground.log import command_log
from core.ground.platform import require_posix
from core.ground.state import TaskState, WorldSeen
from core.ground.tickets import TICKETS, add_ticket
from core.models.model import LiveRoute, Model, live_route_of, load_routes, recorded_route
from core.models.pick import model_for
from core.models.record import RECORDINGS, Recorded, turns_of, write_recording
from core.stores import (
    Place,
    adopt_folder_parts,
    check_world,
    folder_journal_key,
    open_shop_parts,
    open_store,
    open_world,
    queue_listener,
    reset_world,
    store_path,
    world_path,
)

_T = TypeVar("_T")

DECIDE_ATTEMPTS = 5
"""Attempts in all of one decision (approve, reject, refresh, a mark) before its error reaches
the person (:meth:`Home._signed`): a store undoing a write to let another's through is a
moment's contention among approvers, not something they must retry by hand."""

if TYPE_CHECKING:
    from core.engine.approvers import Registry, Unlocked
    from core.engine.signing import DecisionSigner
    from core.ground.tickets import Added

HOME_MODE = 0o700
"""The home folder's mode: only its owner may list or enter it."""
FILE_MODE = 0o600
"""The mode of every file of the home: databases (their WAL and SHM files follow the database's
mode in SQLite), key, clock, log."""


def private(path: Path) -> None:
    """Make ``path`` and its SQLite companions (``-wal``, ``-shm``) mode 0600 where they exist."""
    for each in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            if each.is_file():
                each.chmod(FILE_MODE)
        except OSError:
            pass


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
        afresh: make ``runs.sqlite`` again though it is missing or empty in a home that has been
            used (``resolver reset --all`` and ``resolver restore`` only: every other use refuses
            such a lost store).

    Raises:
        ResolverError: the folder cannot be made (a file is in the way) or is read-only; the
            machine is not POSIX (:mod:`core.ground.platform`).
        UnsupportedStoreFormat: ``runs.sqlite`` is lost (missing or empty in a used home),
            foreign, or of a newer format.

    A new folder is made 0700 and the databases it makes 0600 (:data:`HOME_MODE`,
    :data:`FILE_MODE`; SQLite gives their WAL and SHM files the database's mode). Decisions,
    refusals and executor calls are written to the home's log (``self.log``, :mod:`core.ground.log`).

    ``kind`` is ``"practice"`` or ``"shop"`` (:mod:`core.api.homekind`): the app's top bar and
    ``resolver show`` show it. The clock is the trainer's ``clock.json`` (real time when the
    file is absent), always real time in a shop home.
    """

    def __init__(
        self,
        root: Path | str,
        clock: Clock | None = None,
        *,
        read_only: bool = False,
        store: str | None = None,
        afresh: bool = False,
    ) -> None:
        require_posix()  # leases test their holder with os.kill(pid, 0), which ends a process on Windows
        self.root = Path(root)
        self.store_url = store
        """The team store's PostgreSQL URL, or None: SQLite files in this folder."""
        self.world_path = world_path(self.root)
        """The practice world's SQLite file (used when :attr:`store_url` is None)."""
        self.world_at: Place = store if store is not None else self.world_path
        """Where the practice world is: :attr:`world_path`, or the team store's URL."""
        self._store_at: Place = store if store is not None else store_path(self.root)
        if read_only and self.root.is_dir() and not os.access(self.root, os.W_OK):
            self._open_read_only(clock)
            return
        made = not self.root.exists()
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=HOME_MODE)
            if made:
                self.root.chmod(HOME_MODE)
        except OSError as exc:
            raise ResolverError(f"Cannot use {self.root} as the home folder: {exc.strerror or exc}.") from None
        if not os.access(self.root, os.W_OK):
            raise ResolverError(f"The home folder {self.root} is read-only; choose another with --home or RESOLVER_HOME.")
        self.parts: ShopParts = open_shop_parts(self.root, store)
        """The per-shop parts (:class:`core.contract.store.ShopParts`): the seal, the audit head, the
        practice key and the trainer's clock, as files in the folder or rows of the team store."""
        self.kind: Kind = home_kind(self.root) if store is None else team_kind(self.root, store)
        self.clock: Clock = clock or home_clock(self.root, store, self.kind)
        self.key_path = self.root / "approval.key"
        if store is not None:  # a folder of the release before migration 6 kept the seal and head itself
            try:
                adopt_folder_parts(self.root, self.parts)
            except OSError as exc:
                raise ResolverError(
                    f"Cannot move {self.root}'s per-shop files into the team store: {exc.strerror or exc}."
                ) from None
        fresh = [] if store is not None else [p for p in (store_path(self.root), self.world_path) if not p.exists()]
        old_umask = os.umask(0o077)  # files made now are 0600 (SQLite gives WAL and SHM the database's mode)
        try:
            self.store: Store = open_store(
                self._store_at, self.clock, summarize=queue_columns, afresh=afresh, journal_key=self._journal_key(make=True)
            )
            try:  # a lost world in a used home is never rebuilt: every use of it says so
                check_world(self.world_at, self.store.has_history())
                open_world(self.world_at, self.clock)  # built on first use
            except WorldMissing:
                if store is not None or self.world_path.is_dir():
                    raise
        finally:
            os.umask(old_umask)
        for path in fresh:
            if path.exists():
                private(path)
        self.log = command_log(self.root)
        """The home's log (``resolver.log``, :mod:`core.ground.log`): decisions, refusals, executor calls, errors."""
        self.queue = ApprovalQueue(self.store, self.world_at, self.clock, self.root, kind=self.kind)
        """The read side: pages, counts, the detail of a run, trace, compare, audit, changes."""

    @functools.cached_property
    def runs_live_at(self) -> str | None:
        """None for the home folder's SQLite files; for a team store its label for the app's
        top bar (:func:`core.ground.homepath.team_label`: database and server, no password). Computed
        once: a Home's store never changes."""
        return None if self.store_url is None else team_label(self.store_url)

    def queue_changes(self) -> QueueChanges | None:
        """A listener of the live queue, not started: on a team store a
        ``LISTEN`` on its channel (:class:`core.contract.store.QueueChanges`), which hears every save,
        decision, claim and hand-over of any machine at its commit; None on the home folder's
        SQLite files, where the app polls (:attr:`ResolverApp.refresh_interval`)."""
        return None if self.store_url is None else queue_listener(self.store_url)

    @classmethod
    def at(cls, where: HomeLocation, clock: Clock | None = None, *, read_only: bool = False) -> Home:
        """The home :func:`locate_home` found: its folder, on the store it chose."""
        return cls(where.path, clock, read_only=read_only, store=where.store.url)

    def _open_read_only(self, clock: Clock | None) -> None:
        """Open a home this process may not write, for the commands that only read (``runs``,
        ``show``, ``trace``, ``diff``, ``changes``, ``audit``, ``backup``): nothing is made,
        migrated or chmod-ed; the databases are opened as they are (SQLite opens a file it may
        not write read-only). A store in an older format cannot be read this way: its sentence
        says to open the home once as its owner."""
        self.parts = open_shop_parts(self.root, self.store_url)
        self.kind = home_kind(self.root) if self.store_url is None else team_kind(self.root, self.store_url, record=False)
        self.clock = clock or home_clock(self.root, self.store_url, self.kind)
        self.key_path = self.root / "approval.key"
        if self.store_url is None:
            for path in (store_path(self.root), self.world_path):
                if not path.is_file():
                    raise ResolverError(f"{self.root} has no {path.name} and is read-only to you: nothing to read.")
        self.store = open_store(self._store_at, self.clock, summarize=queue_columns, journal_key=self._journal_key(make=False))
        self.log = command_log(self.root)
        self.queue = ApprovalQueue(self.store, self.world_at, self.clock, self.root, kind=self.kind)

    def _journal_key(self, *, make: bool) -> JournalKey | None:
        """What seals and checks the journal of model calls of this home's SQLite store: its
        ``approval.key`` (:func:`core.stores.folder_journal_key`), read when the store first needs
        it; made then if missing when ``make`` (a shop home makes it even with approvals in
        flight: its decisions are Ed25519-signed, never by this key). None on a team store, whose
        database stamps each journal row with the user that wrote it."""
        if self.store_url is not None:
            return None
        return folder_journal_key(self.root, make=make, in_flight_ok=self.kind == "shop")

    def approval_key(self) -> bytes:
        """The approval signing key, read from ``approval.key`` (made on first use: 32 random
        bytes, mode 0600), or on a team store from its part of that name."""
        if self.store_url is not None:
            return load_stored_key(self.parts, in_flight=self.store.approvals_in_flight)
        return load_key(self.key_path, in_flight=self.store.approvals_in_flight)  # counted only when the key is missing

    def trainer_clock(self) -> FileClock:
        """The trainer's clock of this practice home, for ``resolver clock``: ``clock.json`` in
        the folder, or the team store's part of that name."""
        return FileClock(self.root / "clock.json", parts=self.parts if self.store_url is not None else None)

    def _hmac_key(self) -> bytes:
        """The key decisions are checked with: ``approval.key`` in a practice home; nothing in a
        shop home, where every decision is Ed25519-signed and an HMAC one is never accepted
        (:func:`core.engine.signing.check_approval`), so a shop home never needs ``approval.key`` to
        approve or resume."""
        return b"" if self.kind == "shop" else self.approval_key()

    @staticmethod
    def lease_owner(label: str = "resolver") -> str:
        """A lease owner that names this process (``resolver-tui@host:pid:token``), for the
        ``owner`` of :meth:`approve`, :meth:`resume` and :meth:`execute`."""
        return lease_owner_name(label)

    def world(self, actor: str = "manual") -> World:
        """The practice world, writing as ``actor``."""
        return open_world(self.world_at, self.clock, actor=actor)

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
        *,
        live: LiveRoute | None = None,
    ) -> TaskState:
        """A new run of ``task_id`` (see :func:`core.engine.runner.start_run`): by a recording, or by the
        live chat-completions route ``live`` (its name is then the run's model)."""
        return start_run(
            self.store,
            self.world_at,
            self.clock,
            task_id,
            variant,
            model,
            repeat,
            run_id,
            on_step,
            max_steps,
            live=live,
            pick=self.model_for,
            tickets=self.root / TICKETS,
            recordings=self.root / RECORDINGS,
        )

    def record(self, task_id: str, live: LiveRoute, variant: str = "agent", on_step: OnStep | None = None) -> Recorded:
        """Run ``task_id`` on the live route ``live`` and write what the model answered as a
        recording of the data format in this home (``recordings/TASK.json``,
        :mod:`core.models.record`), its model the route's priced model and its repeat the next free
        one; ``resolver run TASK --model MODEL --repeat N`` replays it.

        Raises:
            ShopRefused: a shop home (recordings are the trainer's, as the lesson's commands are).
            ModelUnavailable: the live model gave no usable answer (the run stays resumable; no
                recording is written).
            ResolverError: the run ended without the model's outcome (its step limit or budget).
        """
        require_practice(self.root, "`record`", self.kind)
        state = self.run(task_id, variant, live=live, on_step=on_step)
        path, recording = write_recording(self.root / RECORDINGS, task_id, variant, live.priced_as, turns_of(self.store, state))
        return Recorded(path=path, recording=recording, state=state)

    def add_ticket(self, path: Path) -> Added:
        """Add the ticket in ``path`` (TOML or JSON) to this home's ``tickets/``
        (:func:`core.ground.tickets.add_ticket`), where ``run``, ``record``, the views and the executor
        find it after ``data/tickets``.

        Raises:
            ShopRefused: a shop home (a ticket of one's own is the trainer's, as a recording is).
            TicketInvalid: every mistake of the file, one sentence each; nothing written.
        """
        require_practice(self.root, "`ticket add`")
        return add_ticket(Path(path), self.root / TICKETS)

    def model_for(self, state: TaskState) -> Model:
        """The model a run asks, picked from its saved model route (:func:`core.models.pick.model_for`):
        the recorded model, or a live chat-completions client (which needs the ``openai`` extra),
        journaled in this home's store so a resume never pays twice for an answer received.

        Raises: NoRecording, ResolverError (no ``openai`` package, a route that does not read).
        """
        return model_for(state, self.store, self.root / RECORDINGS)

    def resume(
        self,
        run_id: str,
        *,
        on_step: OnStep | None = None,
        on_progress: OnProgress | None = None,
        owner: str | None = None,
        accept_changes: bool = False,
    ) -> Resumed:
        """Resume by status: ``running`` continues its loop from the checkpoint (no model call
        repeated) if the policy, the tool schema and the model route (for a live route: the
        config file's table of that name, when there is one) are still the ones it started
        under, or ``accept_changes`` (:func:`core.engine.runner.continue_run`); ``waiting_approval``
        shows its request again; ``executing`` is reconciled and finished; a final status is
        left alone. Only a running loop is checked.

        Raises: RunNotFound, CorruptCheckpoint, UnsupportedSchemaVersion, LeaseHeld, NoRecording,
        ResumeChanged (a change not accepted: nothing changed), BadArgument (a config file that
        does not read, for a live route), ModelUnavailable (a live model that gave no usable
        answer: the run stays resumable).
        """
        state = self.store.load(run_id)
        before = state.status
        if state.status == "running":
            live = live_route_of(state.meta.model_route)
            now = load_routes().get(live.name) if live is not None else None
            if (
                now is not None
                and live is not None
                and (now.base_url, now.model, now.priced_as)
                == (
                    live.base_url,
                    live.model,
                    live.priced_as,
                )
            ):
                now = None  # the same model at the same price: a timeout or retries changed is no change
            route_now = now.route() if now is not None else None
            if live is None:  # the recording its variant, model and repeat name
                route_now = recorded_route(state.variant, state.model, state.repeat)
            return Resumed(
                "continued",
                before,
                continue_run(
                    self.store,
                    self.world_at,
                    self.clock,
                    state,
                    on_step,
                    owner=owner,
                    pick=self.model_for,
                    accept_changes=accept_changes,
                    route_now=route_now,
                ),
            )
        if state.status == "waiting_approval":
            return Resumed("request", before, state)
        if state.status == "executing":
            return Resumed("executed", before, self.execute(run_id, owner=owner, on_progress=on_progress))
        self.store.clear_dead_lease(run_id)  # a lease left behind by a killed process
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
        signer: Unlocked | None = None,
        seen: WorldSeen | None = None,
    ) -> TaskState:
        """Approve (see :func:`core.engine.approval.approve`) and then execute the run.

        ``seen`` is what the lookups returned when the approver read the request
        (:meth:`core.api.queue.ApprovalQueue.look`): the approval is refused with
        :class:`~core.ground.errors.WorldChanged` when they return something else now.

        In a shop home ``signer`` is the approver unlocked by :meth:`unlock`; ``role``
        and ``name`` are then theirs. Raises ApprovalRefused in a shop home without a signer, and
        ResolverError for an empty ``digest`` (``""`` is never taken as "no digest": the check
        would be skipped)."""
        if digest is not None and not digest.strip():
            raise ResolverError("The digest is empty: give the digest you read (the request's last line), or none.")
        decider = self._decider(signer)
        if decider is not None:
            role, name = decider.role, decider.name
        try:
            self._signed(
                lambda: approve(
                    self.store,
                    self._hmac_key(),
                    run_id,
                    role,
                    name,
                    digest,
                    self.clock,
                    expect_version,
                    world=self.world(),
                    practice=self.kind == "practice",
                    signer=decider,
                    seen=seen,
                )
            )
        except ResolverError as exc:
            self.log.info("approve %s by %s (%s) refused: %s", run_id, role, name or "-", exc)
            raise
        self.log.info("approve %s by %s (%s): approved, executing", run_id, role, name or "-")
        self._seal_head(signer, "approval", run_id)
        return self.execute(run_id, interrupt=interrupt, owner=owner, on_progress=on_progress)

    def refresh(
        self, run_id: str, role: str | None = None, name: str | None = None, *, signer: Unlocked | None = None
    ) -> TaskState:
        """Refresh the evidence of a waiting run (see :func:`core.engine.refresh.refresh`): a new
        proposal version and digest, earlier approvals void, the actions as recorded.

        It voids approvals, so it is made like a decision: in a practice home by ``role`` and
        ``name`` as typed (recorded in the audit, either may be None); in a shop home by the
        approver ``signer`` unlocked by :meth:`unlock`, signed, and the audit's head sealed again.
        Raises ApprovalRefused in a shop home without a signer or registry, or for a practice
        home given a signer; ApprovalRefused, RunNotFound, CorruptCheckpoint, StaleCheckpoint
        from the refresh itself."""
        # lazy: refreshing a run is not needed for the first page
        from core.engine.refresh import refresh

        decider = self._decider(signer)
        state = self._signed(
            lambda: refresh(self.store, self.world(), run_id, self.clock, role=role or "", name=name or "", signer=decider)
        )
        self._seal_head(signer)
        return state

    def drift(self, run_id: str) -> Any:
        """What changed since the agent looked (:class:`core.engine.preconditions.Drift`)."""
        return drift(self.store.load_view(run_id), self.world())

    def reject(
        self,
        run_id: str,
        role: str,
        reason: str,
        name: str | None = None,
        digest: str | None = None,
        *,
        signer: Unlocked | None = None,
    ) -> TaskState:
        """Reject with a reason (see :func:`core.engine.approval.reject`); ``signer`` as for :meth:`approve`."""
        decider = self._decider(signer)
        if decider is not None:
            role, name = decider.role, decider.name
        try:
            state = self._signed(lambda: reject(self.store, run_id, role, reason, name, digest, self.clock, signer=decider))
        except ResolverError as exc:
            self.log.info("reject %s by %s (%s) refused: %s", run_id, role, name or "-", exc)
            raise
        self.log.info("reject %s by %s (%s): %s", run_id, role, name or "-", state.status)
        self._seal_head(signer, "rejection", run_id)
        return state

    def execute(
        self, run_id: str, *, interrupt: Interrupt | None = None, owner: str | None = None, on_progress: OnProgress | None = None
    ) -> TaskState:
        """Execute or finish the approved operations (see :func:`core.engine.executor.execute`); in a
        shop home the approver's signature is checked before every write (:mod:`core.engine.signing`)."""
        authorize = None
        if self.kind == "shop":
            # lazy: core.engine.signing loads cryptography, which only a shop home's decisions need
            from core.engine.signing import check_approval

            registry = self.registry()
            authorize = lambda state: check_approval(state, registry, self.store)  # noqa: E731
        self.log.info("execute %s: start", run_id)
        try:
            state = execute(
                self.store,
                self.world_at,
                self._hmac_key(),
                run_id,
                clock=self.clock,
                owner=owner,
                interrupt=interrupt,
                on_progress=on_progress,
                authorize=authorize,
                tickets=self.root / TICKETS,
            )
        except ResolverError as exc:
            self.log.info("execute %s stopped: %s", run_id, exc)
            raise
        for op in state.operations:
            self.log.info(
                "execute %s: operation %s %s %s, %s call(s)", run_id, op.operation_id, op.action.type, op.status, op.calls
            )
        self.log.info("execute %s: %s", run_id, state.status)
        return state

    # -- approvers ------------------------------------------------------------------------------

    def registry(self) -> Registry:
        """The approvers registry of this home (:class:`core.engine.approvers.Registry`)."""
        # lazy: core.engine.approvers loads cryptography, which only a shop home needs
        from core.engine.approvers import Registry

        return Registry(self.root, store=self.store_url)

    def unlock(self, name: str, passphrase: str) -> Unlocked:
        """Unlock the approver ``name`` of this shop home with their passphrase, for
        :meth:`approve` and :meth:`reject` (the app keeps it for its session only).

        Raises:
            ApprovalRefused: a practice home (no keys there), no registry yet, a registry that
                does not verify, an unknown or revoked name, a wrong passphrase.
        """
        if self.kind != "shop":
            raise ApprovalRefused(f"{self.root} is a practice home: decide with --as ROLE, without keys.")
        return self.registry().unlock(name, passphrase)

    def _decider(self, signer: Unlocked | None) -> DecisionSigner | None:
        if self.kind != "shop":
            if signer is not None:
                raise ApprovalRefused(f"{self.root} is a practice home: decide with --as ROLE, without keys.")
            return None
        if not self.registry().exists():
            raise ApprovalRefused(
                f"{self.root} is a shop home without an approvers registry: every decision is refused until the owner "
                "runs `resolver approvers init`."
            )
        if signer is None:
            raise ApprovalRefused("In a shop home a decision is made by a named approver with their passphrase (--name NAME).")
        # lazy: core.engine.signing loads cryptography, which only a shop home's decisions need
        from core.engine.signing import DecisionSigner

        return DecisionSigner(signer)

    @staticmethod
    def _signed(decide: Callable[[], _T]) -> _T:
        """Decide, made again by itself up to :data:`DECIDE_ATTEMPTS` times in all when nothing
        of it was written and the same decision may land now: a signed decision that met
        another decision's audit row between signing and saving (AuditMoved) is signed again
        over the new newest row; one the team store undid for another writer's sake
        (StoreConflict: a deadlock or serialization failure) is made again after a short random
        pause (5 to 25 ms times the attempt's number, so the writers that collided do not
        collide again). Each attempt reads the run anew, so a run someone decided meanwhile is
        refused with who decided it and what, never with the store's conflict. The last
        attempt's error is raised as it is."""
        for attempt in range(1, DECIDE_ATTEMPTS):
            try:
                return decide()
            except AuditMoved:
                continue
            except StoreConflict:
                time.sleep(random.uniform(0.005, 0.025) * attempt)
        return decide()

    def _seal_head(self, signer: Unlocked | None, decided: str = "", run_id: str = "") -> None:
        """Sign ``audit.head`` for the audit as it is now (a shop home's decision by ``signer``).

        Raises:
            ResolverError: the head cannot be written (a folder in its place, a full disk); the
                sentence says the decision (``decided``: ``approval`` or ``rejection``) of
                ``run_id`` is saved, and what finishes it."""
        if self.kind == "shop" and signer is not None:
            # lazy: core.engine.signing loads cryptography, which only a shop home's decisions need
            from core.engine.signing import seal_head

            try:
                seal_head(self.parts, self.store, signer)
            except OSError as exc:
                then = (
                    f"then `resolver resume {run_id}` executes it"
                    if decided == "approval"
                    else "then `resolver audit verify` checks the audit"
                )
                raise ResolverError(
                    f"{signer.name}'s {decided or 'decision'} of {run_id or 'the run'} is saved, but the audit head "
                    f"{self.parts.label('audit.head')} cannot be written ({exc.strerror or exc}): put a readable file back in its "
                    f"place or move it aside, {then}."
                ) from None

    # -- marks: claim, hand over, set aside -------------------------------------------------------

    def mark(
        self, kind: str, run_id: str, role: str, name: str | None = None, *, signer: Unlocked | None = None, **args: Any
    ) -> Any:
        """Claim (``kind`` ``claim``), release, hand over (``to``, ``note``) or snooze (``until``, a
        datetime) the waiting run ``run_id`` as ``role`` and ``name`` (see :mod:`core.engine.marks`).
        In a shop home ``signer`` is the approver unlocked by :meth:`unlock` (role and name are
        theirs, the audit row is signed and ``audit.head`` moves), and a hand-over's recipient
        must be an approver of the registry (their name as registered) whose role may decide the
        run. A claim, a hand-over and a snooze need the role the run's proposal needs
        (:func:`core.engine.rulebook.may_mark`). A claim lasts the config
        file's ``claim_minutes`` (:data:`core.engine.marks.CLAIM_MINUTES` when absent). Returns the
        :class:`core.engine.marks.RunMarks` as written.

        Raises:
            ApprovalRefused: the checks of :mod:`core.engine.marks` (a role that may not decide the run,
                a recipient who may not), an unknown or revoked recipient, a shop home without a
                signer. Nothing is written then.
        """
        # lazy: core.engine.marks loads at the first mark, not with the home (every command opens one)
        from core.engine import marks

        decider = self._decider(signer)
        if decider is not None:
            role, name = decider.role, decider.name
        policy = load_policy()
        minutes = marks.claim_minutes(read_config(config_path()))

        def handover() -> Any:
            to, to_role = self.recipient(args["to"])
            return marks.handover(self.store, run_id, role, name, to, args["note"], self.clock, signer=decider, to_role=to_role)

        write: dict[str, Callable[[], Any]] = {
            "claim": lambda: marks.claim(self.store, run_id, role, name, self.clock, minutes=minutes, signer=decider),
            "release": lambda: marks.release(self.store, run_id, role, name, self.clock, signer=decider),
            "handover": handover,
            "snooze": lambda: marks.snooze(self.store, run_id, role, name, args["until"], self.clock, policy, signer=decider),
        }
        try:
            done = self._signed(write[kind])
        except ResolverError as exc:
            self.log.info("%s %s by %s (%s) refused: %s", kind, run_id, role, name or "-", exc)
            raise
        self.log.info("%s %s by %s (%s)", kind, run_id, role, name or "-")
        self._seal_head(signer, kind, run_id)
        return done

    def recipient(self, to: str) -> tuple[str, str | None]:
        """A hand-over's recipient and their role: in a shop home the registry's entry (its name
        as registered and its role; an unknown or revoked name is refused with the registry's
        sentence), elsewhere ``to`` and None (a practice home's names have no registered role).
        The role is what :func:`core.engine.rulebook.may_receive` checks against the run."""
        if self.kind == "shop" and to and to.strip():
            entry = self.registry().valid_entry(to.strip())
            return entry.name, entry.role
        return to, None

    # -- the world outside any run --------------------------------------------------------------

    def manual_refund(
        self, operation_id: str, order_id: str, amount: Decimal | str, reason_code: str, payment_id: str
    ) -> dict[str, Any]:
        """A refund made by hand, outside any run (seed 000's weekend phone call:
        ``manual-1``, LK-507862, 119.00 CAD, RFD-DOUBLE, PAY-507862-2 gives ``RF-4CFEAE8E``).

        Raises: ServiceRefused with the payment service's sentence; ShopRefused in a shop home.
        """
        require_practice(self.root, "`manual-refund` (the lesson's weekend phone call)", self.kind)
        return self.world("manual").request_refund(operation_id, order_id, amount, reason_code, payment_id)

    def delete(self, run_id: str, *, audited: bool = False) -> None:
        """Delete one run and its events (a corrupt one, say); the audit keeps its rows, and with
        ``audited`` (``resolver reset --run``) records the deletion as a ``reset`` row.
        Raises RunNotFound."""
        audit = None
        if audited:
            audit = {
                "decision": "reset",
                "role": "",
                "name": "",
                "digest": "",
                "at": iso(self.clock.now()),
                "detail": f"deleted run {run_id} and its events (reset --run)",
            }
        self.store.delete(run_id, audit)  # its marks with it (a new run of this ID starts unmarked)

    def reset(self, everything: bool = False) -> int:
        """Delete the saved runs (and with ``everything`` rebuild the practice world).
        Returns the number of runs deleted. The audit records what was reset: one ``reset`` row
        (run ID ``*``) naming how many runs were deleted, which (the first 20), and whether the
        world was rebuilt. Raises ShopRefused in a shop home."""
        require_practice(self.root, "`reset`", self.kind)
        at = iso(self.clock.now())

        def row(ids: list[str]) -> dict[str, Any]:
            shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
            what = f"deleted {len(ids)} run(s)" + (f" ({shown})" if ids else "")
            world = "; rebuilt the practice world from data/ (its refunds, replies and register gone)" if everything else ""
            flag = "reset --all" if everything else "reset"
            return {"decision": "reset", "role": "", "name": "", "digest": "", "at": at, "detail": f"{what}{world} ({flag})"}

        n = self.store.reset(row)  # the runs' marks with them
        if everything:
            reset_world(self.world_at)
        return n
