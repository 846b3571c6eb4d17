"""The one action table of the app: every key, once.

Each :class:`Key` row gives the action Textual runs, the key, how a person reads it, its label,
its help text and the rule that decides whether it is offered. Everything that names a key is
built from :data:`KEYS`: the screens' ``BINDINGS`` (:func:`bindings`), the footer (the bindings
it shows), the detail pane's key line (:func:`rule_keys`), the command palette
(:func:`palette`), the help screen (:func:`help_rows`), the sentence a dimmed key says
(:func:`for_key`), and the key letters core's sentences get from the app
(:func:`core.api.views.describe`'s ``keys``). A key added here appears in all of them; one left out
is in none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from core.api.views import ACTIONS
from textual.binding import Binding

from resolver_tui.widgets.bars import FILTERS

Scope = Literal["app", "queue", "confirm", "dialog", "lines", "help"]
"""Where a key works: the whole app, the queue screen, the approve dialog (``confirm``), the
reject, passphrase and pick dialogs (``dialog``), a screen of lines (trace, history, compare)
and the help screen."""


@dataclass(frozen=True)
class Key:
    """One row of the action table.

    ``action`` is what Textual runs (``approve``, ``status(0)``, ``cursor('down')``); ``key``
    the Textual key names, comma-separated (``slash``, ``n,escape``); ``shown`` how a person
    reads it (``/``); ``label`` the footer's and pane's word; ``help`` the help screen's, the
    palette's and the tooltip's sentence; ``rule`` the rulebook action (:data:`core.api.views.ACTIONS`)
    or the screen's own rule (``load_demo``) that decides whether it is offered (None: always);
    ``footer`` whether the footer shows it; ``palette`` its title in the command palette ('':
    not listed there).
    """

    scope: Scope
    action: str
    key: str
    shown: str
    label: str
    help: str
    rule: str | None = None
    footer: bool = False
    palette: str = ""

    @property
    def name(self) -> str:
        """The action's name without its parameters (``status`` for ``status(0)``)."""
        return self.action.split("(", 1)[0]

    @property
    def id(self) -> str:
        """The binding's ID, unique in its scope (``status-0``, ``cursor-down``)."""
        return re.sub(r"\W+", "-", self.action.removeprefix("app.")).strip("-").lower()


def _status_keys() -> list[Key]:
    return [
        Key(
            "queue",
            f"status({i})",
            str(i + 1),
            str(i + 1),
            label,
            f"status filter: {label}" + (" (the waiting runs I may approve)" if label == "mine" else ""),
            palette=f"Show {label}",
        )
        for i, (_status, label) in enumerate(FILTERS)
    ]


