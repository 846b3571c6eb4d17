"""Error types of the core. Each carries one sentence a person can act on.

The CLI prints ``str(error)`` and exits 1; the app shows it in a notification. None of them is
ever shown as a traceback. The rule of the characters no run ID holds (:func:`odd_character`)
lives here too, at the bottom of the ground, since a sentence of this module needs it.
"""

from __future__ import annotations

import unicodedata


def odd_character(text: str) -> str | None:
    """The first character of ``text`` that no run ID holds: a space, a line break, a control or
    an invisible formatting character (Unicode categories Cc, Cf, Zl, Zp); None when there is none.
    The one rule for a new run's ID (:func:`core.ground.safetext.run_id_problem`) and for the
    sentence of a run typed with one (:class:`RunNotFound`)."""
    return next((ch for ch in text if ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")), None)


class ResolverError(Exception):
    """Base of every expected error: its message is a complete sentence for a person."""


class RunNotFound(ResolverError):
    """No saved run with that ID. When the ID typed holds a space, a control or an invisible
    character (an escape sequence, a zero-width space), which no run ID has, the sentence says
    so and names it: printed, such a character is removed, and "No run T-90103-..." beside a run
    of that very name would mislead."""

    def __init__(self, run_id: str) -> None:
        odd = odd_character(run_id)
        if odd is None:
            said = f"No run {run_id}. Run `resolver runs` to see the saved runs."
        else:
            said = (
                f"No run {run_id}: the ID typed holds an invisible or control character (U+{ord(odd):04X}), which no "
                "run ID has; type it as plain text. Run `resolver runs` to see the saved runs."
            )
        super().__init__(said)
        self.run_id = run_id


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C while run ``run_id``'s loop was going (:func:`core.engine.runner.run_task`): a
    KeyboardInterrupt that knows which run's last checkpoint is saved, so the command line's
    sentence names the run to resume."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id


class CorruptCheckpoint(ResolverError):
    """The saved state of a run is not valid JSON or does not match the TaskState schema."""


class UnsupportedSchemaVersion(ResolverError):
    """The saved state has a schema_version this code cannot migrate (seed 001: fail closed)."""


class StaleCheckpoint(ResolverError):
    """A writer tried to save a state older than the one stored (compare-and-set on version)."""


class StoreBusy(ResolverError):
    """The store's database stayed locked by another writer past the busy (SQLite) or lock
    (PostgreSQL) timeout."""


class StoreConflict(StoreBusy):
    """The team store undid a write to let another writer's through (PostgreSQL's serialization
    failure or deadlock, SQLSTATE 40001 or 40P01): nothing of it was written, and the same write
    made again may succeed. :meth:`core.api.home.Home` makes a decision again itself
    (:data:`core.api.home.DECIDE_ATTEMPTS`) before this reaches a person."""


class StoreUnreachable(ResolverError):
    """A team store's server cannot be reached, or ended the connection under a statement: the
    store says nothing about any run meanwhile, so a face names the store (a run it could not
    read is not called damaged) and reads again when it answers."""


class ConnectionLost(StoreUnreachable):
    """A team store's connection failed under a statement (the server ended it, or cannot be
    reached): the pool's dead idle connections are dropped before this is raised, so a read made
    again connects anew (the app's reads do so once). A write is never made again by
    the caller: whether it committed is unknown until the run is read."""


class ApprovalRefused(ResolverError):
    """An approve or reject that was refused, with nothing changed."""


class ResumeChanged(ResolverError):
    """A running loop's policy, tools or model route changed since it started; the resume was
    refused before any model call, nothing changed (``--accept-changes`` goes on).
    ``changes`` names each change in a line (``The policy was 2026-09-01; now 2026-10-01.``),
    for the app's dialog that offers accepting them for this run."""

    def __init__(self, sentence: str, changes: list[str] | None = None) -> None:
        super().__init__(sentence)
        self.changes = list(changes or [])


class LeaseHeld(ResolverError):
    """Another executor holds the run's lease and it has not expired."""


class DatabaseRefused(ResolverError):
    """A team store with role separation refused a write to the connecting database user: a right
    its kind of user lacks (README "Separate database users"); nothing was written. The CLI
    exits 4, as for every refusal (a new user's trial: it was 1)."""


class ShopRefused(ResolverError):
    """A trainer's or lesson's command in a shop home: its clock is real time only, and nothing
    there may wipe, rewind or pay as a lesson does (see :mod:`core.api.homekind`)."""


class ApprovalKeyError(ResolverError):
    """``approval.key`` is damaged, too short, readable by others, or missing while approvals are
    in flight; the sentence says how to fix it."""


class WorldChanged(ApprovalRefused):
    """The read-only lookups returned something else when an approval was recorded
    than when its approver read the request; nothing was decided. ``lines`` is the request's
    section "What changed since the agent looked" as it is now, which both faces show."""

    def __init__(self, sentence: str, lines: list[str]) -> None:
        super().__init__(sentence)
        self.lines = lines


class BadArgument(ResolverError):
    """A value on the command line (or naming the home) that cannot be taken as typed (exit 2;
    README, "Exit codes"); nothing changed."""


class JournalUntrusted(ResolverError):
    """A row of a run's journal of model calls was not written by the run's runner: a SQLite
    row whose seal does not verify with the home's key, a team store's row stamped with an
    approver's database user. The resume that met it is refused before anything is asked of the
    model or proposed: only the agent's runner proposes, and a planted journal answer would
    otherwise become its proposal. ``resolver doctor`` lists every such row.

    Attributes:
        run_id, step, attempt: the row. why: how it failed the back-end's check (a clause).
    """

    def __init__(self, run_id: str, step: int, attempt: int, why: str) -> None:
        super().__init__(
            f"The journal of run {run_id} holds an answer to step {step} (attempt {attempt}) that its runner did not "
            f"write ({why}), so the resume is refused and nothing was asked or proposed; `resolver doctor` lists it."
        )
        self.run_id, self.step, self.attempt, self.why = run_id, step, attempt, why
