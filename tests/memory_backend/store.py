"""The memory back-end's checkpoint store: every table a dict or a list of one :class:`Place`,
shared by every store object opened on the same ``memory://NAME`` in the process (another
process's view, for the tests that open a second store object), under one lock.

Each write is one critical section of the place's lock, taken in full or not at all: a save
checks the version (compare-and-set), the lease, the audit's ``prev``, then writes the run, its
rows, its audit row and the events the SQL back-ends' triggers write, in that one section. The
checkpoint's form is the core's (:class:`core.stores.common.CheckpointRows`: a header and one
row per list element, with checksums), so loads and their errors are the other back-ends'.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from core.contract.audit import COLUMNS, GENESIS, TRIGGERS, AuditMoved, ends_approval, row_hash
from core.contract.store import SORTS, Lease, RunExists, RunSummary, lease_held_by_other
from core.ground.clock import Clock, SystemClock, iso
from core.ground.errors import ResolverError, RunNotFound, StaleCheckpoint
from core.ground.safetext import nfc
from core.ground.state import OPENING_MESSAGES
from core.stores.common import (
    _SOMETIMES,
    CheckpointRows,
    assemble_parts,
    audit_values,
    event_dicts,
    refuse_save,
    sort_order,
)
from core.stores.marks import MARK_COLUMNS

_SUMMARY = (
    "run_id",
    "task_id",
    "variant",
    "model",
    "status",
    "created_at",
    "updated_at",
    "version",
    "customer",
    "order_id",
    "total_amount",
    "required_role",
    "actions",
    "lease_owner",
    "lease_expires",
    "state_ok",
    "updated_ts",
    "created_ts",
    "amount_cents",
    "role_rank",
)


class Place:
    """Every table of one memory store."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.RLock()
        self.runs: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []  # run IDs in the order first saved (SQLite's rowid)
        self.entries: dict[str, list[tuple]] = {}
        self.audit: list[dict[str, Any]] = []
        self.marks: dict[str, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.journal: dict[tuple[str, int, int], dict[str, Any]] = {}
        self.kind: str | None = None
        self.parts: dict[str, bytes] = {}
        self.approvers: list[list[Any]] = []
        self.registry_made = False

    def add_event(self, **values: Any) -> None:
        row = dict.fromkeys(("kind", "run_id", "at", "name", "role", "to_name", "required_role", "detail"))
        row.update(values)
        row["id"] = len(self.events) + 1 if not self.events else self.events[-1]["id"] + 1
        self.events.append(row)

    def role_of(self, run_id: str) -> Any:
        run = self.runs.get(run_id)
        return None if run is None else run["required_role"]

    def append_audit(self, run_id: str, audit: dict[str, Any]) -> dict[str, Any]:
        """Append one row chained to the one before it (the SQL back-ends' rule); the refusal and
        refresh events their triggers write go with it."""
        prev = row_hash(self.audit[-1]) if self.audit else GENESIS
        if audit.get("prev") is not None and audit["prev"] != prev:
            raise AuditMoved("Another decision was recorded while this one was signed; decide again.")
        values = audit_values(run_id, audit, prev)
        row = dict(zip(COLUMNS, (len(self.audit) + 1, *values), strict=True))
        self.audit.append(row)
        if str(row["decision"]).startswith("refused"):
            self.add_event(
                kind="refusal",
                run_id=run_id,
                at=row["at"],
                name=row["name"],
                role=row["role"],
                required_role=self.role_of(run_id),
                detail=row["detail"],
            )
        elif row["decision"] == "refresh":
            self.add_event(
                kind="request",
                run_id=run_id,
                at=row["at"],
                name=row["name"],
                role=row["role"],
                required_role=self.role_of(run_id),
                detail=row["digest"],
            )
        return row

    def forget_run(self, run_id: str) -> None:
        self.runs.pop(run_id, None)
        if run_id in self.order:
            self.order.remove(run_id)
        self.entries.pop(run_id, None)
        self.marks.pop(run_id, None)
        self.events = [e for e in self.events if not (e["kind"] == "lapse" and e["run_id"] == run_id)]
        for key in [k for k in self.journal if k[0] == run_id]:
            del self.journal[key]


_PLACES: dict[str, Place] = {}
_PLACES_LOCK = threading.Lock()


def place_of(url: str) -> Place:
    """The one :class:`Place` of ``url`` in this process."""
    with _PLACES_LOCK:
        found = _PLACES.get(url)
        if found is None:
            found = _PLACES[url] = Place(url)
        return found


def forget(url: str) -> None:
    """Drop the place of ``url`` (a test's store at its end)."""
    with _PLACES_LOCK:
        _PLACES.pop(url, None)


class MemoryStore(CheckpointRows):
    """The contract's :class:`core.contract.store.Store` over one :class:`Place`."""

    def __init__(self, url: str, clock: Clock | None = None, *, summarize: Any) -> None:
        if summarize is None:
            raise TypeError("a store needs the function that gives the queue's columns (summarize)")
        self.url = url
        self.place = place_of(url)
        self.path = Path(url)
        self.clock = clock or SystemClock()
        self.summarize = summarize
        self.repairs: list[str] = []
        self.repaired_triggers: list[str] = []
        self._init_rows()

    # -- runs -----------------------------------------------------------------------------------

    def save(
        self,
        state: Any,
        *,
        audit: dict[str, Any] | None = None,
        lease_owner: str | None = None,
        lease_ttl_s: float | None = None,
    ) -> Any:
        prep = self._prepare(state)
        run_id = state.run_id
        p = self.place
        with p.lock:
            row = p.runs.get(run_id)
            if prep.old == 0:
                if row is not None:
                    raise RunExists(f"Run {run_id} already exists (another process saved it first); a new run needs a new ID.")
            elif row is None or row["version"] != prep.old or (lease_owner is not None and row["lease_owner"] != lease_owner):
                raise refuse_save(
                    run_id, prep.old, row["version"] if row else 0, row["lease_owner"] if row else None, lease_owner
                )
            if audit is not None:  # the audit's prev is checked before anything is written
                prev = row_hash(p.audit[-1]) if p.audit else GENESIS
                if audit.get("prev") is not None and audit["prev"] != prev:
                    raise AuditMoved("Another decision was recorded while this one was signed; decide again.")
            old_status = None if row is None else row["status"]
            new = dict(row or {"lease_owner": None, "lease_expires": None})
            new.update(prep.values)
            new["run_id"] = run_id
            new["state_ok"] = 1
            if lease_owner is not None:
                if lease_ttl_s is not None:
                    new["lease_owner"], new["lease_expires"] = lease_owner, iso(prep.now + timedelta(seconds=lease_ttl_s))
                elif prep.old != 0:
                    new["lease_owner"] = new["lease_expires"] = None
            if isinstance(new["state"], bytes):
                new["state"] = new["state"].decode()
            p.runs[run_id] = new
            if row is None:
                p.order.append(run_id)
            rows = [tuple(r) for r in prep.rows]
            if prep.appended:
                p.entries.setdefault(run_id, []).extend(rows)
            else:
                p.entries[run_id] = rows
            if new["status"] != old_status and new["status"] in ("waiting_approval", "handed_to_person"):
                p.add_event(
                    kind="request" if new["status"] == "waiting_approval" else "handed_to_person",
                    run_id=run_id,
                    at=new["updated_at"],
                    required_role=new["required_role"],
                )
            if audit is not None:
                p.append_audit(run_id, audit)
        state.version = prep.new
        self._remember(state, prep.new, prep.written, prep.saved, prep)
        return state

    def append_audit(self, audit: dict[str, Any]) -> None:
        with self.place.lock:
            self.place.append_audit(audit["run_id"], audit)

    def _parts(self, run_id: str, opening: int | None = None) -> Any:
        p = self.place
        with p.lock:
            row = p.runs.get(run_id)
            if row is None:
                raise RunNotFound(run_id)
            entries = list(p.entries.get(run_id, ()))
            header, version, columns = row["state"], row["version"], tuple(row[c] for c in _SOMETIMES)
        by_n = {r[1]: r for r in entries}
        read = [
            (r[2], r[4], r[5], r[6], None if r[6] is None or r[6] not in by_n else by_n[r[6]][5], r[7])
            for r in sorted(entries, key=lambda r: r[1])
            if opening is None or r[2] != "messages" or r[3] <= opening
        ]
        texts = [
            (n, b.decode() if isinstance(b, bytes) else b, e.decode() if isinstance(e, bytes) else e, f, g, c)
            for n, b, e, f, g, c in read
        ]
        return assemble_parts(header, version, columns, texts)

    def load(self, run_id: str) -> Any:
        return self._build(run_id, self._parts(run_id))

    def load_view(self, run_id: str) -> Any:
        return self._build(run_id, self._parts(run_id, OPENING_MESSAGES), view=True)

    def _mark_corrupt(self, run_id: str) -> None:
        with self.place.lock:
            row = self.place.runs.get(run_id)
            if row is not None:
                row["state_ok"] = 0

    def latest(self, task_id: str) -> Any:
        with self.place.lock:
            runs = [
                (self.place.runs[r]["created_ts"], i, r)
                for i, r in enumerate(self.place.order)
                if self.place.runs[r]["task_id"] == task_id
            ]
        return self.load(max(runs)[2]) if runs else None

    def runs_of_task(self, task_id: str) -> list[RunSummary]:
        with self.place.lock:
            rows = [self._summary_of(r) for r in self.place.runs.values() if r["task_id"] == task_id]
        return sorted(rows, key=lambda s: (s.created_ts, s.run_id))

    def run_ids(self, prefix: str) -> list[str]:
        with self.place.lock:
            return [r for r in self.place.runs if r.startswith(prefix)]

    def exists(self, run_id: str) -> bool:
        return run_id in self.place.runs

    def events(self, run_id: str) -> list[dict[str, Any]]:
        with self.place.lock:
            if run_id not in self.place.runs:
                raise RunNotFound(run_id)
            rows = [
                (r[5], r[4], r[3]) for r in sorted(self.place.entries.get(run_id, ()), key=lambda r: r[1]) if r[2] == "events"
            ]
        return event_dicts(run_id, rows)

    def delete(self, run_id: str, audit: dict[str, Any] | None = None) -> None:
        p = self.place
        with p.lock:
            if run_id not in p.runs:
                raise RunNotFound(run_id)
            if audit is not None:
                prev = row_hash(p.audit[-1]) if p.audit else GENESIS
                if audit.get("prev") is not None and audit["prev"] != prev:
                    raise AuditMoved("Another decision was recorded while this one was signed; decide again.")
            p.forget_run(run_id)
            if audit is not None:
                p.append_audit(run_id, audit)

    def reset(self, audit: Callable[[list[str]], dict[str, Any]] | None = None) -> int:
        p = self.place
        with p.lock:
            ids = sorted(p.runs)
            for run_id in ids:
                p.forget_run(run_id)
            p.marks.clear()
            p.events = [e for e in p.events if e["kind"] != "lapse"]
            if audit is not None:
                p.append_audit("*", audit(ids))
        return len(ids)

    # -- the queue ------------------------------------------------------------------------------

    @staticmethod
    def _summary_of(row: dict[str, Any]) -> RunSummary:
        values = [row[c] for c in _SUMMARY]
        values[15] = bool(values[15])
        return RunSummary(*values)

    def page(
        self,
        status: str | None = None,
        *,
        search: str | None = None,
        sort: str | None = None,
        after: Any = None,
        limit: int = 200,
        max_role_rank: int | None = None,
    ) -> list[RunSummary]:
        if isinstance(after, RunSummary):
            after = after.cursor(sort or ("age" if status == "waiting_approval" else "updated"))
        sort, column, ascending = sort_order(status, sort)
        term = nfc(search)
        folded = term.strip().casefold() if term and len(term.strip()) >= 3 else term.casefold() if term else None
        with self.place.lock:
            rows = list(self.place.runs.values())
        out = []
        for r in rows:
            if status and r["status"] != status:
                continue
            if folded and not any(folded in nfc(str(r[c])).casefold() for c in ("task_id", "order_id", "customer", "run_id")):
                continue
            if max_role_rank is not None and not (0 <= r["role_rank"] <= max_role_rank and r["state_ok"] == 1):
                continue
            key = (r[column], r["run_id"])
            if after is not None and not (key > tuple(after) if ascending else key < tuple(after)):
                continue
            out.append((key, r))
        out.sort(key=lambda kr: kr[0], reverse=not ascending)
        return [self._summary_of(r) for _, r in out[:limit]]

    def listed(self, status: str | None = None, **kwargs: Any) -> list[tuple[str, str, str, int, Any]]:
        column = SORTS[kwargs.get("sort") or ("age" if status == "waiting_approval" else "updated")][0]
        return [(s.run_id, s.status, s.updated_at, int(s.state_ok), getattr(s, column)) for s in self.page(status, **kwargs)]

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self.place.lock:
            for r in self.place.runs.values():
                key = r["status"] if r["state_ok"] else "corrupt"
                counts[key] = counts.get(key, 0) + 1
        return counts

    def summary(self, run_id: str) -> RunSummary:
        with self.place.lock:
            row = self.place.runs.get(run_id)
            if row is None:
                raise RunNotFound(run_id)
            return self._summary_of(row)

    # -- leases ---------------------------------------------------------------------------------

    def _take_lease(self, run_id: str, owner: str, ttl_s: float) -> None:
        now = self.clock.now()
        row = self.place.runs.get(run_id)
        if row is None:
            raise RunNotFound(run_id)
        held = lease_held_by_other(run_id, row["lease_owner"], row["lease_expires"], owner, now)
        if held is not None:
            raise held
        row["lease_owner"], row["lease_expires"] = owner, iso(now + timedelta(seconds=ttl_s))

    def claim(self, run_id: str, owner: str, ttl_s: float = 60.0) -> Any:
        with self.place.lock:
            self._take_lease(run_id, owner, ttl_s)
            parts = self._parts(run_id)
        try:
            return self._build(run_id, parts)
        except ResolverError:
            self.release_lease(run_id, owner)
            raise

    def acquire_lease(self, run_id: str, owner: str, ttl_s: float = 60.0) -> Lease:
        with self.place.lock:
            self._take_lease(run_id, owner, ttl_s)
            return Lease(owner, self.clock.now() + timedelta(seconds=ttl_s))

    def renew_lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        with self.place.lock:
            row = self.place.runs.get(run_id)
            if row is None or row["lease_owner"] != owner:
                return False
            row["lease_expires"] = iso(self.clock.now() + timedelta(seconds=ttl_s))
            return True

    def release_lease(self, run_id: str, owner: str) -> None:
        with self.place.lock:
            row = self.place.runs.get(run_id)
            if row is not None and row["lease_owner"] == owner:
                row["lease_owner"] = row["lease_expires"] = None

    def expire_lease(self, run_id: str) -> None:
        with self.place.lock:
            row = self.place.runs.get(run_id)
            if row is not None:
                row["lease_expires"] = iso(self.clock.now() - timedelta(seconds=1))

    def clear_dead_lease(self, run_id: str) -> bool:
        with self.place.lock:
            row = self.place.runs.get(run_id)
            if row is None or (row["lease_owner"] is None and row["lease_expires"] is None):
                return False
            if lease_held_by_other(run_id, row["lease_owner"], row["lease_expires"], "", self.clock.now()) is not None:
                return False
            row["lease_owner"] = row["lease_expires"] = None
            return True

    # -- the journal of model calls -------------------------------------------------------------
    # Only this store's methods write it, so every row is its runner's: trusted.

    def journal_attempt(self, run_id: str, step: int, route: str) -> int:
        with self.place.lock:
            attempt = 1 + max((k[2] for k in self.place.journal if k[:2] == (run_id, step)), default=0)
            self.place.journal[(run_id, step, attempt)] = {
                "step": step,
                "attempt": attempt,
                "route": route,
                "sent_at": iso(self.clock.now()),
                "answer": None,
                "tokens_in": None,
                "tokens_out": None,
                "answered_at": None,
            }
            return attempt

    def journal_answer(self, run_id: str, step: int, attempt: int, answer: str, tokens_in: int, tokens_out: int) -> None:
        with self.place.lock:
            row = self.place.journal.get((run_id, step, attempt))
            if row is None:
                raise ResolverError(f"No model call {attempt} of step {step} of {run_id} was recorded before its answer.")
            row.update(answer=answer, tokens_in=tokens_in, tokens_out=tokens_out, answered_at=iso(self.clock.now()))

    def journal_answered(self, run_id: str, step: int) -> str | None:
        with self.place.lock:
            rows = sorted((k, r) for k, r in self.place.journal.items() if k[:2] == (run_id, step) and r["answer"] is not None)
        return rows[-1][1]["answer"] if rows else None

    def model_calls(self, run_id: str) -> list[dict[str, Any]]:
        with self.place.lock:
            rows = sorted((k, dict(r)) for k, r in self.place.journal.items() if k[0] == run_id)
        return [{**r, "trusted": True, "why": ""} for _, r in rows]

    def journal_problems(self) -> list[dict[str, Any]]:
        return []

    # -- housekeeping ---------------------------------------------------------------------------

    def has_history(self) -> bool:
        return bool(self.place.runs or self.place.audit)

    def approvals_in_flight(self) -> int:
        with self.place.lock:
            approved = {a["run_id"] for a in self.place.audit if a["decision"] == "approve"}
            return sum(1 for r in self.place.runs.values() if r["status"] == "executing" and r["run_id"] in approved)

    def backup(self, target: Path) -> None:
        with self.place.lock:
            body = {"runs": self.place.runs, "entries": {k: [list(r) for r in v] for k, v in self.place.entries.items()}}
            text = json.dumps(body, default=lambda b: b.decode() if isinstance(b, bytes) else str(b))
        target.write_text(text, encoding="utf-8")
        target.chmod(0o600)

    def overwrite_checkpoint(self, run_id: str, change: Callable[[str], str]) -> None:
        with self.place.lock:
            row = self.place.runs.get(run_id)
            if row is None:
                raise RunNotFound(run_id)
            row["state"] = change(row["state"])

    def scrubbed(self, work: Callable[[], object]) -> None:
        work()  # nothing of a deleted row is left anywhere once the dict forgets it

    def end_thread(self) -> None:
        pass  # no per-thread connection

    # -- marks and the queue's events -------------------------------------------------------------

    def run_marks(self, run_ids: list[str] | None = None) -> dict[str, dict[str, Any]]:
        with self.place.lock:
            marks = self.place.marks
            wanted = marks.keys() if run_ids is None else [r for r in run_ids if r in marks]
            return {r: dict(marks[r]) for r in wanted}

    def put_marks(self, row: dict[str, Any], audit: dict[str, Any], *, version: int) -> int:
        p = self.place
        run_id = row["run_id"]
        with p.lock:
            old = p.marks.get(run_id)
            if (version == 0 and old is not None) or (version != 0 and (old is None or old["version"] != version)):
                raise StaleCheckpoint(f"Someone changed the marks of run {run_id} meanwhile; read it again. Nothing was written.")
            prev = row_hash(p.audit[-1]) if p.audit else GENESIS
            if audit.get("prev") is not None and audit["prev"] != prev:
                raise AuditMoved("Another decision was recorded while this one was signed; decide again.")
            new = {c: row.get(c) for c in MARK_COLUMNS}
            new["version"] = version + 1
            p.marks[run_id] = new
            before = old or {}
            if new["claimed_at"] is not None and new["claimed_at"] != before.get("claimed_at"):
                p.add_event(
                    kind="claim",
                    run_id=run_id,
                    at=new["claimed_at"],
                    name=new["claimed_by"],
                    role=new["claimed_role"],
                    required_role=p.role_of(run_id),
                    detail=new["claim_until"],
                )
            if new["handed_at"] is not None and (
                new["handed_at"] != before.get("handed_at") or new["handed_to"] != before.get("handed_to")
            ):
                p.add_event(
                    kind="handover",
                    run_id=run_id,
                    at=new["handed_at"],
                    name=new["handed_by"],
                    to_name=new["handed_to"],
                    required_role=p.role_of(run_id),
                    detail=new["handed_note"],
                )
            p.append_audit(run_id, audit)
        return version + 1

    def queue_events(self, after: int, limit: int = 500) -> list[dict[str, Any]]:
        with self.place.lock:
            return [dict(e) for e in self.place.events if e["id"] > after][:limit]

    def lapse_times(self, run_ids: list[str]) -> dict[str, list[str]]:
        wanted = set(run_ids)
        found: dict[str, list[str]] = {}
        with self.place.lock:
            for e in self.place.events:
                if e["kind"] == "lapse" and e["run_id"] in wanted:
                    found.setdefault(e["run_id"], []).append(e["at"])
        return found

    def record_lapse(self, run_id: str, digest: str, at: str, required_role: str | None) -> bool:
        p = self.place
        with p.lock:
            run = p.runs.get(run_id)
            if run is None or run["status"] != "waiting_approval":
                return False
            if any(e["kind"] == "lapse" and e["run_id"] == run_id and e["detail"] == digest for e in p.events):
                return False
            p.add_event(kind="lapse", run_id=run_id, at=at, required_role=required_role, detail=digest)
            return True

    # -- the audit's reads ----------------------------------------------------------------------

    def audit(self, run_id: str | None = None, *, name: str | None = None) -> list[dict[str, Any]]:
        keys = ("run_id", "decision", "role", "name", "digest", "at", "detail", "run_uid")
        with self.place.lock:
            rows = list(self.place.audit)
        return [
            {k: r[k] for k in keys} for r in rows if (not run_id or r["run_id"] == run_id) and (name is None or r["name"] == name)
        ]

    def audit_rows(self) -> list[dict[str, Any]]:
        with self.place.lock:
            return [dict(r) for r in self.place.audit]

    def chain_tip(self) -> tuple[str, int]:
        with self.place.lock:
            return (row_hash(self.place.audit[-1]) if self.place.audit else GENESIS), len(self.place.audit)

    def find_audit_row(self, run_id: str, decision: str, sig: str) -> dict[str, Any] | None:
        with self.place.lock:
            found = [r for r in self.place.audit if (r["run_id"], r["decision"], r["sig"]) == (run_id, decision, sig)]
        return dict(found[-1]) if found else None

    def later_ending(self, run_uid: str, after_id: int) -> dict[str, Any] | None:
        with self.place.lock:
            for r in self.place.audit:
                if r["run_uid"] == run_uid and r["id"] > after_id and ends_approval(r["decision"]):
                    return dict(r)
        return None

    def audit_triggers(self) -> set[str]:
        return set(TRIGGERS)  # the audit is a list only append_audit adds to: append-only by construction

    def signed_approvals(self, prefix: str) -> list[tuple[str, str]]:
        needle = f'"signature":"{prefix}'
        with self.place.lock:
            return [(r["run_id"], r["state"]) for r in self.place.runs.values() if needle in r["state"]]


__all__ = ["MemoryStore", "Place", "forget", "place_of"]
