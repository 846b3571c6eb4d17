"""What every back-end of the checkpoint store shares: the header-and-rows form of a
checkpoint, written and read the same way whatever holds it.

A run is stored as a **header** (the ``TaskState`` without its append-only lists, as JSON) beside
the queue's columns, and **entries**: one row per element of ``messages``, ``evidence`` and
``events``, numbered ``n`` in the order written, with ``list``, ``seq``, ``body``, ``extra``
(an evidence's result, an event's time), ``ref`` (a tool message that repeats an evidence's
result refers to its row) and ``checksum`` (:func:`entry_checksum` of ``body`` and ``extra``,
written with the row since store format 4 / PostgreSQL migration 8; NULL in older rows).
Entries are validated when they are written and checked by their checksum when read back: a
row whose bytes changed since is a corrupt checkpoint, and the checks that remain on a read run
in pydantic's Rust (a time's range: :class:`core.ground.state._Supported`), not in Python. :class:`CheckpointRows` is the mixin both back-ends inherit: it tells
an append from an edit (:meth:`~CheckpointRows._prepare`), makes the new rows
(:meth:`~CheckpointRows._rows`), joins what was read back into one JSON text and validates it once
(:meth:`~CheckpointRows._build`), with the careful path's own errors for an old schema or a corrupt
row. A back-end supplies the SQL and :meth:`~CheckpointRows._mark_corrupt`.

:class:`core.stores.sqlite.checkpoint.CheckpointStore` and
:class:`core.stores.postgres.store.PostgresStore` are the two back-ends.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import operator
import threading
import weakref
import zlib
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from core.contract.audit import COLUMNS as AUDIT_COLUMNS
from core.contract.store import SORTS, RunSummary, StoreNotEmpty
from core.ground.clock import iso
from core.ground.errors import CorruptCheckpoint, JournalUntrusted, LeaseHeld, ResolverError, StaleCheckpoint
from core.stores.events import EVENT_COLUMNS
from core.stores.marks import MARK_COLUMNS

if TYPE_CHECKING:
    from pydantic import BaseModel

    from core.contract.store import Summarize
    from core.ground.state import TaskState

LISTS = ("messages", "evidence", "events")
"""TaskState's append-only lists, stored one row per element; the rest of the model is the header."""

_HEADER_EXCLUDE: set[str] = set(LISTS)
_NO_RESULT = {"result"}
"""What an evidence row's body leaves out: its result is kept in ``extra``."""
_NO_CONTENT = {"content"}
"""What a tool message's body leaves out when it refers to an evidence row (``ref``)."""
_ZERO = b"\0"
"""The byte between an entry's body and its ``extra`` in its checksum (:func:`entry_checksum`)."""


class _Saved:
    """What the store last wrote (or read) for one TaskState object: its version and the very
    element objects of its lists, so the next save can tell an append from an edit."""

    __slots__ = ("columns", "created", "events", "evidence", "messages", "ref", "version")

    def __init__(
        self, state: TaskState, version: int, columns: tuple | None, created: tuple[datetime, str, float] | None = None
    ) -> None:
        self.ref = weakref.ref(state)
        self.keep(state, version, columns, created)

    def keep(self, state: TaskState, version: int, columns: tuple | None, created: tuple[datetime, str, float] | None) -> None:
        """Record ``state`` as written (or read) at ``version``: the row's values of
        :data:`_SOMETIMES` (``columns``), its lists' element objects, and ``created``
        (``created_at`` as last saved: the very object, its ISO text and its timestamp)."""
        self.version = version
        self.columns = columns
        self.messages = tuple(state.messages)
        self.evidence = tuple(state.evidence)
        self.events = tuple(state.events)
        self.created = created


def entry_checksum(body: str | bytes, extra: str | bytes | None) -> int:
    """The checksum of an ``entries`` row: CRC-32 (:func:`zlib.crc32`, 0 to
    2**32 - 1) of ``body`` in UTF-8, then, when ``extra`` is not None, of a zero byte and
    ``extra`` (so None and ``""`` differ). Text is given as ``str`` or as its UTF-8 ``bytes``
    (the SQLite store reads its rows as stored bytes: :func:`read_parts`); both give one CRC.

    CRC-32 because it guards against damage, not an adversary (whoever can rewrite a row can
    rewrite its checksum; decisions are guarded by the signed, chained audit), it is in the
    standard library, in C, about 1 GB/s (a 200-step run's rows in 0.3 ms), and any change of up
    to 32 consecutive bits, or any error of odd weight, is caught; a random change slips through
    once in 4 billion."""
    return _crc(
        body if isinstance(body, bytes) else body.encode("utf-8"),
        None if extra is None else extra if isinstance(extra, bytes) else extra.encode("utf-8"),
    )


def _crc(body: bytes, extra: bytes | None) -> int:
    """:func:`entry_checksum` of UTF-8 ``body`` and ``extra`` bytes: the one place its CRCs are
    taken (a save's rows and a load's tight loop call it with the bytes they hold)."""
    crc = zlib.crc32(body)
    if extra is not None:  # the CRC of the zero byte and extra, without joining them in a copy
        crc = zlib.crc32(extra, zlib.crc32(_ZERO, crc))
    return crc


_iso_of = functools.lru_cache(maxsize=4096)(iso)
""":func:`core.ground.clock.iso` remembered per moment: a run's ``created_at`` and its events' times are
written at every save and change seldom (no per-save work that does not change
with the step). Datetimes are immutable and hash by value, so a hit is the same text."""


@functools.lru_cache(maxsize=4096)
def _created_of(moment: datetime) -> tuple[str, float]:
    """``(iso(moment), moment.timestamp())``, remembered per moment as :data:`_iso_of`: a run's
    ``created_at`` and ``created_ts``, written at every save and never changed, in one look-up
    (hashing an aware datetime asks its zone for the offset)."""
    return iso(moment), moment.timestamp()


def _json_bytes(model: BaseModel, exclude: set[str] | None = None) -> bytes:
    """``model.model_dump_json(exclude=exclude)`` as its UTF-8 bytes, through the model class's
    serializer without :meth:`~pydantic.BaseModel.model_dump_json`'s keyword handling in Python
    (that handling cost about 6,500 instructions in each of a save's five dumps; equality with
    ``model_dump_json`` is tested in ``tests/stores/test_save_statements.py``)."""
    return type(model).__pydantic_serializer__.to_json(model, exclude=exclude)


