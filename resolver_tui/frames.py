"""The queue screen's frames: the next frame after a quiet moment comes at the next tick of the
frame clock, not the one after.

Textual paints a screen on a timer of ``1 / MAX_FPS`` (60 a second), paused while nothing
changes. Its timer, woken after a pause, skips the ticks it missed with one too many: the
frame after a key's first frame (the cursor moved) came 17 to 33 ms later, never sooner, so
the detail read in 8 ms of a key at 1,000,000 runs was painted at 40 ms (measured: the
detail rendered at 10 ms, the timer resumed at 10 ms, its tick at 35 ms). :class:`FrameClock`
is Textual 8's timer with that count corrected: after a pause the next tick is the next one
due (:func:`next_tick`), so frames still keep to the clock's grid, at most ``MAX_FPS`` a second
on average.
"""

from __future__ import annotations

from textual import _time
from textual._time import sleep
from textual.timer import EventTargetGone, Timer

SCREEN_UPDATE = "screen_update"
"""The name Textual gives a screen's timer of frames."""


def next_tick(start: float, now: float, interval: float) -> tuple[int, float]:
    """``(count, time)`` of the first tick due after ``now`` on the grid ``start + k *
    interval`` (``count`` ticks before it): ``start`` 0, ``now`` 10.3 and ``interval`` 1 give
    ``(10, 11.0)``, where Textual's own count gave ``(11, 12.0)``."""
    count = int((now - start) / interval)
    return count, start + (count + 1) * interval


class FrameClock(Timer):
    """Textual's timer (:class:`textual.timer.Timer`, its ``_run`` as in Textual 8.2) whose
    skip over missed ticks lands on the next tick due (:func:`next_tick`), not the one after."""

    async def _run(self) -> None:
        count = 0
        _repeat = self._repeat
        _interval = self._interval
        await self._active.wait()
        start = _time.get_time()
        while _repeat is None or count <= _repeat:
            next_timer = start + ((count + 1) * _interval)
            now = _time.get_time()
            if self._skip and next_timer < now:
                count = next_tick(start, now, _interval)[0]
                continue
            await sleep(max(0, next_timer - _time.get_time()))
            count += 1
            await self._active.wait()
            if self._reset:
                start = _time.get_time()
                count = 0
                self._reset = False
                continue
            try:
                await self._tick(next_timer=next_timer, count=count)
            except EventTargetGone:
                break
