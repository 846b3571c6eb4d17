"""The one helper for untrusted text (ticket text, evidence, reasons, reply drafts, names).

A plain ``str`` given to ``Static``, ``Label``, a ``DataTable`` cell, ``notify`` or a border
title is parsed as markup: ``"[/"`` crashes the app and ``"[@click=app.quit]x[/]"`` becomes a
live action (reported to Textual upstream). Everything shown from the store goes through :func:`plain`
(a :class:`~textual.content.Content`) or :func:`cell` (a Rich ``Text`` for table cells), both
built from :func:`core.api.views.safe_text`, which strips ESC sequences and control characters.
"""

from __future__ import annotations

from typing import Any

from core.api.views import safe_text
from core.ground.safetext import fold
from rich.text import Text
from textual import events
from textual.content import Content
from textual.strip import Strip
from textual.visual import Visual
from textual.widgets import Static


def clean(value: Any) -> str:
    """``value`` as a string with control characters and escape sequences removed."""
    return safe_text("" if value is None else value)


def plain(value: Any, style: str = "") -> Content:
    """``value`` as literal content (never markup), optionally in one ``style``."""
    return Content.styled(clean(value), style) if style else Content(clean(value))


def lines(values: list[str], style: str = "") -> Content:
    """Several lines of untrusted text as one literal content block."""
    return plain("\n".join(values), style)


def cell(value: Any, style: str = "") -> Text:
    """A DataTable cell: literal Rich ``Text`` (never markup), one line."""
    return Text(clean(value).replace("\n", " "), style=style, no_wrap=True, overflow="ellipsis")


class FoldedLines(Static):
    """Lines of a run's request (core's own and marked untrusted ones) folded to the widget's own
    width by :func:`core.ground.safetext.fold`, again whenever that width changes (a resize, a scroll
    bar appearing). Textual never wraps them itself, so no screen row starts with the middle of
    a customer's or a tool's text without its mark (found by a new user: a wrapped
    block line showed ``Who may approve: agent or above`` at the margin).

    Updated in place: the same lines are not shown again, and new lines of the
    same height repaint this widget alone, without a layout pass of the screen; only a change of
    height (in lines) asks for one. Only the lines on screen are drawn (:meth:`render_line`)."""

    def __init__(self, values: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__("", markup=False, **kwargs)
        self.values = list(values or [])
        self._shown: str | None = None  # the folded text shown now (None: nothing yet)
        self._fold()

    def set_lines(self, values: list[str]) -> None:
        """Show ``values`` (each one line, made safe by :func:`clean`), folded to the width."""
        if values == self.values and self._shown is not None:
            return
        self.values = list(values)
        self._fold()

    def on_resize(self, event: events.Resize) -> None:
        self._fold()

    @staticmethod
    def _height(text: str | None) -> int:
        """Lines ``text`` takes (0 for none)."""
        return text.count("\n") + 1 if text else 0

    def _fold(self) -> None:
        width = self.content_size.width if self.is_mounted else 0
        shown = [clean(v) for v in self.values]
        text = "\n".join(fold(shown, width - 1) if width > 1 else shown)
        if text == self._shown:
            return
        layout = self._shown is None or self._height(text) != self._height(self._shown)
        self._shown = text
        self.update(Content(text), layout=layout)

    _split: tuple[object, list[str] | list[Content]] = (None, [])
    """The content shown and its lines, as the stock drawing splits it."""

    def render_line(self, y: int) -> Strip:
        """Draw line ``y`` alone, as the stock widget draws it within the whole text: the lines
        are folded already and never wrapped again, so each is drawn the same by itself. The
        stock widget draws every line of its text whenever it is repainted, and the pane's body
        is far taller than the screen: every key drew about 90 lines to show 15, a fifth of the
        main thread's time per key at 1,000,000 runs. Lines that Textual may
        wrap (a section without ``text-wrap: nowrap``, as in the dialogs), a text selection (drawn
        across lines) or another alignment go to the stock drawing."""
        styles = self.styles
        visual = self.visual
        if (
            styles.text_wrap != "nowrap"
            or styles.content_align != ("left", "top")
            or self.text_selection is not None
            or not isinstance(visual, Content)
        ):
            return super().render_line(y)
        self._dirty_regions.clear()  # as the stock drawing does once it drew the text
        if self._split[0] is not visual:  # a plain text (no spans, as _fold shows) splits as text
            self._split = (visual, visual.plain.split("\n") if not visual.spans else visual.split(allow_blank=True))
        lines = self._split[1]
        width = self.size.width
        if y < len(lines):
            line = lines[y]
            strips = Visual.to_strips(self, Content(line) if isinstance(line, str) else line, width, 1, self.visual_style)
            if strips:  # where a mouse selection starts: line y of the text, as the stock drawing says
                return strips[0].apply_offsets(0, y) if y else strips[0]
        return Strip.blank(width, self.visual_style.rich_style)
