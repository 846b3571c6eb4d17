"""The help screen: every key of the app and what it does."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: list[tuple[str, str]] = [
    ("a", "approve the highlighted run (asks first; default No), then execute it"),
    ("x", "reject the highlighted run with a required reason"),
    ("u", "resume by status: running continues its loop, executing is reconciled and finished, waiting shows its request"),
    ("t", "trace of the highlighted run"),
    ("d", "compare with another run of the same ticket"),
    ("h / H", "history: the highlighted run's decisions and refusals / mine, with reasons"),
    ("W", "the world's changes since its reset (what `resolver changes` prints)"),
    ("R", "refresh now (it also refreshes itself: every 2 s, or --refresh SECONDS)"),
    ("/", "filter by ticket, order, customer or run ID (Esc clears)"),
    ("1-8", "status: waiting approval, executing, running, handed to person, stopped, done, all, mine"),
    ("m", "mine: only the waiting runs I may approve (the role needed is within mine); m again: all waiting"),
    ("j / k, up / down", "move in the queue (more runs load at the end)"),
    ("g / G", "first / last loaded run"),
    ("enter", "read the detail pane (Esc goes back to the queue)"),
    ("L", "load the Larkfield demo queue (empty home only)"),
    ("ctrl+p", "command palette: every action, and Jump to run <id>"),
    ("?", "this help"),
    ("q", "quit"),
]


class HelpScreen(ModalScreen[None]):
    """Every key, from :data:`KEYS`; Esc, ``q`` or ``?`` closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        shop = getattr(getattr(self.app, "home", None), "kind", "") == "shop"  # no demo queue in a shop home
        body = Content("\n").join(
            Content.assemble((f"{key:>18}", "bold"), "  ", text) for key, text in KEYS if not (shop and key == "L")
        )
        with VerticalScroll(id="help", classes="panel") as scroll:
            scroll.border_title = "Keys"
            yield Static(body)
            yield Static(
                Content(
                    "\nOnly what your role and the run's status allow is offered; a dimmed key says so, "
                    "and the detail pane gives the reason."
                )
            )