KEYS: list[Key] = [
    # -- the highlighted run: the rulebook decides (core.engine.rulebook.offers) ------------------------
    Key(
        "queue",
        "approve",
        "a",
        "a",
        "Approve",
        "approve the highlighted run: a dialog repeats its actions, what changed and the digest (default No), then executes it",
        rule="approve",
        footer=True,
        palette="Approve the highlighted run",
    ),
    Key(
        "queue",
        "reject",
        "x",
        "x",
        "Reject",
        "reject the highlighted run with a required reason",
        rule="reject",
        footer=True,
        palette="Reject the highlighted run",
    ),
    Key(
        "queue",
        "resume",
        "u",
        "u",
        "Resume",
        "resume by status: running continues its loop, executing is reconciled and finished, waiting shows its request",
        rule="resume",
        footer=True,
        palette="Resume the highlighted run",
    ),
    Key(
        "queue",
        "claim",
        "c",
        "c",
        "Claim",
        "claim the highlighted waiting run (everyone sees you are on it, for claim_minutes) or release your claim",
        palette="Claim or release the highlighted run",
    ),
    Key(
        "queue",
        "handover",
        "o",
        "o",
        "Hand over",
        "hand the highlighted waiting run over to a colleague, with a one-line note (a dialog asks both)",
        palette="Hand the highlighted run over",
    ),
    Key(
        "queue",
        "snooze",
        "z",
        "z",
        "Snooze",
        "snooze: set the highlighted waiting run aside until a time (ISO 8601 or a duration such as 90m)",
        palette="Snooze the highlighted run",
    ),
    Key(
        "queue", "trace", "t", "t", "Trace", "trace of the highlighted run", rule="trace", palette="Trace of the highlighted run"
    ),
    Key(
        "queue",
        "compare",
        "d",
        "d",
        "Compare",
        "compare with another run of the same ticket",
        rule="compare",
        palette="Compare with another run of the same ticket",
    ),
    Key(
        "queue",
        "history",
        "h",
        "h",
        "History",
        "history: the highlighted run's decisions and refusals, with reasons",
        palette="History of the highlighted run",
    ),
    # -- the queue ---------------------------------------------------------------------------------
    Key(
        "queue",
        "my_history",
        "H",
        "H",
        "My history",
        "every decision and refusal of mine, with reasons",
        palette="My decisions and refusals",
    ),
    Key(
        "queue",
        "changes",
        "W",
        "W",
        "World's changes",
        "the world's changes since its reset (what `resolver changes` prints)",
        palette="The world's changes",
    ),
    Key(
        "queue",
        "refresh",
        "R",
        "R",
        "Refresh",
        "refresh now (it also refreshes itself: a home folder every 2 s or --refresh SECONDS; a team store live, "
        "as changes are made, with a 30 s safety net)",
        palette="Refresh the queue",
    ),
    Key(
        "queue",
        "filter",
        "slash",
        "/",
        "Filter",
        "filter by ticket, order, customer or run ID (Enter applies, Esc clears)",
        footer=True,
        palette="Filter the queue",
    ),
    Key(
        "queue",
        "sort",
        "s",
        "s",
        "Sort",
        "sort: newest run, amount, role needed, default (or click the age, total or role header)",
        footer=True,
        palette="Sort the queue",
    ),
    Key(
        "queue",
        "mine",
        "m",
        "m",
        "Mine",
        "mine: only the waiting runs I may approve (the role needed is within mine); m again: all waiting",
        palette="Mine: the waiting runs I may approve",
    ),
    *_status_keys(),
    Key("queue", "cursor('down')", "j", "j", "Down", "down in the queue (down arrow too); in the pane, scroll down"),
    Key("queue", "cursor('up')", "k", "k", "Up", "up in the queue (up arrow too); in the pane, scroll up"),
    Key("queue", "cursor('top')", "g", "g", "First", "first loaded run (in the pane: its top)"),
    Key("queue", "cursor('bottom')", "G", "G", "Last", "last loaded run (more load at the end; in the pane: its end)"),
    Key("queue", "read", "enter", "enter", "Read", "move the focus to the detail pane (j / k scroll it)"),
    Key("queue", "back", "escape", "esc", "Back", "back to the queue from the pane or the filter box; clears a filter"),
    Key(
        "queue",
        "load_demo",
        "L",
        "L",
        "Load demo",
        "load the Larkfield demo queue (empty practice home only)",
        rule="load_demo",
        footer=True,
        palette="Load the Larkfield demo queue",
    ),
    # -- everywhere ----------------------------------------------------------------------------------
    Key("app", "command_palette", "ctrl+p", "ctrl+p", "Palette", "command palette: every action, and Jump to run <id>"),
    Key("app", "help", "question_mark", "?", "Help", "this help: every key of the app", footer=True),
    Key("app", "quit", "q", "q", "Quit", "quit (nothing is lost)", footer=True),
    # -- dialogs and screens over the queue ----------------------------------------------------------
    Key(
        "confirm",
        "answer(True)",
        "y",
        "y",
        "Yes",
        "approve dialog: yes, approve and execute (accept-changes dialog: accept, resume)",
        footer=True,
    ),
    Key(
        "confirm",
        "answer(False)",
        "n,escape",
        "n / esc",
        "No",
        "approve or accept-changes dialog: no (the default; Enter on No too)",
        footer=True,
    ),
    Key("confirm", "app.focus_next", "left,right,tab", "left / right", "Move", "approve dialog: move between Approve and No"),
    Key("dialog", "cancel", "escape", "esc", "Cancel", "reject, hand-over, snooze, passphrase or pick dialog: cancel"),
    Key("lines", "dismiss", "escape,q", "esc / q", "Close", "trace, history or compare: close", footer=True),
    Key("lines", "scroll('down')", "j", "j", "Down", "trace, history or compare: scroll down"),
    Key("lines", "scroll('up')", "k", "k", "Up", "trace, history or compare: scroll up"),
    Key("help", "dismiss", "escape,q,question_mark", "esc / q / ?", "Close", "help: close", footer=True),
]
"""Every key of the app, in the order the help screen lists them."""


def bindings(scope: Scope) -> list[Binding | tuple[str, str] | tuple[str, str, str]]:
    """The ``BINDINGS`` of a screen (or the app) for ``scope``: each row's key, action and label,
    shown in the footer when the row says so, with its help text as the tooltip. The app's
    palette key is Textual's own binding (``App.COMMAND_PALETTE_BINDING``, from this table too)."""
    return [
        Binding(k.key, k.action, k.label, show=k.footer, tooltip=k.help, id=k.id)
        for k in KEYS
        if k.scope == scope and k.action != "command_palette"
    ]


def key_for(action: str) -> str:
    """How a person reads the key of ``action`` (``R`` for ``refresh``). Raises KeyError for an
    action with no key."""
    return next(k.shown for k in KEYS if k.action == action and k.scope in ("app", "queue"))


def textual_key(action: str) -> str:
    """The Textual key name of ``action`` (``ctrl+p`` for ``command_palette``)."""
    return next(k.key for k in KEYS if k.action == action)


def rule_keys() -> dict[str, Key]:
    """The keys of the rulebook's actions, by action (``approve`` -> its row): the detail pane's
    key line and the dimmed-key sentence."""
    return {k.rule: k for k in KEYS if k.scope == "queue" and k.rule in ACTIONS}


def core_keys() -> dict[str, str]:
    """What core's sentences may name: each rulebook action's key (``{"compare": "d", ...}``)."""
    return {action: k.shown for action, k in rule_keys().items()}


def for_key(character: str | None) -> Key | None:
    """The queue's row with a rule for the key typed as ``character`` (``a``), or None."""
    return next((k for k in KEYS if k.scope == "queue" and k.rule and k.key == character), None)


def palette(shop: bool = False) -> list[tuple[str, str, str]]:
    """The palette's entries ``(title, action, help)``: every row with a palette title (the demo
    queue left out in a shop home), its key named in the help."""
    return [
        (k.palette, k.action, f"{k.help} (key {k.shown})") for k in KEYS if k.palette and not (shop and k.rule == "load_demo")
    ]


def help_rows(shop: bool = False) -> list[tuple[str, str]]:
    """The help screen's rows ``(key as read, help text)``: every row of the table, in its order
    (the demo queue's key left out in a shop home)."""
    return [(k.shown, k.help) for k in KEYS if not (shop and k.rule == "load_demo")]