def _json_of(model: BaseModel, exclude: set[str] | None = None) -> str:
    """:func:`_json_bytes` as text: ``model.model_dump_json(exclude=exclude)``."""
    return _json_bytes(model, exclude).decode()


_dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_c_encoder = (
    None
    if _make_encoder is None
    else _make_encoder(None, _not_json, json.encoder.encode_basestring, None, ": ", ", ", False, False, False)
)


def _dumps_result(value: Any) -> str:
    """:data:`_dumps` (``json.dumps(value, ensure_ascii=False, allow_nan=False)``: the same text,
    compared with the runner's tool message), through the C encoder made once instead of at
    every call. It keeps no record of the containers it is in (no state
    shared between threads), so a value that contains itself ends in RecursionError, given to
    the caller as a ValueError like ``json.dumps``'s "Circular reference detected"."""
    if _c_encoder is None or isinstance(value, str):
        return _dumps(value)
    try:
        return "".join(_c_encoder(value, 0))
    except RecursionError:
        raise ValueError("Circular reference detected") from None


_RUN_VIEW: type | None = None
""":class:`core.ground.state.RunView`, once imported (:func:`_run_view`)."""


def _run_view() -> type:
    """:class:`core.ground.state.RunView`, imported at the first save (a listing never imports the model)."""
    global _RUN_VIEW
    # lazy: the pydantic models are imported at the first save or load, so a listing never pays for them
    from core.ground.state import RunView

    _RUN_VIEW = RunView
    return RunView


