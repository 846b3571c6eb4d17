"""The one injectable clock: every "now" in the core comes from here.

Times are timezone-aware, in Larkfield's zone (America/Toronto), stored as ISO 8601 with offset
(``2026-10-09T17:00:50-04:00``). Tests and trainers pass a :class:`FixedClock`; the trainer's
clock kept in the home folder is a :class:`FileClock` (``resolver clock ...``).

**The supported range**: every time resolver takes, from a clock, the command line
(``clock set``, ``clock advance``, ``prune --older-than``) or a file (``clock.json``, a saved
state), is checked by :func:`supported`: timezone-aware, an offset of whole minutes, from
:data:`EARLIEST` (2000-01-01 00:00) up to but not including :data:`END` (2100-01-01 00:00),
America/Toronto. Outside it a time means nothing for a support queue and cannot be kept
faithfully: before 1895 Toronto's offset was local mean time (-05:17:32), which ISO 8601 as
stored (whole minutes) cannot hold, so an approval made then no longer matched its signature
once saved and was refused as forged. A time out of range is refused with
:class:`TimeOutOfRange`, a sentence, before anything is written.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo

from core.ground.errors import BadArgument, ResolverError


class ClockParts(Protocol):
    """Where a shop's trainer clock is kept when it is not a file in the home folder: the part
    ``clock.json`` of the home's per-shop parts (:class:`core.contract.store.ShopParts` fulfils
    it). Named here, in the clock's own terms, so that the clock stands below the contracts."""

    def read(self, name: str) -> bytes | None: ...

    def write(self, name: str, data: bytes) -> None: ...

    def remove(self, name: str) -> None: ...

    def label(self, name: str) -> str: ...


SHOP_TZ = ZoneInfo("America/Toronto")
"""Larkfield's time zone: every time shown to a person is in it."""

EARLIEST = datetime(2000, 1, 1, tzinfo=SHOP_TZ)
"""The first supported time (2000-01-01T00:00:00-05:00)."""
END = datetime(2100, 1, 1, tzinfo=SHOP_TZ)
"""The first time past the supported range (2100-01-01T00:00:00-05:00)."""
SUPPORTED_RANGE = "2000-01-01 00:00 to 2099-12-31 23:59:59, America/Toronto"
"""The supported range as the sentences say it (README, "The home folder")."""


class TimeOutOfRange(ResolverError, ValueError):
    """A time outside the supported range, without a UTC offset, or with an offset that is not
    whole minutes (a ValueError too, so a pydantic model reports it as a validation error)."""


def supported(value: datetime, what: str = "The time") -> datetime:
    """``value`` itself when resolver can mean and keep it, else :class:`TimeOutOfRange`.

    Args:
        value: any ``datetime``.
        what: how the sentence names it, capitalised (``"The trainer's clock"``).

    Returns ``value`` unchanged: timezone-aware, a UTC offset of whole minutes, and
    :data:`EARLIEST` <= value < :data:`END`.

    Raises:
        TimeOutOfRange: naive, an offset with seconds (Toronto before 1895), or out of range.
    """
    offset = value.utcoffset()
    if offset is None:
        raise TimeOutOfRange(f"{what} {value.isoformat()} has no UTC offset; give one, e.g. 2026-10-12T09:00:00-04:00.")
    if not EARLIEST <= value < END:
        raise TimeOutOfRange(
            f"{what} {value.isoformat()} is outside the times resolver supports; use a time from {SUPPORTED_RANGE}."
        )
    if offset.seconds % 60 or offset.microseconds:  # whole minutes (a timedelta's seconds are 0 to 86399, any sign)
        raise TimeOutOfRange(
            f"{what} {value.isoformat()} has a UTC offset with seconds, which resolver cannot keep; use a time from {SUPPORTED_RANGE}."
        )
    return value


class Clock(Protocol):
    """Something that says what time it is and can wait (the executor's backoff)."""

    def now(self) -> datetime:
        """The current time, timezone-aware."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (a simulated clock just moves forward)."""


def _real_now() -> datetime:
    """This machine's time in America/Toronto, to the second; :class:`TimeOutOfRange` when the
    machine's clock is outside the supported range (a computer that lost its time says 1970)."""
    return supported(datetime.now(SHOP_TZ).replace(microsecond=0), "This computer's clock says it is")


