"""The approvals app: :class:`ResolverApp` only (screens, widgets and messages live beside it)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from core.api.home import Home
from core.api.views import Approver
from core.ground.errors import ResolverError
from textual import events, on, work
from textual.app import App
from textual.logging import TextualHandler
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from resolver_tui.commands import LessonCommands, ResolverCommands
from resolver_tui.keys import bindings, key_for, textual_key
from resolver_tui.messages import MomentDone
from resolver_tui.screens.dialogs import Fenced
from resolver_tui.screens.help import HelpScreen
from resolver_tui.screens.queue import QueueScreen
from resolver_tui.screens.text import LinesScreen

NARROW = 100
"""Under this width (columns) a toast takes one line and never shows over a dialog."""

QUIET_S = 0.5
"""Seconds without a key or the mouse after which the garbage collector's full collection, put
off while the approver works, runs (:meth:`ResolverApp.collect_when_quiet`)."""

FULL_AT_LATEST = 200
"""A full collection runs at the latest after this many collections of the middle generation,
even while keys keep coming (a key held down), so unreachable cycles never pile up for long."""


class ResolverApp(App):
    """The Larkfield approvals queue on one home folder.

    Args:
        home: the home folder (writes, and the read side ``home.queue``); injected so tests hand
            it a temporary one.
        role: the approver's role (``agent``, ``team_lead``, ``grace``): no default, nobody is
            a team lead unless they said so (``resolver_tui.__main__.who``).
        name: the approver's name, recorded with each decision (default: the role's label).
        refresh_interval: seconds between automatic refreshes (None or 0: off); on a team store,
            whose changes arrive as they are made, a safety net of at least
            :data:`~resolver_tui.screens.queue.LIVE_SAFETY_NET_S`.
        demo: load the demo queue at start when the home is empty (else a notice says it was not).
        trainer: list the trainer's moments in the palette (when :mod:`core.trainer.lesson` exists).

    Raises:
        UnknownRole: ``role`` is not one of the policy's roles.
    """

    CSS_PATH = "app.tcss"
    TITLE = "Larkfield approvals"
    COMMANDS = App.COMMANDS | {ResolverCommands, LessonCommands}
    COMMAND_PALETTE_BINDING = textual_key("command_palette")
    BINDINGS = bindings("app")

    def __init__(
        self,
        home: Home,
        role: str,
        name: str | None = None,
        refresh_interval: float | None = 2.0,
        demo: bool = False,
        trainer: bool = False,
    ) -> None:
        super().__init__()
        self.home = home
        home.log.addHandler(
            TextualHandler(stderr=False)
        )  # the home's log (core.ground.log) also to Textual's console, never the screen
        self.approver = Approver(role, (name or "").strip() or role.replace("_", " "))
        self.refresh_interval = refresh_interval or None
        self.demo = demo
        self.trainer = trainer
        self._last_input = time.monotonic()
        self._thresholds: tuple[int, int, int] | None = None

    def get_default_screen(self) -> QueueScreen:
        self.queue = QueueScreen(
            self.home,
            self.approver,
            refresh_interval=self.refresh_interval,
            lease_owner=self.home.lease_owner("resolver-tui"),
            load_demo_if_empty=self.demo,
        )
        return self.queue

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < NARROW, "-narrow")

    def on_ready(self) -> None:
        """The first screen is painted: what the start-up made (modules, classes, widgets, the
        CSS) is collected once and frozen out of the garbage collector's reach (``gc.freeze``).
        Before it, a full collection went through all of it every fifteen keys or so,
        55 to 85 ms of the main thread, and made the p99 of a key at 1,000,000 runs; with it
        frozen a full collection walks only what was made since. Undone when the app exits
        (:meth:`on_unmount`)."""
        gc.collect()
        gc.freeze()
        self._thresholds = gc.get_threshold()
        gc.set_threshold(self._thresholds[0], self._thresholds[1], FULL_AT_LATEST)
        self._last_input = time.monotonic()
        self.set_interval(QUIET_S, self.collect_when_quiet)

    def collect_when_quiet(self) -> None:
        """Run the garbage collector's full collection, when one is due, in a pause of the keys
        and the mouse. CPython runs it whenever enough objects outlived two
        collections, in the middle of a key: at 1,000,000 runs it came every fifteen keys or
        so and took 20 to 100 ms, the p99 of a key. The app raises the collector's own rule
        (its third threshold, as :meth:`on_ready` found it) to :data:`FULL_AT_LATEST` and keeps
        it here: once a full collection
        is due and no key or mouse event came for :data:`QUIET_S` seconds, it runs between
        keys. Garbage that only a full collection finds (cycles of objects that lived long) is
        freed at the next pause, or after :data:`FULL_AT_LATEST` middle collections."""
        due = self._thresholds is not None and gc.get_count()[2] >= self._thresholds[2]
        if due and time.monotonic() - self._last_input >= QUIET_S:
            gc.collect()

    def on_unmount(self) -> None:
        """The app exits: what :meth:`on_ready` froze is the collector's again, and its rule of
        full collections is its own again."""
        gc.unfreeze()
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)

    async def on_event(self, event: events.Event) -> None:
        """Keys act on what is on screen and settled. Keys of one terminal read are
        queued before any of them is handled, so two rules apply before Textual's own routing:

        - a dialog (:class:`~resolver_tui.screens.dialogs.Fenced`) takes only keys that arrived
          after it was drawn; earlier ones are dropped, so ``a`` then ``y`` typed ahead never
          approves;
        - a printable key that comes back to the app while an input box has the focus went to
          another widget before the box opened (``/amy`` in one read: ``amy`` had been routed
          to the table before ``/`` focused the box); it is typed into the box, where it was
          meant to go. A key the box received itself never comes back (the box keeps it).
        """
        if isinstance(event, events.InputEvent):
            self._last_input = time.monotonic()
        if isinstance(event, events.Key):
            screen = self.screen
            if isinstance(screen, Fenced) and not screen.takes(event):
                event.stop()
                event.prevent_default()
                return
            box = self.focused
            if event.is_forwarded and isinstance(box, Input) and event.is_printable and event.character:
                event.stop()
                event.prevent_default()
                box.insert_text_at_cursor(event.character)
                return
        await super().on_event(event)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.home.kind == "shop", id="help-screen"))

    def run_moment(self, fn: Callable[[Home], list[str]], name: str) -> None:
        """Run a trainer moment in a worker and show what it says."""
        self._moment(fn, name)

    @work(thread=True, exclusive=True, group="trainer", exit_on_error=False)
    def _moment(self, fn: Callable[[Home], list[str]], name: str) -> None:
        try:
            self.post_message(MomentDone(name, list(fn(self.home) or [])))
        except ResolverError as exc:
            self.post_message(MomentDone(name, [], str(exc)))

    @on(MomentDone)
    def moment_done(self, message: MomentDone) -> None:
        if message.error is not None:
            self.notify(message.error, severity="error", markup=False)
            return
        self.queue.unfollow()
        self.push_screen(LinesScreen(f"Trainer: {message.name}", message.lines))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """An unexpected error in a trainer's moment is shown, never a crash."""
        if event.state == WorkerState.ERROR and event.worker.group == "trainer":
            error = event.worker.error
            self.log.error("trainer moment failed", error)
            self.notify(
                f"The trainer's moment failed; nothing was lost. Press {key_for('refresh')} to read the queue again.",
                severity="error",
                markup=False,
                timeout=10,
            )