_encode_text = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False, allow_nan=False)`` without making an encoder per call."""


def _bound(raw: bytes, raw_text: bool) -> str | bytes:
    """A JSON text as a back-end binds it (:attr:`CheckpointRows._raw_text`): the UTF-8 ``raw``
    bytes themselves where ``raw_text`` and the text is not all ASCII, else ``str``."""
    return raw if raw_text and not raw.isascii() else raw.decode()


def _appended(now: Sequence[BaseModel], before: tuple[BaseModel, ...]) -> bool:
    """True when ``now`` starts with exactly the objects saved before (only appends since)."""
    # map stops at the shorter: no copy of the first n elements
    return len(now) >= len(before) and all(map(operator.is_, now, before))


def _join(obj: Any, name: str, value: Any) -> Any:
    """Add the field ``"name":value`` (``value`` a JSON text) to the JSON object text ``obj``
    (which ends with ``}``), in one allocation; ``obj`` and ``value`` are both ``str`` or both
    UTF-8 ``bytes`` (what the SQLite store reads), and so is the result."""
    if type(obj) is bytes:
        return b"".join((obj[:-1], b"" if obj == b"{}" else b",", b'"', name.encode(), b'":', value, b"}"))
    return "".join((obj[:-1], "" if obj == "{}" else ",", '"', name, '":', value, "}"))


def _join_lists(obj: str | bytes, lists: Sequence[tuple[str, list[Any]]]) -> str | bytes:
    """Add ``"name":[item,...]`` arrays of JSON texts to the JSON object text ``obj``; all ``str``,
    or all UTF-8 ``bytes`` (the SQLite store's rows as stored, handed to pydantic as they are, so
    the joined text of a state is never encoded to UTF-8 again, which cost 73k of a typical load's
    1,030k instructions)."""
    if type(obj) is bytes:
        chunks = [obj[:-1]]
        sep = b"" if obj == b"{}" else b","
        for name, items in lists:
            chunks += (sep, b'"', name.encode(), b'":[', b",".join(items), b"]")
            sep = b","
        chunks.append(b"}")
        return b"".join(chunks)
    pieces = [cast(str, obj)[:-1]]
    comma = "" if obj == "{}" else ","
    for name, items in lists:
        pieces += (comma, '"', name, '":[', ",".join(items), "]")
        comma = ","
    pieces.append("}")
    return "".join(pieces)


_SUMMARY = (
    "run_id, task_id, variant, model, status, created_at, updated_at, version, customer, order_id, "
    "total_amount, required_role, actions, lease_owner, lease_expires, state_ok, updated_ts, created_ts, "
    "amount_cents, role_rank"
)

_HEADER_COLS = (
    "task_id",
    "variant",
    "model",
    "status",
    "created_at",
    "updated_at",
    "created_ts",
    "updated_ts",
    "version",
    "customer",
    "order_id",
    "total_amount",
    "amount_cents",
    "required_role",
    "role_rank",
    "actions",
    "state",
)
_ALWAYS = frozenset({"updated_at", "updated_ts", "version", "state"})
"""Header columns that change at every save; the others are written only when they changed, so
a step's save touches two of the queue's indexes, not ten."""
_ALWAYS_ORDER = tuple(sorted(_ALWAYS))
_SOMETIMES = tuple(c for c in _HEADER_COLS if c not in _ALWAYS)
_pick_sometimes = operator.itemgetter(*(i for i, c in enumerate(_HEADER_COLS) if c not in _ALWAYS))
"""The :data:`_SOMETIMES` values of a tuple of :data:`_HEADER_COLS` values, in that order."""


@dataclass
class _Parts:
    """A run's checkpoint as stored: header text, version and each list's element texts;
    ``damaged`` the sentence part naming the first entry whose checksum did not match."""

    header: str | bytes
    version: int
    messages: list[Any]
    evidence: list[Any]
    events: list[Any]
    columns: tuple
    damaged: str | None = None


@dataclass
class _Prepared:
    """One save, worked out before its transaction: the stamped time, the versions, whether only
    appends happened since the object was last saved or read, the new ``entries`` rows, the
    header's column values (by name, in :data:`_HEADER_COLS` order) and the :data:`_SOMETIMES`
    values written."""

    now: datetime
    old: int
    new: int
    saved: _Saved | None
    appended: bool
    rows: list[tuple]
    values: dict[str, Any]
    written: tuple


class CheckpointRows:
    """The back-end-neutral half of a checkpoint store (see the module's docstring). A back-end
    sets :attr:`summarize` and :attr:`clock`, calls :meth:`_init_rows` in its constructor and
    implements :meth:`_mark_corrupt`."""

    summarize: Summarize
    clock: Any
    _raw_text = False
    """True for a back-end that binds a JSON text that is not all ASCII (the header, an entry's
    body or extra) as its UTF-8 bytes, the very bytes pydantic and the JSON encoder wrote, and
    stores it as TEXT (SQLite: ``CAST(? AS TEXT)``: bound as ``str``, a decision's header with
    an em dash in its reply would be decoded from UTF-8 to ``str`` and encoded back by the
    driver, 100k instructions). An ASCII text is bound as ``str``: its decode is a copy and the driver
    reads its bytes in place, cheaper than the driver's adapter look-up for ``bytes`` (about
    1,100 instructions). False: always ``str`` (PostgreSQL)."""

    def _init_rows(self) -> None:
        self._saved: dict[int, _Saved] = {}
        self._saved_lock = threading.Lock()

    def _mark_corrupt(self, run_id: str) -> None:
        """Flag the run's row so listings show it as corrupt without reading it (best effort)."""
        raise NotImplementedError

    def _remember(
        self, state: TaskState, version: int, columns: tuple | None, saved: _Saved | None = None, prep: _Prepared | None = None
    ) -> None:
        """Record what was written (or read) for ``state``; ``saved``: its record before this
        save, updated in place (its weak reference already names this object, so
        a save makes no new record and weak-reference callback); ``prep``: the save written,
        whose ``created_at`` texts the next save reuses while the field holds the same object."""
        created = None if prep is None else (state.created_at, prep.values["created_at"], prep.values["created_ts"])
        if saved is not None and saved.ref() is state:
            saved.keep(state, version, columns, created)
            return
        key = id(state)
        saved = _Saved(state, version, columns, created)

        def forget(_ref: weakref.ref, key: int = key) -> None:
            with self._saved_lock:
                current = self._saved.get(key)
                if current is not None and current.ref() is None:
                    del self._saved[key]

        saved.ref = weakref.ref(state, forget)
        with self._saved_lock:
            self._saved[key] = saved

    def _saved_for(self, state: TaskState) -> _Saved | None:
        saved = self._saved.get(id(state))
        if saved is None or saved.ref() is not state or saved.version != state.version:
            return None
        return saved

    def _rows(self, state: TaskState, start: tuple[int, int, int]) -> list[tuple]:
        """The ``entries`` rows for the list elements from ``start`` (counts already stored) on:
        ``(run_id, n, list, seq, body, extra, ref, checksum)`` (:data:`ENTRY_COLUMNS`); ``body``
        and ``extra`` are ``str``, or UTF-8 ``bytes`` where :attr:`_raw_text` says so.

        A tool message whose content is exactly the JSON text of a new evidence's result (the
        runner writes both at one step) refers to that evidence's row instead of repeating it."""
        run_id = state.run_id
        raw_text = self._raw_text
        m0, e0, v0 = start
        n = m0 + e0 + v0
        rows: list[tuple] = []
        by_text: dict[str, int] = {}
        for seq, e in enumerate(state.evidence[e0:], e0 + 1):
            n += 1
            try:
                text = _dumps_result(e.result)
                by_text.setdefault(text, n)
            except (TypeError, ValueError):  # what json cannot write (a Decimal, a date): pydantic's encoder
                # lazy: pydantic's encoder only for what json cannot write, so a listing never imports it
                from pydantic import TypeAdapter

                text = TypeAdapter(Any).dump_json(e.result).decode()
            raw = type(e).__pydantic_serializer__.to_json(e, exclude=_NO_RESULT)
            extra = text.encode()
            # entry_checksum(body, text), from the bytes pydantic wrote (never encoded again)
            rows.append(
                (
                    run_id,
                    n,
                    "evidence",
                    seq,
                    _bound(raw, raw_text),
                    extra if raw_text and not text.isascii() else text,
                    None,
                    _crc(raw, extra),
                )
            )
        for seq, m in enumerate(state.messages[m0:], m0 + 1):
            n += 1
            ref = by_text.pop(m.content, None) if by_text and m.role == "tool" else None
            raw = type(m).__pydantic_serializer__.to_json(m, exclude=None if ref is None else _NO_CONTENT)
            body = _bound(raw, raw_text)
            rows.append((run_id, n, "messages", seq, body, None, ref, _crc(raw, None)))
        for seq, ev in enumerate(state.events[v0:], v0 + 1):
            n += 1
            raw, at = type(ev).__pydantic_serializer__.to_json(ev), _iso_of(ev.at)  # an ISO time is ASCII
            body = _bound(raw, raw_text)
            rows.append((run_id, n, "events", seq, body, at, None, _crc(raw, at.encode())))
        return rows

    def _prepare(self, state: TaskState) -> _Prepared:
        """Stamp ``state.updated_at`` from the clock and work out what its save writes. Raises
        PartialState for a read-side :class:`~core.ground.state.RunView` (nothing is stamped)."""
        view = _RUN_VIEW or _run_view()
        if isinstance(state, view):
            # lazy: the models are imported only on a save, so a listing never imports them
            from core.ground.state import PartialState

            raise PartialState(
                f"Run {state.run_id} was read for display only (without its message history) and cannot be saved; "
                "load it whole to change it."
            )
        now = self.clock.now()
        state.updated_at = now
        old = state.version
        new = old + 1
        saved = self._saved_for(state)
        appended = (
            saved is not None
            and _appended(state.messages, saved.messages)
            and _appended(state.evidence, saved.evidence)
            and _appended(state.events, saved.events)
        )
        start = (len(saved.messages), len(saved.evidence), len(saved.events)) if saved is not None and appended else (0, 0, 0)
        # the header carries the new version; set in the model's __dict__ for the dump and put
        # back (a plain field: what pydantic's assignment does, without its handler twice a save)
        fields = state.__dict__
        fields["version"] = new
        try:
            dumped = _json_bytes(state, _HEADER_EXCLUDE)
        finally:
            fields["version"] = old
        header = _bound(dumped, self._raw_text)
        cols = self.summarize(state)
        rows = self._rows(state, start)
        created = state.created_at
        if saved is not None and saved.created is not None and saved.created[0] is created:
            _, created_iso, created_ts = saved.created  # the same moment as at the last save
        else:
            created_iso, created_ts = _created_of(created)
        row = (
            state.task_id,
            state.variant,
            state.model,
            state.status,
            created_iso,
            iso(now),
            created_ts,
            now.timestamp(),
            new,
            cols["customer"],
            state.order_id,
            cols["total_amount"],
            cols["amount_cents"],
            cols["required_role"],
            cols["role_rank"],
            cols["actions"],
            header,
        )
        values = dict(zip(_HEADER_COLS, row, strict=True))
        written = _pick_sometimes(row)
        return _Prepared(now, old, new, saved, appended, rows, values, written)

    def _build(self, run_id: str, parts: _Parts, view: bool = False) -> TaskState:
        """The state of ``parts`` validated once: a :class:`~core.ground.state.RunView` with ``view``
        (parts read by :func:`read_parts` with ``opening``; never remembered for a save), else
        the whole :class:`~core.ground.state.TaskState`. An entry whose checksum did not match is a corrupt
        checkpoint; every entry is validated, times in pydantic's Rust (:class:`core.ground.state._Supported`).
        Raises CorruptCheckpoint, UnsupportedSchemaVersion."""
        # lazy: the models are imported at the first load, so a listing never imports them
        from pydantic import ValidationError

        # lazy: as above
        from core.ground.state import SCHEMA_VERSION, RunView, TaskState

        cls = RunView if view else TaskState
        if parts.damaged is not None:
            self._mark_corrupt(run_id)
            raise CorruptCheckpoint(
                f"The checkpoint of run {run_id} is corrupt ({parts.damaged} changed since it was written: its "
                f"checksum does not match); nothing was changed. Delete it with `resolver reset --run {run_id}` "
                "or restore runs.sqlite from a backup."
            )
        header: Any = parts.header
        keys = _LIST_KEYS_BYTES if type(header) is bytes else _LIST_KEYS
        if not any(k in header for k in keys):
            text = _join_lists(header, list(zip(LISTS, (parts.messages, parts.evidence, parts.events), strict=True)))
            try:
                state = cls.model_validate_json(text)
            except ValidationError:
                state = None
            if state is not None and state.schema_version == SCHEMA_VERSION and state.run_id == run_id:
                state.version = parts.version
                if not view:
                    self._remember(state, parts.version, parts.columns)
                return state
        return self._build_carefully(run_id, parts, view)

    def _build_carefully(self, run_id: str, parts: _Parts, view: bool = False) -> TaskState:
        """The slow path with precise errors: an older schema version, a corrupt row, or a header
        that still holds its lists (release 0.1.0's whole-state form, or a row edited by hand)."""
        # lazy: the models are imported at the first load, so a listing never imports them
        from pydantic import ValidationError

        # lazy: as above
        from core.ground.state import RunView, TaskState, migrate

        cls = RunView if view else TaskState

        try:
            raw = json.loads(parts.header)
            if not isinstance(raw, dict):
                raise ValueError("the checkpoint is not a JSON object")
            whole = [k for k in LISTS if k in raw]
            for key, texts in zip(LISTS, (parts.messages, parts.evidence, parts.events), strict=True):
                if key not in raw:
                    raw[key] = [json.loads(t) for t in texts]
        except RecursionError:
            self._mark_corrupt(run_id)
            raise CorruptCheckpoint(
                f"The checkpoint of run {run_id} is corrupt (its JSON is nested too deeply to read); nothing was "
                f"changed. Delete it with `resolver reset --run {run_id}` or restore runs.sqlite from a backup."
            ) from None
        except (ValueError, TypeError) as exc:
            self._mark_corrupt(run_id)
            raise CorruptCheckpoint(
                f"The checkpoint of run {run_id} is corrupt ({_short(exc)}); nothing was changed. "
                f"Delete it with `resolver reset --run {run_id}` or restore runs.sqlite from a backup."
            ) from exc
        try:
            raw = migrate(raw)
            state = cls.model_validate(raw)
        except RecursionError:
            self._mark_corrupt(run_id)
            raise CorruptCheckpoint(
                f"The checkpoint of run {run_id} is corrupt (its JSON is nested too deeply to read); nothing was changed."
            ) from None
        except ValidationError as exc:
            self._mark_corrupt(run_id)
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise CorruptCheckpoint(
                f"The checkpoint of run {run_id} does not match the TaskState schema "
                f"({where}: {first['msg']}); nothing was changed."
            ) from exc
        if state.run_id != run_id:
            self._mark_corrupt(run_id)
            raise CorruptCheckpoint(
                f"The checkpoint stored under run {run_id} says it is run {_short(state.run_id)}; nothing was changed. "
                f"Delete it with `resolver reset --run {run_id}` or restore runs.sqlite from a backup."
            )
        state.version = parts.version
        if not whole and not view:
            self._remember(state, parts.version, parts.columns)
        return state

    @staticmethod
    def _summary(row: Sequence[Any]) -> RunSummary:
        values = list(row)
        values[15] = bool(values[15])
        return RunSummary(*values)