class SystemClock:
    """Real time in America/Toronto; ``sleep`` really sleeps.

    Raises :class:`TimeOutOfRange` from :meth:`now` when the machine's clock is out of range.
    """

    simulated = False

    def now(self) -> datetime:
        return _real_now()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class FixedClock:
    """A clock that only moves when told to: ``advance`` or ``sleep`` (seconds).

    Every time it is given or moved to is checked by :func:`supported` (raises
    :class:`TimeOutOfRange`, which is a ValueError), so it never says a time resolver cannot keep.
    """

    simulated = True

    def __init__(self, at: datetime | str) -> None:
        self._at = supported(parse_time(at) if isinstance(at, str) else at, "The fixed clock's time")

    def now(self) -> datetime:
        return self._at

    def sleep(self, seconds: float) -> None:
        self.advance(timedelta(seconds=seconds))

    def advance(self, delta: timedelta) -> None:
        try:
            moved = self._at + delta
        except OverflowError:
            raise TimeOutOfRange(
                f"Moving the fixed clock by {format_duration(delta)} leaves the times resolver supports ({SUPPORTED_RANGE})."
            ) from None
        self._at = supported(moved, "The fixed clock's time")

    def set(self, at: datetime) -> None:
        self._at = supported(at, "The fixed clock's time")


CLOCK_PART = "clock.json"
"""The trainer's clock's name among a home's per-shop parts (:data:`core.contract.store.SHOP_PARTS`)."""


class FileClock:
    """The trainer's clock, kept in ``clock.json`` in the home folder.

    The file holds ``{"at": ISO time, "set_at": real ISO time}`` and the clock runs forward from
    ``at`` at real speed. With no file, the clock is real time. :meth:`set` writes a temporary
    file (0600) and renames it over ``clock.json``, so a reader sees the old file or the new one,
    never a torn one. A damaged file (a folder in its place, bad JSON, a time outside the
    supported range) raises ResolverError with a sentence, never a traceback; :meth:`set` and
    :meth:`advance` refuse a time out of range with :class:`TimeOutOfRange`, and :meth:`now`
    raises it once the clock has run past :data:`END`.

    With ``parts`` (a team store's per-shop parts) the clock is kept as their part
    ``clock.json`` instead, shared by every machine pointed at the store, and ``path`` is only
    named in sentences.
    """

    def __init__(self, path: Path, parts: ClockParts | None = None) -> None:
        self.path = Path(path)
        self.parts = parts

    def _load(self) -> str:
        """The clock's text. Raises FileNotFoundError when there is none, OSError, ResolverError."""
        if self.parts is None:
            return self.path.read_text(encoding="utf-8")
        data = self.parts.read(CLOCK_PART)
        if data is None:
            raise FileNotFoundError(CLOCK_PART)
        return data.decode("utf-8")

    def _where(self) -> str:
        return str(self.path) if self.parts is None else self.parts.label(CLOCK_PART)

    def _read(self) -> tuple[datetime, datetime] | None:
        try:
            raw = json.loads(self._load())
            at = supported(parse_time(raw["at"]), "its time")
            return at, supported(parse_time(raw["set_at"]), "the real time it was set at,")
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OverflowError, OSError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
            raise ResolverError(
                f"The clock file {self._where()} is damaged ({why}); run `resolver clock real` "
                "(a folder in its place must be removed by hand)."
            ) from None

    @property
    def simulated(self) -> bool:
        return self._read() is not None

    def now(self) -> datetime:
        kept = self._read()
        real = _real_now()
        if kept is None:
            return real
        at, set_at = kept
        try:
            now = (at + (real - set_at)).astimezone(SHOP_TZ)
        except (OverflowError, ValueError):
            now = END
        if not EARLIEST <= now < END:
            raise TimeOutOfRange(
                f"The trainer's clock ({self._where()}) has run outside the times resolver supports ({SUPPORTED_RANGE}); "
                "run `resolver clock set` with a time in that range, or `resolver clock real`."
            )
        return now

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def set(self, at: datetime) -> None:
        """Set the simulated time. Raises :class:`TimeOutOfRange` (nothing written) for a time
        outside the supported range, ResolverError for a folder in the file's place."""
        text = iso(supported(at, "The time"))
        real = _real_now()
        if self.parts is not None:
            self.parts.write(CLOCK_PART, (json.dumps({"at": text, "set_at": iso(real)}) + "\n").encode("utf-8"))
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_dir():
            raise ResolverError(f"The clock file {self.path} is a folder; remove it, then set the clock again.")

        import tempfile  # lazy: only setting the trainer's clock writes a file; reading it never does

        fd, tmp = tempfile.mkstemp(prefix=".clock-", suffix=".tmp", dir=self.path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps({"at": text, "set_at": iso(real)}) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def advance(self, delta: timedelta) -> None:
        """Move the simulated time by ``delta``. Raises :class:`TimeOutOfRange` (nothing written)
        when that leaves the supported range."""
        now = self.now()
        try:
            target = now + delta
        except (OverflowError, ValueError):
            target = None
        if target is None or not EARLIEST <= target < END:
            raise TimeOutOfRange(
                f"Moving the clock by {format_duration(delta)} from {iso(now)} leaves the times resolver supports; "
                f"the clock runs from {SUPPORTED_RANGE}."
            )
        self.set(target)

    def real(self) -> None:
        """Back to real time (removes ``clock.json``). Raises ResolverError for a folder in its place."""
        if self.parts is not None:
            self.parts.remove(CLOCK_PART)
            return
        try:
            self.path.unlink(missing_ok=True)
        except IsADirectoryError:
            raise ResolverError(f"The clock file {self.path} is a folder; remove it by hand.") from None
        except OSError as exc:
            if self.path.is_dir():
                raise ResolverError(f"The clock file {self.path} is a folder; remove it by hand.") from None
            raise ResolverError(f"Cannot remove the clock file {self.path}: {exc.strerror or exc}.") from None


def parse_time(text: str) -> datetime:
    """Parse ISO 8601; a time without offset is taken as America/Toronto. Raises ValueError."""
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=SHOP_TZ)
    return value


