"""The approvals app: :class:`ResolverApp` only (screens, widgets and messages live beside it)."""

from __future__ import annotations

from collections.abc import Callable

from core.checkpoint import lease_owner_name
from core.clock import Clock
from core.errors import ResolverError
from core.home import Home
from core.policy import check_role
from textual import work
from textual.app import App
from textual.binding import Binding

from resolver_tui.commands import LessonCommands, ResolverCommands
from resolver_tui.screens.help import HelpScreen
from resolver_tui.screens.queue import QueueScreen
from resolver_tui.screens.text import LinesScreen


class ResolverApp(App):
    """The Larkfield approvals queue on one home folder.

    Args:
        home: the home folder (store, world, key); injected so tests hand it a temporary one.
        role: the approver's role (``agent``, ``team_lead``, ``grace``).
        name: the approver's name, recorded with each decision.
        clock: the clock the ages and the header use (default: the home's clock).
        refresh_interval: seconds between automatic refreshes (None or 0: off).
        demo: load the demo queue at start when the home is empty.
        trainer: list the trainer's moments in the palette (when :mod:`core.lesson` exists).
    """

    CSS_PATH = "app.tcss"
    TITLE = "Larkfield approvals"
    COMMANDS = App.COMMANDS | {ResolverCommands, LessonCommands}
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, home: Home, role: str = "team_lead", name: str | None = None, clock: Clock | None = None,
                 refresh_interval: float | None = 2.0, demo: bool = False, trainer: bool = False) -> None:
        super().__init__()
        self.home = home
        self.role = check_role(role)
        self.approver_name = (name or "").strip() or role.replace("_", " ")
        self.clock = clock or home.clock
        self.refresh_interval = refresh_interval or None
        self.demo = demo
        self.trainer = trainer
        self.lease_owner = lease_owner_name("resolver-tui")

    def get_default_screen(self) -> QueueScreen:
        self.queue = QueueScreen()
        return self.queue

    def on_mount(self) -> None:
        if self.demo and not sum(self.home.store.counts().values()):
            self.screen.action_load_demo()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(id="help-screen"))

    def run_moment(self, fn: Callable[[Home], list[str]], name: str) -> None:
        """Run a trainer moment in a worker and show what it says."""
        self._moment(fn, name)

    @work(thread=True, exclusive=True, group="trainer", exit_on_error=False)
    def _moment(self, fn: Callable[[Home], list[str]], name: str) -> None:
        try:
            out = fn(self.home)
        except ResolverError as exc:
            self.call_from_thread(self.notify, str(exc), severity="error", markup=False)
            return
        self.call_from_thread(self.queue.unfollow)
        self.call_from_thread(self.push_screen, LinesScreen(f"Trainer: {name}", list(out or [])))