_LIST_KEYS = tuple(f'"{k}":' for k in LISTS)
_LIST_KEYS_BYTES = tuple(k.encode() for k in _LIST_KEYS)
"""How a header that still holds a list (release 0.1.0's whole state) shows it, as text and as bytes."""

_READ_RUN = f"SELECT CAST(state AS BLOB), version, {', '.join(_SOMETIMES)} FROM runs WHERE run_id = ?"
ENTRY_COLUMNS = ("run_id", "n", "list", "seq", "body", "extra", "ref", "checksum")
"""The ``entries`` table's columns, in the order of :meth:`CheckpointRows._rows`' tuples."""

_READ_ENTRIES = (
    "SELECT i.list, CAST(i.body AS BLOB), CAST(i.extra AS BLOB), i.ref, e.extra, i.checksum FROM entries i "
    "LEFT JOIN entries e "
    "ON i.ref IS NOT NULL AND e.run_id = i.run_id AND e.n = i.ref WHERE i.run_id = ? ORDER BY i.n"
)


_READ_VIEW_ENTRIES = _READ_ENTRIES.replace(" ORDER BY", " AND (i.list <> 'messages' OR i.seq <= ?) ORDER BY")
"""The read side's rows: every evidence and event, the first messages only."""


def read_parts(conn: Any, run_id: str, opening: int | None = None) -> _Parts | None:
    """A run's checkpoint as stored, read on ``conn`` (``?`` SQL; the caller holds one read
    transaction for both statements): the header, and each list's element texts with an
    evidence's result and a tool message's referred content joined back in. With ``opening``
    (the read side, :class:`core.ground.state.RunView`) only the first ``opening`` messages are read:
    the rest of the history is never sent by the database. Each entry's checksum is checked
    (:func:`entry_checksum`): ``damaged`` names the first that did not match. None when no run."""
    # header, bodies and extras as the stored UTF-8 bytes (CAST AS BLOB): checksummed, joined and
    # handed to pydantic as they are, never decoded to str and encoded back
    row = conn.execute(_READ_RUN, (run_id,)).fetchone()
    if row is None:
        return None
    cur = conn.execute(_READ_ENTRIES, (run_id,)) if opening is None else conn.execute(_READ_VIEW_ENTRIES, (run_id, opening))
    rows = cur.fetchall()
    return _assemble_stored(row[0], row[1], tuple(row[2:]), rows) or assemble_parts(row[0], row[1], tuple(row[2:]), rows)


