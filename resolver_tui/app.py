"""The approvals app: :class:`ResolverApp` only (screens, widgets and messages live beside it)."""

from __future__ import annotations

from collections.abc import Callable

from core.errors import ResolverError
from core.home import Home
from core.views import Approver
from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.logging import TextualHandler
from textual.worker import Worker, WorkerState

from resolver_tui.commands import LessonCommands, ResolverCommands
from resolver_tui.messages import MomentDone
from resolver_tui.screens.help import HelpScreen
from resolver_tui.screens.queue import QueueScreen
from resolver_tui.screens.text import LinesScreen


class ResolverApp(App):
    """The Larkfield approvals queue on one home folder.

    Args:
        home: the home folder (writes, and the read side ``home.queue``); injected so tests hand
            it a temporary one.
        role: the approver's role (``agent``, ``team_lead``, ``grace``): no default, nobody is
            a team lead unless they said so (``resolver_tui.__main__.who``).
        name: the approver's name, recorded with each decision (default: the role's label).
        refresh_interval: seconds between automatic refreshes (None or 0: off).
        demo: load the demo queue at start when the home is empty.
        trainer: list the trainer's moments in the palette (when :mod:`core.lesson` exists).

    Raises:
        UnknownRole: ``role`` is not one of the policy's roles.
    """

    CSS_PATH = "app.tcss"
    TITLE = "Larkfield approvals"
    COMMANDS = App.COMMANDS | {ResolverCommands, LessonCommands}
    BINDINGS = [
        Binding("question_mark", "help", "Help", id="help", tooltip="Every key of the app"),
        Binding("q", "quit", "Quit", id="quit", tooltip="Leave the app (nothing is lost)"),
    ]

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
        home.log.addHandler(TextualHandler(stderr=False))  # the home's log (core.log) also to Textual's console, never the screen
        self.approver = Approver(role, (name or "").strip() or role.replace("_", " "))
        self.refresh_interval = refresh_interval or None
        self.demo = demo
        self.trainer = trainer

    def get_default_screen(self) -> QueueScreen:
        self.queue = QueueScreen(
            self.home,
            self.approver,
            refresh_interval=self.refresh_interval,
            lease_owner=self.home.lease_owner("resolver-tui"),
            load_demo_if_empty=self.demo,
        )
        return self.queue

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(id="help-screen"))

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
                "The trainer's moment failed; nothing was lost. Press R to read the queue again.",
                severity="error",
                markup=False,
                timeout=10,
            )