def iso(value: datetime) -> str:
    """ISO 8601 with offset, in America/Toronto, to the second: the text of
    ``value.astimezone(SHOP_TZ).replace(microsecond=0).isoformat()``, with the fraction cut out
    of ``isoformat``'s text instead of a second datetime made by ``replace`` (that datetime was
    a third of the 27k instructions of each save's ``updated_at``). ``isoformat`` always writes
    the year in four digits and a fraction as ``.`` and six digits, so the fraction is
    characters 19 to 26."""
    local = value.astimezone(SHOP_TZ)
    text = local.isoformat()
    return text[:19] + text[26:] if local.microsecond else text


def age(since: datetime, now: datetime) -> str:
    """A short age for a queue: ``45s``, ``12m``, ``3h 5m``, ``2d 16h``."""
    seconds = max(0, int((now - since).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m"
    return f"{secs}s"


def format_duration(delta: timedelta) -> str:
    """A duration as :func:`parse_duration` reads it: ``1d``, ``2d16h``, ``90m`` is ``1h30m``,
    ``0s``; a negative one as ``back 1d``. Never Python's ``1 day, 0:00:00``."""
    seconds = int(abs(delta).total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    text = "".join(f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if n) or "0s"
    return f"back {text}" if delta < timedelta(0) else text


def parse_duration(text: str) -> timedelta:
    """``2d``, ``3h``, ``90m``, ``45s`` or combinations like ``2d16h``; ``back 1d`` goes
    backwards (a leading ``-`` would read as an option). Raises BadArgument (exit 2)."""
    parts = re.fullmatch(r"\s*(back\s+)?(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?\s*", text or "")
    if not parts or not any(parts.groups()[1:]):
        raise BadArgument(f"Cannot read the duration {text!r}: use e.g. 2d16h, 90m, 45s or 'back 1d'.")
    d, h, m, s = (int(x or 0) for x in parts.groups()[1:])
    try:
        delta = timedelta(days=d, hours=h, minutes=m, seconds=s)
    except OverflowError:
        raise BadArgument(f"The duration {text!r} is too long for the clock; use at most a few thousand days.") from None
    return -delta if parts.group(1) else delta