def _assemble_stored(header: bytes, version: int, columns: tuple, rows: list[tuple]) -> _Parts | None:
    """:func:`assemble_parts` of rows read as stored bytes (the SQLite store, :func:`read_parts`)
    when every row is as a save writes it (one tight loop, the checksum's CRCs
    inline): each row's checksum present and matching, an evidence's result and a tool message's
    referred content joined back in. None at the first row that is anything else (no checksum,
    a checksum that does not match, an unknown list, an evidence body ``{}``): the caller then
    reads the rows again with :func:`assemble_parts`, whose sentence names a damaged entry."""
    lists: dict[str, list[bytes]] = {name: [] for name in LISTS}
    for name, body, extra, ref, referred, checksum in rows:
        if _crc(body, extra) != checksum:
            return None
        if name == "evidence":
            if extra is None or body == b"{}":
                return None
            body = b"".join((body[:-1], b',"result":', extra, b"}"))
        elif ref is not None:  # a tool message that repeats an evidence's result: its content is that text
            if body == b"{}":
                return None
            content = b"null" if referred is None else _encode_text(referred).encode()
            body = b"".join((body[:-1], b',"content":', content, b"}"))
        items = lists.get(name)
        if items is None:
            return None
        items.append(body)
    return _Parts(header, version, lists["messages"], lists["evidence"], lists["events"], columns, None)


def assemble_parts(header: str | bytes, version: int, columns: tuple, rows: Iterable[Sequence[Any]]) -> _Parts:
    """A run's :class:`_Parts` from its header text, version, queue columns and ``entries``
    rows ``(list, body, extra, ref, referred, checksum)`` in the order written, as each back-end
    reads them: an evidence's result and a tool message's referred content joined back in, and
    each checksum checked (:func:`entry_checksum`): ``damaged`` names the first that did not
    match (a row without one, written before the checksums, is validated as any other)."""
    raw = type(header) is bytes
    kind, null = (bytes, b"null") if raw else (str, "null")
    lists: dict[str, list[Any]] = {name: [] for name in LISTS}
    damaged = None
    for name, body, extra, ref, referred, checksum in rows:
        # a row written before the checksums (store format 4, PostgreSQL 8) has none
        if checksum is not None and damaged is None and (type(body) is not kind or entry_checksum(body, extra) != checksum):
            damaged = f"entry {len(lists.get(name, ())) + 1} of its {name}"
        if name == "evidence":
            body = _join(body, "result", extra if type(extra) is kind else null)
        elif ref is not None:
            content = _encode_text(referred) if referred is not None else "null"
            body = _join(body, "content", content.encode() if raw else content)
        lists.setdefault(name, []).append(body)
    return _Parts(header, version, lists["messages"], lists["evidence"], lists["events"], columns, damaged)


def sort_order(status: str | None, sort: str | None) -> tuple[str, str, bool]:
    """``(sort, column, ascending)`` of a queue page: ``sort`` or its default (``age`` for
    ``waiting_approval``, else ``updated``). Raises ResolverError for a sort not in :data:`SORTS`."""
    sort = sort or ("age" if status == "waiting_approval" else "updated")
    if sort not in SORTS:
        raise ResolverError(f"Unknown sort {sort!r}: use one of {', '.join(SORTS)}.")
    column, ascending = SORTS[sort]
    return sort, column, ascending


class AuditReads:
    """The read side of :class:`core.contract.store.AuditLog` over a back-end's audit SQL module
    (:attr:`_audit_sql`: ``rows``, ``last_hash``, ``find_row``, ``later_ending``, ``triggers``,
    ``signed_approvals``, each taking a connection first), on connections of ``self.db.read()``."""

    db: Any
    _audit_sql: Any

    def audit_rows(self) -> list[dict[str, Any]]:
        """Every audit row, oldest first, with every column of :data:`core.contract.audit.COLUMNS`."""
        with self.db.read() as conn:
            return self._audit_sql.rows(conn)

    def chain_tip(self) -> tuple[str, int]:
        """``(hash of the newest audit row, number of rows)``; ``(GENESIS, 0)`` when empty."""
        with self.db.read() as conn:
            return self._audit_sql.last_hash(conn)

    def find_audit_row(self, run_id: str, decision: str, sig: str) -> dict[str, Any] | None:
        """The newest audit row of ``run_id`` recording ``decision`` with signature ``sig``, or None."""
        with self.db.read() as conn:
            return self._audit_sql.find_row(conn, run_id, decision, sig)

    def later_ending(self, run_uid: str, after_id: int) -> dict[str, Any] | None:
        """The first row of the run ``run_uid`` after the row ``after_id`` that ends the approval
        recorded there (:func:`core.contract.audit.ends_approval`), or None."""
        with self.db.read() as conn:
            return self._audit_sql.later_ending(conn, run_uid, after_id)

    def audit_triggers(self) -> set[str]:
        """The audit's append-only triggers present now."""
        with self.db.read() as conn:
            return self._audit_sql.triggers(conn)

    def signed_approvals(self, prefix: str) -> list[tuple[str, str]]:
        """``(run_id, header JSON)`` of each run holding an approval signed with ``prefix``."""
        with self.db.read() as conn:
            return self._audit_sql.signed_approvals(conn, prefix)


def audit_values(run_id: str, audit: dict[str, Any], prev: str) -> tuple[Any, ...]:
    """The values of an appended audit row after its ``id``, in :data:`core.contract.audit.COLUMNS`
    order: ``audit`` as :meth:`core.contract.store.AuditLog.append_audit` takes it, chained to ``prev``."""
    return (
        run_id,
        audit["decision"],
        audit["role"],
        audit["name"],
        audit["digest"],
        audit["at"],
        audit.get("detail", ""),
        audit.get("run_uid"),
        prev,
        audit.get("sig") or "",
        audit.get("binds"),
    )


JOURNAL_KEY_LABEL = b"resolver model-call journal v1"
"""What the home's approval key is HMAC-ed over to give the journal's sealing key
(:func:`journal_key`): a key of its own, so a seal is never an approval's signature."""

JOURNAL_ROW = ("run_id", "step", "attempt", "route", "answer", "tokens_in", "tokens_out")
"""The fields of a journal row a seal covers (:func:`journal_seal`), in that order."""

_JOURNAL_KEYS = ("step", "attempt", "route", "sent_at", "answer", "tokens_in", "tokens_out", "answered_at")


