"""The one injectable clock: every "now" in the core comes from here.

Times are timezone-aware, in Larkfield's zone (America/Toronto), stored as ISO 8601 with offset
(``2026-10-09T17:00:50-04:00``). Tests and trainers pass a :class:`FixedClock`; the trainer's
clock kept in the home folder is a :class:`FileClock` (``resolver clock ...``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo

from core.errors import ResolverError

SHOP_TZ = ZoneInfo("America/Toronto")
"""Larkfield's time zone: every time shown to a person is in it."""


class Clock(Protocol):
    """Something that says what time it is and can wait (the executor's backoff)."""

    def now(self) -> datetime:
        """The current time, timezone-aware."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (a simulated clock just moves forward)."""


class SystemClock:
    """Real time in America/Toronto; ``sleep`` really sleeps."""

    simulated = False

    def now(self) -> datetime:
        return datetime.now(SHOP_TZ).replace(microsecond=0)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class FixedClock:
    """A clock that only moves when told to: ``advance`` or ``sleep`` (seconds)."""

    simulated = True

    def __init__(self, at: datetime | str) -> None:
        self._at = parse_time(at) if isinstance(at, str) else at
        if self._at.tzinfo is None:
            raise ValueError("FixedClock needs a timezone-aware time.")

    def now(self) -> datetime:
        return self._at

    def sleep(self, seconds: float) -> None:
        self.advance(timedelta(seconds=seconds))

    def advance(self, delta: timedelta) -> None:
        self._at = self._at + delta

    def set(self, at: datetime) -> None:
        self._at = at


class FileClock:
    """The trainer's clock, kept in ``clock.json`` in the home folder.

    The file holds ``{"at": ISO time, "set_at": real ISO time}`` and the clock runs forward from
    ``at`` at real speed. With no file, the clock is real time. :meth:`set` writes a temporary
    file (0600) and renames it over ``clock.json``, so a reader sees the old file or the new one,
    never a torn one. A damaged file (a folder in its place, bad JSON, times out of range) raises
    ResolverError with a sentence, never a traceback.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _read(self) -> tuple[datetime, datetime] | None:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return parse_time(raw["at"]), parse_time(raw["set_at"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OverflowError, OSError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
            raise ResolverError(
                f"The clock file {self.path} is damaged ({why}); run `resolver clock real` "
                "(a folder in its place must be removed by hand)."
            ) from None

    @property
    def simulated(self) -> bool:
        return self._read() is not None

    def now(self) -> datetime:
        kept = self._read()
        real = datetime.now(SHOP_TZ).replace(microsecond=0)
        if kept is None:
            return real
        at, set_at = kept
        try:
            return (at + (real - set_at)).astimezone(SHOP_TZ)
        except (OverflowError, ValueError):
            raise ResolverError(f"The clock file {self.path} holds a time out of range; run `resolver clock real`.") from None

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def set(self, at: datetime) -> None:
        """Set the simulated time. Raises ResolverError for a time out of range."""
        real = datetime.now(SHOP_TZ).replace(microsecond=0)
        try:
            text = iso(at)
            at + timedelta(days=3650)  # the clock must be able to run on for years
        except (OverflowError, ValueError):
            raise ResolverError(f"{at.isoformat()} is out of range for the clock; use a date between 1900 and 9000.") from None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_dir():
            raise ResolverError(f"The clock file {self.path} is a folder; remove it, then set the clock again.")
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
        """Move the simulated time by ``delta``. Raises ResolverError when out of range."""
        try:
            target = self.now() + delta
        except (OverflowError, ValueError):
            raise ResolverError(f"Advancing the clock by {delta} takes it out of range.") from None
        self.set(target)

    def real(self) -> None:
        """Back to real time (removes ``clock.json``). Raises ResolverError for a folder in its place."""
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
    """ISO 8601 with offset, in America/Toronto, to the second."""
    return value.astimezone(SHOP_TZ).replace(microsecond=0).isoformat()


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
