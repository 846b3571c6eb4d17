"""Read-only screens of lines: the trace of a run, the comparison of two runs, and history (a
run's or an approver's decisions and refusals, the world's changes)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll

from resolver_tui.keys import bindings
from resolver_tui.screens.dialogs import Fenced
from resolver_tui.widgets.footer import Footer
from resolver_tui.widgets.safe import FoldedLines, plain


class LinesScreen(Fenced[None]):
    """A titled, scrollable block of literal lines; Esc or ``q`` closes it (keys: the table's
    ``lines`` rows, :mod:`resolver_tui.keys`)."""

    BINDINGS = bindings("lines")

    def __init__(self, title: str, body: list[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="lines", classes="panel") as scroll:
            scroll.border_title = plain(self.title_text)
            yield FoldedLines(self.body or ["(nothing yet)"], id="lines-body")
        yield Footer()

    def action_scroll(self, where: str) -> None:
        scroll = self.query_one("#lines", VerticalScroll)
        scroll.scroll_down() if where == "down" else scroll.scroll_up()


class TraceScreen(LinesScreen):
    """The run's trace (its events table, one line each)."""


class CompareScreen(LinesScreen):
    """Two runs of one ticket, their actions line by line (seed 000's diagnose step)."""


class HistoryScreen(LinesScreen):
    """Decisions and refusals with their reasons (a run's or one approver's, from the audit), or
    the practice world's changes; names and reasons are untrusted, shown through the safe helper."""