def journal_key(approval_key: bytes) -> bytes:
    """The key that seals a SQLite home's journal of model calls: HMAC-SHA256 of
    :data:`JOURNAL_KEY_LABEL` under the home's approval key (``approval.key``, 32 bytes or more)."""
    return hmac.new(approval_key, JOURNAL_KEY_LABEL, hashlib.sha256).digest()


def journal_seal(
    key: bytes,
    run_id: str,
    step: int,
    attempt: int,
    route: str,
    answer: str | None,
    tokens_in: int | None,
    tokens_out: int | None,
) -> str:
    """The seal of one journal row: HMAC-SHA256 (hex, 64 characters) under ``key``
    (:func:`journal_key`) of the canonical JSON of :data:`JOURNAL_ROW` (``answer`` and the tokens
    None while the attempt is in flight). Only a writer holding the home's key can make it, so
    a row planted with SQL, or one whose answer or tokens were changed since, does not verify."""
    body = json.dumps([run_id, step, attempt, route, answer, tokens_in, tokens_out], ensure_ascii=False, separators=(",", ":"))
    return hmac.new(key, body.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def seal_verdict(key: bytes, row: Sequence[Any]) -> str | None:
    """Why the journal row ``row`` (:data:`JOURNAL_ROW`'s values, then its seal) was not written
    by its runner, as a clause for a sentence; None when its seal verifies under ``key``."""
    *fields, seal = row
    if not seal:
        return "the row has no seal"
    if not hmac.compare_digest(str(seal), journal_seal(key, *fields)):
        return "its seal does not verify with the home's key"
    return None


class ModelCallJournal:
    """The journal of live model calls over ``?`` SQL, and the one check of who wrote each row.

    A back-end supplies :meth:`_journal_write` (a write transaction), :meth:`_journal_read`,
    where writers do not take turns for the whole database :meth:`_journal_lock` (one numberer
    of a run's attempts), and the check: :attr:`_journal_mark` (the column that vouches for a
    row: SQLite's ``seal``, PostgreSQL's ``written_by``), :meth:`_journal_sealer` (how a write
    seals its row, or None where the database stamps the writer itself) and
    :meth:`_journal_verdicts` (for each row, why it was not written by the run's runner).

    Why: a resume takes a journaled answer as the model's turn, and the turn becomes the run's
    proposal. Only the agent's runner proposes, so an answer anyone else wrote into the table
    (plain SQL into ``runs.sqlite``, an approver's database user on a team store) must never be
    taken: :meth:`journal_answered` refuses the step (:class:`~core.ground.errors.JournalUntrusted`),
    :meth:`model_calls` says which rows are trusted, and :meth:`journal_problems` lists every
    untrusted row for ``resolver doctor``."""

    clock: Any
    _journal_mark = ""

    def _journal_write(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _journal_read(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _journal_lock(self, conn: Any, run_id: str) -> None:
        """Inside the write transaction, before the attempt is numbered (SQLite: nothing, its
        writers already take turns)."""

    def _journal_sealer(self) -> functools.partial[str] | None:
        """Called before a write's transaction: :func:`journal_seal` bound to this store's key,
        or None where the database stamps the writer (PostgreSQL). Raises ResolverError when
        the store cannot seal (a SQLite store opened without its home's key): nothing is written."""
        return None

    def _journal_verdicts(self, conn: Any, rows: Sequence[Sequence[Any]]) -> list[str | None] | None:
        """For each row (:data:`JOURNAL_ROW`'s values, then :attr:`_journal_mark`'s), None when the
        run's runner wrote it, else why not (a clause); None for all of them when this store
        cannot tell (a SQLite store opened without its home's key)."""
        raise NotImplementedError

    def _journal_rows(self, conn: Any, where: str, values: Sequence[Any]) -> list[Any]:
        """The rows ``where`` selects: :data:`JOURNAL_ROW`'s values, the mark, ``sent_at`` and
        ``answered_at``, by run, step and attempt."""
        return conn.execute(
            f"SELECT {', '.join(JOURNAL_ROW)}, {self._journal_mark}, sent_at, answered_at FROM model_calls "
            f"{where} ORDER BY run_id, step, attempt",
            tuple(values),
        ).fetchall()

    def _unkeyed(self) -> ResolverError:
        """The refusal of a store that cannot check its journal's seals (no home key)."""
        return ResolverError(
            "This checkpoint store was opened without its home's key, so the journal of model calls cannot be checked "
            "or written here; use resolver (run, resume) on the home instead. Nothing was asked."
        )

    def journal_attempt(self, run_id: str, step: int, route: str) -> int:
        """Record that attempt N of ``step``'s model call is about to be sent (committed before it
        is); returns N, 1 for the step's first attempt. The row is sealed (SQLite) or stamped with
        its writer (PostgreSQL). Raises ResolverError when this store cannot seal it."""
        sealer = self._journal_sealer()
        with self._journal_write() as conn:
            self._journal_lock(conn, run_id)
            row = conn.execute(
                "SELECT COALESCE(MAX(attempt), 0) FROM model_calls WHERE run_id = ? AND step = ?", (run_id, step)
            ).fetchone()
            attempt = int(row[0]) + 1
            values: tuple[Any, ...] = (run_id, step, attempt, route, iso(self.clock.now()))
            if sealer is None:
                conn.execute("INSERT INTO model_calls (run_id, step, attempt, route, sent_at) VALUES (?, ?, ?, ?, ?)", values)
            else:
                conn.execute(
                    "INSERT INTO model_calls (run_id, step, attempt, route, sent_at, seal) VALUES (?, ?, ?, ?, ?, ?)",
                    (*values, sealer(run_id, step, attempt, route, None, None, None)),
                )
        return attempt

    def journal_answer(self, run_id: str, step: int, attempt: int, answer: str, tokens_in: int, tokens_out: int) -> None:
        """Save the raw answer (text) and usage (tokens) of an attempt, committed before the
        runner acts on it; the row is sealed again over its answer (SQLite) or stamped again with
        its writer (PostgreSQL).

        Raises:
            JournalUntrusted: the attempt's row no longer verifies (it was changed since its
                runner wrote it): it is not sealed again, nothing is saved.
            ResolverError: the attempt was never recorded, or this store cannot seal it.
        """
        sealer = self._journal_sealer()
        with self._journal_write() as conn:
            rows = self._journal_rows(conn, "WHERE run_id = ? AND step = ? AND attempt = ?", (run_id, step, attempt))
            if not rows:
                raise ResolverError(f"No model call {attempt} of step {step} of {run_id} was recorded before its answer.")
            verdict = (self._journal_verdicts(conn, [rows[0][:8]]) or [None])[0]
            if verdict is not None:
                raise JournalUntrusted(run_id, step, attempt, verdict)
            sets, values = "answer = ?, tokens_in = ?, tokens_out = ?, answered_at = ?", [answer, tokens_in, tokens_out]
            values.append(iso(self.clock.now()))
            if sealer is not None:
                sets += ", seal = ?"
                values.append(sealer(run_id, step, attempt, rows[0][3], answer, tokens_in, tokens_out))
            conn.execute(
                f"UPDATE model_calls SET {sets} WHERE run_id = ? AND step = ? AND attempt = ?", (*values, run_id, step, attempt)
            )

    def journal_answered(self, run_id: str, step: int) -> str | None:
        """The raw answer of ``step``'s latest answered attempt, or None when none was answered.

        Every row of the step is checked first: one its runner did not write refuses the step
        whole (a planted answer is never taken, and a planted attempt is never counted as paid).

        Raises:
            JournalUntrusted: a row of the step failed the back-end's check (one sentence).
            ResolverError: this store cannot check its rows (opened without its home's key).
        """
        with self._journal_read() as conn:
            rows = self._journal_rows(conn, "WHERE run_id = ? AND step = ?", (run_id, step))
            verdicts = self._journal_verdicts(conn, [r[:8] for r in rows]) if rows else []
        if verdicts is None:
            raise self._unkeyed()
        for r, why in zip(rows, verdicts, strict=True):
            if why is not None:
                raise JournalUntrusted(run_id, step, int(r[2]), why)
        answered = [r[4] for r in rows if r[4] is not None]
        return answered[-1] if answered else None

    def model_calls(self, run_id: str) -> list[dict[str, Any]]:
        """The run's journal, by step and attempt: ``{"step", "attempt", "route", "sent_at",
        "answer" (text or None while unanswered), "tokens_in", "tokens_out", "answered_at",
        "trusted" (True when the run's runner wrote the row, False when it failed the
        back-end's check, None when this store cannot tell: opened without its home's key),
        "why" (the clause saying how it failed, else "")}``."""
        with self._journal_read() as conn:
            rows = self._journal_rows(conn, "WHERE run_id = ?", (run_id,))
            verdicts = self._journal_verdicts(conn, [r[:8] for r in rows]) if rows else []
        out = []
        for i, r in enumerate(rows):
            why = None if verdicts is None else verdicts[i]
            call = dict(zip(_JOURNAL_KEYS, (r[1], r[2], r[3], r[8], r[4], r[5], r[6], r[9]), strict=True))
            call["trusted"] = None if verdicts is None else why is None
            call["why"] = why or ""
            out.append(call)
        return out

    def journal_problems(self) -> list[dict[str, Any]]:
        """Every row of the store's journal that its run's runner did not write, by run, step
        and attempt: ``{"run_id", "step", "attempt", "why"}`` (for ``resolver doctor``).
        Raises ResolverError when this store cannot check its rows (opened without its home's key)."""
        with self._journal_read() as conn:
            rows = self._journal_rows(conn, "", ())
            verdicts = self._journal_verdicts(conn, [r[:8] for r in rows]) if rows else []
        if verdicts is None:
            raise self._unkeyed()
        return [
            {"run_id": r[0], "step": r[1], "attempt": r[2], "why": why}
            for r, why in zip(rows, verdicts, strict=True)
            if why is not None
        ]


def event_dicts(run_id: str, rows: Sequence[tuple[Any, Any, Any]]) -> list[dict[str, Any]]:
    """A run's trace from its event rows ``(extra (the time), body, seq)`` in order:
    ``{"seq", "at" (ISO 8601), "kind", "message", "data"}``; a damaged event reads as kind ``corrupt``."""
    out = []
    for at, body, seq in rows:
        try:
            ev = json.loads(body or "{}")
            if not isinstance(ev, dict):
                raise ValueError("not an object")
        except (ValueError, RecursionError):
            ev = {"kind": "corrupt", "message": f"this event of run {run_id} is damaged and cannot be read"}
        data = ev.get("data", {})
        out.append(
            {
                "seq": ev.get("seq") if isinstance(ev.get("seq"), int) else seq,
                "at": str(at or ""),
                "kind": str(ev.get("kind", "")),
                "message": str(ev.get("message", "")),
                "data": data if isinstance(data, dict) else {},
            }
        )
    return out
    return out


def refuse_save(
    run_id: str, version: int, on_disk: int, holder: str | None, lease_owner: str | None
) -> StaleCheckpoint | LeaseHeld:
    """The error of a save that wrote nothing: the version moved on (``on_disk``, 0 when the run
    is gone), or ``lease_owner`` no longer holds the lease (``holder`` does)."""
    if on_disk != version:
        return StaleCheckpoint(
            f"Run {run_id} changed since this copy was read (version {on_disk} saved, "
            f"{version} in hand); reload it and try again."
        )
    if lease_owner is not None and holder != lease_owner:
        return LeaseHeld(
            f"Run {run_id} is no longer leased to this executor "
            f"({'taken over by ' + holder.split(':')[0] if holder else 'released'}); nothing more was written."
        )
    return StaleCheckpoint(f"Run {run_id} could not be saved at version {version}; reload it and try again.")


def _short(value: object, limit: int = 80) -> str:
    """``value`` as text for a sentence: control characters dropped, at most ``limit`` characters."""
    text = "".join(ch if ch.isprintable() else "?" for ch in str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


REGISTRY_COLUMNS = "name, role, public_key, added_at, revoked_at, signature, private_key, recovery_key"


class RegistryChange:
    """The writes of one change of the approvers registry's rows, inside its transaction
    (:class:`core.contract.registry.ApproverChange`), over a connection speaking ``?`` SQL (``sqlite3``,
    or :class:`core.stores.postgres.pool.QmarkConnection`); ``order`` is the column that keeps
    the order rows were added in."""

    def __init__(self, conn: Any, order: str = "rowid") -> None:
        self._conn = conn
        self._order = order

    def rows(self) -> list[tuple]:
        """Every row as this transaction sees it, oldest first."""
        return [tuple(r) for r in self._conn.execute(f"SELECT {REGISTRY_COLUMNS} FROM approvers ORDER BY {self._order}")]

    def insert(self, row: tuple) -> None:
        """Add a row of the eight columns. Raises ResolverError-wrapped IntegrityError for a name present."""
        self._conn.execute(f"INSERT INTO approvers ({REGISTRY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)

    def set_revoked(self, name: str, at: str, signature: str) -> None:
        """Mark ``name`` revoked at ``at`` with the owner's new ``signature``."""
        self._conn.execute("UPDATE approvers SET revoked_at = ?, signature = ? WHERE name = ?", (at, signature, name))

    def set_keys(self, name: str, private_key: str, recovery_key: str | None) -> None:
        """Replace ``name``'s encrypted private key and recovery key."""
        self._conn.execute(
            "UPDATE approvers SET private_key = ?, recovery_key = ? WHERE name = ?",
            (private_key, recovery_key, name),
        )

    def replace_key(self, name: str, old: str, new: str) -> None:
        """Replace ``name``'s encrypted private key ``old`` by ``new`` (nothing if it changed since)."""
        self._conn.execute(
            "UPDATE approvers SET private_key = ? WHERE name = ? AND private_key = ?",
            (new, name, old),
        )


# -- moving a store: every row, table by table ---------------------------------------------------

WORLD_TABLES = (
    "customers",
    "catalog",
    "orders",
    "order_lines",
    "payments",
    "shipments",
    "refunds",
    "reshipments",
    "return_labels",
    "replies",
    "operations",
)
"""The practice world's tables in both back-ends: the ones built from ``data/``, what the write
services did, and the operations register."""

COPY_PARTS: dict[str, tuple[str, ...]] = {
    "runs": ("runs", "entries", "model_calls", "run_marks"),
    "audit": ("audit",),
    "events": ("queue_events",),
    "registry": ("approvers",),
    "world": WORLD_TABLES,
}
"""The parts of a store that ``resolver store copy`` moves, each written in one transaction:
part -> its tables, in the order they are written. ``runs``: headers with their versions and
queue columns, the lists' rows, the journal of model calls, the runs' marks (claims, hand-overs,
snoozes); ``audit``: the hash-chained rows, verbatim; ``events``: the queue's events with their
IDs (a watcher's place and a notify command's key for a repeat), after the runs and the audit,
whose rows make the target's triggers write events of their own as they go in: those are
replaced by the source's, which are the record (:mod:`core.stores.events`); ``registry``: the approvers' rows; ``world``: the practice world's tables and the
operations register (its ``seq`` numbers kept)."""

GUARDED = ("runs", "audit", "approvers", "operations")
"""The tables a target must not hold rows in: a copy never merges into a used store."""


def world_columns() -> dict[str, tuple[str, ...]]:
    """The practice world's columns per table, in the order both back-ends make them: the
    built tables' from the rows of ``data/`` (:func:`core.stores.practice.world_rows`), the write
    services' and the register's from :data:`core.stores.practice.EFFECT_TABLES_COLUMNS`."""
    # lazy: the world's data and tables are read only by a copy, so a listing never imports them
    from core.ground.data import load_world_data

    # lazy: as above
    from core.stores.practice import EFFECT_TABLES_COLUMNS, world_rows

    out: dict[str, tuple[str, ...]] = {}
    for table, (rows, _pk) in world_rows(load_world_data()).items():
        names: dict[str, None] = {}
        for row in rows:
            names.update(dict.fromkeys(row))
        out[table] = tuple(names)
    for table, cols in EFFECT_TABLES_COLUMNS.items():
        out[table] = tuple(c for c, _t in cols)
    return out


def copy_columns(table: str) -> tuple[str, ...]:
    """The columns ``store copy`` carries for ``table`` (the ones both back-ends have; a
    back-end's own columns, PostgreSQL's ``runs.n`` and ``runs.search``, SQLite's rowid, are
    made again by the target). Raises KeyError for a table not in :data:`COPY_PARTS`."""
    fixed: dict[str, tuple[str, ...]] = {
        "run_marks": MARK_COLUMNS,
        "queue_events": EVENT_COLUMNS,
        "runs": ("run_id", *_HEADER_COLS, "lease_owner", "lease_expires", "state_ok"),
        "entries": ENTRY_COLUMNS,
        "model_calls": ("run_id", "step", "attempt", "route", "sent_at", "answer", "tokens_in", "tokens_out", "answered_at"),
        "audit": AUDIT_COLUMNS,
        "approvers": tuple(c.strip() for c in REGISTRY_COLUMNS.split(",")),
    }
    if table in fixed:
        return fixed[table]
    return world_columns()[table]


def copy_order(table: str, first: str) -> str:
    """The ``ORDER BY`` of ``table``'s rows in a copy: the order they were written (``first``:
    the back-end's insertion order column, SQLite's ``rowid`` or PostgreSQL's ``n``, for
    ``runs`` and ``approvers``), the audit by ``id``, the register by ``seq``, the rest by
    their keys. Raises KeyError for a table not in :data:`COPY_PARTS`."""
    special = {
        "runs": first,
        "approvers": first,
        "entries": "run_id, n",
        "model_calls": "run_id, step, attempt",
        "audit": "id",
        "operations": "seq",
        "order_lines": "order_id, sku",
    }
    return special.get(table) or copy_columns(table)[0]


Batch = tuple[str, tuple[str, ...], list[tuple[Any, ...]]]
"""One batch of a copy: ``(table, columns, rows)``, each row a tuple in ``columns``' order."""

COPY_BATCH = 1000
"""Rows per batch read from a source and written to a target."""


def refuse_used(label: str, counts: dict[str, int]) -> None:
    """Raise StoreNotEmpty when ``counts`` (rows per table of a target) holds runs, audit rows,
    approvers or register entries: a copy writes only into an empty store, nothing is merged."""
    held = [f"{counts[t]} {t} row(s)" for t in GUARDED if counts.get(t)]
    if held:
        raise StoreNotEmpty(
            f"{label[:1].upper()}{label[1:]} already holds {', '.join(held)}; a store is copied only into an empty "
            "one (nothing is merged): choose a new folder or schema."
        )


def check_batch(part: str, batch: Batch) -> None:
    """Refuse a batch whose table is not ``part``'s or whose columns are not
    :func:`copy_columns`' (a source of another layout). Raises ResolverError with one sentence."""
    table, columns, _rows = batch
    if table not in COPY_PARTS.get(part, ()):
        raise ResolverError(f"The table {table!r} is not part of the store's {part}; nothing of it was written.")
    want = copy_columns(table)
    if tuple(columns) != want:
        raise ResolverError(
            f"The source's {table} has the columns {', '.join(columns)}; this resolver copies {', '.join(want)}. "
            "Nothing of that part was written."
        )
