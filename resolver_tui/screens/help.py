"""The help screen: every key of the app and what it does, from the one action table
(:mod:`resolver_tui.keys`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Grid, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from resolver_tui.keys import bindings, help_rows
from resolver_tui.screens.dialogs import Fenced


class HelpScreen(Fenced[None]):
    """Every key, from :func:`resolver_tui.keys.help_rows` (the demo queue's key left out in a
    shop home); Esc, ``q`` or ``?`` closes it."""

    BINDINGS = bindings("help")

    def __init__(self, shop: bool = False, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shop = shop

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help", classes="panel") as scroll:
            scroll.border_title = "Keys"
            with Grid(id="help-keys"):  # two columns: a description that wraps stays in its own (a trial finding)
                for key, text in help_rows(self.shop):
                    yield Static(Content.styled(key, "bold"), classes="help-key")
                    yield Static(Content(text), classes="help-text")
            yield Static(
                Content(
                    "\nOnly what your role and the run's status allow is offered; a dimmed key says so, "
                    "and the detail pane gives the reason."
                )
            )
