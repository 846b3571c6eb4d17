"""Helpers of the app's Pilot and snapshot tests: what two or more of ``tests/tui``'s modules share
(a test module never imports another)."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable
from pathlib import Path

from core.api.home import Home
from core.ground.clock import FixedClock
from resolver_tui.app import ResolverApp
from rich.cells import cell_len
from rich.segment import ControlType
from textual._compositor import LayoutUpdate
from textual.app import App, ComposeResult
from textual.widget import Widget

from helpers import FRIDAY, MONDAY

__all__ = [
    "FRIDAY",
    "GUARD_S",
    "MONDAY",
    "Terminal",
    "make_app",
    "monday_home",
    "open_key",
    "pane_text",
    "screen_text",
    "select",
    "settle",
    "shop_home",
    "steady_cursors",
    "type_text",
    "until",
]


GUARD_S = 30.0
"""Seconds after which a wait fails (a guard against a hang, not a speed target: see
benchmarks/bench_live.py for the delay)."""


def monday_home(root: Path) -> Home:
    return Home(root, clock=FixedClock(MONDAY))


def shop_home(tmp_path: Path) -> Home:
    """A shop home at ``tmp_path / "shop"`` on the real clock: registry Grace (owner,
    ``grace-passphrase``) and Ana (team lead, ``ana-passphrase``); T-65273 and T-97580 run and
    waiting."""
    from core.api.homekind import init_home
    from core.engine.approvers import Registry
    from core.ground.clock import SystemClock

    root = tmp_path / "shop"
    init_home(root, shop=True)
    home = Home(root)
    registry = Registry(root)
    now = SystemClock().now()
    registry.init("Grace", "grace-passphrase", now)
    registry.add("Ana", "team_lead", "ana-passphrase", "grace-passphrase", now)
    home.run("T-65273")
    home.run("T-97580")
    return home


def make_app(home: Home, role: str = "team_lead", name: str = "Tomás") -> ResolverApp:
    return ResolverApp(home, role, name, refresh_interval=None)


async def settle(pilot) -> None:
    """Wait until every worker finished and its messages were handled, and the rows of a page
    read are all added (:meth:`RunTable.append_soon` adds them a batch per paint)."""
    from resolver_tui.widgets.run_table import RunTable

    app = pilot.app
    for _ in range(4):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()
    for _ in range(100):
        if not any(table.appending for table in app.query(RunTable)):
            break
        await pilot.pause()


async def steady_cursors(pilot) -> None:
    """Stop every input's cursor blinking on the shown screen, with the cursor drawn, and settle.

    An input blinks its cursor every 0.5 s, so a snapshot taken at a random moment drew it or not:
    the reject dialog's snapshots failed about one run in three. Setting ``cursor_blink`` to False
    pauses Textual's blink timer and leaves the cursor visible, a fixed phase whatever the
    machine's speed.
    """
    from textual.widgets import Input

    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False
    await settle(pilot)


async def type_text(pilot, text: str) -> None:
    """Type ``text`` into the focused input at once (as a paste does) and let it react.

    A Pilot key press costs about 0.1 s of waiting, so typing a sentence key by key made the
    app tests slow without testing more: the input's ``Changed`` and ``Submitted`` messages are
    the same either way.
    """
    from textual.widgets import Input

    box = pilot.app.focused
    assert isinstance(box, Input), f"the focus is on {box!r}, not an input"
    box.insert_text_at_cursor(text)
    await pilot.pause()


async def select(pilot, run_id: str) -> None:
    """Put the cursor on ``run_id`` (the palette's Jump to run) and wait for its detail."""
    queue = pilot.app.queue
    queue.jump_to(run_id)
    await settle(pilot)
    assert queue.selected_id == run_id
    assert queue.detail is not None and queue.detail.run_id == run_id


async def until(pilot, predicate: Callable[[], bool], what: str) -> None:
    """Let the app run until ``predicate`` holds; fail after :data:`GUARD_S` saying ``what``."""
    end = time.monotonic() + GUARD_S
    while not predicate():
        assert time.monotonic() < end, f"the app never showed {what}"
        await pilot.pause(0.02)


async def open_key(pilot, run_id: str, key: str):
    """Settle, put the cursor on ``run_id``, press ``key`` and settle: the screen the key opened
    (``a``: the approve dialog, or the passphrase dialog in a shop home; ``o``, ``z``: the mark
    dialog, or in a shop home with the key locked the passphrase dialog first)."""
    await settle(pilot)
    await select(pilot, run_id)
    await pilot.press(key)
    await settle(pilot)
    return pilot.app.screen


def pane_text(app) -> str:
    """The detail pane's text (notice, keys and body), each line whole as core wrote it (what the
    screen shows folded to its width is :func:`screen_text`'s)."""
    queue = app.queue
    parts = []
    for wid in ("#detail-title", "#detail-notice", "#detail-keys", "#detail-body"):
        widget = queue.query_one(wid)
        values = getattr(widget, "values", None)  # FoldedLines: its lines before folding to the width
        parts.append("\n".join(values) if values is not None else str(widget.render()))
    return "\n".join(parts)


def screen_text(app) -> str:
    """What the terminal shows, as text (from the exported SVG)."""
    svg = app.export_screenshot()
    rows: dict[float, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text[^>]*x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg, re.S):
        text = html.unescape(re.sub(r"<[^>]+>", "", m.group(3))).replace("\xa0", " ")
        rows.setdefault(float(m.group(2)), []).append((float(m.group(1)), text))
    return "\n".join("".join(t for _x, t in sorted(parts)) for _y, parts in sorted(rows.items()))


class OneWidget(App):
    """A bare app holding one widget, to watch it alone."""

    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


class Terminal:
    """What a terminal shows: every frame the app hands its (headless) terminal applied to a grid
    of cells (each a character and its style), as a terminal applies the escape sequences a real
    driver writes, so a test sees what the partial repaints left on screen, not a fresh render of
    the whole screen (which :func:`screen_text` is). Installed over ``App._display``;
    :meth:`repaint_all` asks for a frame of the whole screen to start from."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.cells: list[list[tuple[str, object]]] = []
        original = app._display

        def display(screen, renderable) -> None:
            original(screen, renderable)
            if renderable is not None and not app._batch_count:
                self.apply(renderable)

        app._display = display  # type: ignore[method-assign]

    def repaint_all(self) -> None:
        self.app.screen.refresh()

    def differs(self) -> list[str]:
        """Where the terminal differs from a render of the whole screen now (every widget's drawn
        lines forgotten), text or style (a scroll bar's thumb is spaces on a colour): one line
        ``row N: shown ... / whole ...`` per row, none when they agree."""
        whole = self._whole()
        out = []
        for y, (ours, theirs) in enumerate(zip(self.cells, whole.cells, strict=True)):
            if ours != theirs:
                out.append(f"row {y}: shown {self._row_text(ours)!r} / whole {self._row_text(theirs)!r}")
        return out

    def _whole(self) -> Terminal:
        for widget in self.app.screen.walk_children(with_self=True):
            widget._set_dirty()
        fresh = Terminal.__new__(Terminal)
        fresh.app = self.app
        fresh.cells = []
        fresh.apply(self.app.screen._compositor.render_update(full=True))
        return fresh

    def apply(self, renderable) -> None:
        width, height = self.app.size
        if (height, width) != (len(self.cells), len(self.cells[0]) if self.cells else width):
            self.cells = [[(" ", None)] * width for _ in range(height)]  # a resized terminal: a whole frame follows
        console = self.app.console
        if isinstance(renderable, LayoutUpdate):
            left = x = renderable.region.x
            y = renderable.region.y
        else:
            left = x = y = 0
        for segment in renderable.__rich_console__(console, console.options):
            if segment.control:
                for code, *args in segment.control:
                    if code == ControlType.CURSOR_MOVE_TO:
                        x, y = args
                continue
            if segment.text == "\n":
                x, y = left, y + 1
                continue
            style = _drawn(segment.style)
            for ch in segment.text:
                if 0 <= y < len(self.cells) and 0 <= x < len(self.cells[y]):
                    self.cells[y][x] = (ch, style)
                x += cell_len(ch)

    @staticmethod
    def _row_text(row: list[tuple[str, object]]) -> str:
        return "".join(ch for ch, _ in row).rstrip()

    def text(self) -> str:
        return "\n".join(self._row_text(row) for row in self.cells)


def _drawn(style) -> object:
    """What a terminal draws of a Rich style (colours and attributes; not the meta that Textual
    keeps for the mouse)."""
    return None if style is None else (style.color, style.bgcolor, style._attributes & style._set_attributes)
