"""The detail pane: one run's title, notices, offered keys and body, handed a
:class:`core.api.views.RunDetail` and the keys' labels (it knows nothing of the store or the keys).

A newly shown run opens at its top; a refresh of the same run keeps where it was scrolled.
Its border title says whose run it is and, with ``▶``, that it has the focus.

A key press updates only what changed: each section is a widget updated in
place, a section whose text did not change is not touched, and a section of the same height
repaints alone, without a layout pass of the whole screen (a ``Static.update()`` lays out the
screen by default: three quarters of the main thread's work per key at 1,000,000 runs).
"""

from __future__ import annotations

from collections.abc import Mapping

from core.api.views import ACTIONS, RunDetail
from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static

from resolver_tui.widgets.safe import FoldedLines, clean, plain


class DetailPane(VerticalScroll):
    """The pane under the table. ``show`` renders a detail (or the empty and loading states).

    Its sections are folded by :class:`FoldedLines` to their width, and Textual does not wrap
    them again (``text-wrap: nowrap``; a profile of the app found it re-wrapping the folded
    lines at every paint): a line wider than its section, for the moment between a resize and
    its new fold, ends in ``…``."""

    DEFAULT_CSS = """
    DetailPane FoldedLines {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="detail-title")
        yield FoldedLines(id="detail-notice")
        yield FoldedLines(id="detail-keys")
        yield FoldedLines(id="detail-body")

    shown_run: str | None = None
    """The run shown now (a different one opens at its top)."""
    hint = ""
    """What the keys do while the pane has the focus (``j/k scroll · esc: back to the queue``),
    told by the screen from the action table."""

    def on_mount(self) -> None:
        self._title()

    def on_focus(self) -> None:
        self._title(True)  # Textual sets has_focus after this handler

    def on_blur(self) -> None:
        self._title(False)

    def on_descendant_focus(self) -> None:
        self._title()

    def on_descendant_blur(self) -> None:
        self._title()

    def _title(self, focused: bool | None = None) -> None:
        """``▶ T-65273-… · j/k scroll · esc: back to the queue`` while focused (with
        :attr:`hint`); the run ID otherwise."""
        run = clean(self.shown_run or "run")
        focused = self.has_focus_within if focused is None else focused
        text = " · ".join(["▶ " + run, *([self.hint] if self.hint else [])]) if focused else run
        if text != self._border_text:  # the same title is not set again (a repaint of the pane)
            self._border_text = text
            self._set_border_title(text)

    def _set_border_title(self, text: str) -> None:
        """Put ``text`` (untrusted: a run ID) in the border's top line and repaint that line
        alone. Setting ``border_title`` repaints the whole pane, so every key (each shows another
        run) composed all its lines again beside its sections'; the title is
        stored as the ``border_title`` setter stores it (Textual 8.0 to 8.2)."""
        if not self.is_mounted:
            self.border_title = plain(text)
            return
        self._border_title = self.render_str(plain(text)).expand_tabs(4).split()[0]
        left, top = self.content_offset
        self.refresh(Region(-left, -top, self.outer_size.width, 1))

    _border_text: str | None = None
    _title_text: str | None = None

    def _set_title(self, text: str) -> None:
        """The run's title line, bold; laid out again only when it may change height (a title
        wider than the pane wraps)."""
        if text == self._title_text:
            return
        width = self.query_one("#detail-title", Static).content_size.width
        old = self._title_text
        layout = old is None or not width or max(cell_len(text), cell_len(old)) > width or bool(text) != bool(old)
        self._title_text = text
        self.query_one("#detail-title", Static).update(plain(text, "bold") if text else "", layout=layout)

    def _set_tone(self, tone: str) -> None:
        """The notice's class (``ok``, ``warn``, ``error`` or none), changed only when it differs."""
        notice = self.query_one("#detail-notice", FoldedLines)
        if set(notice.classes) != ({tone} if tone else set()):
            notice.set_classes(tone)

    def show(
        self,
        detail: RunDetail | None,
        *,
        empty: bool = False,
        failure: str | None = None,
        why_not: Mapping[str, str | None] | None = None,
        outcome: list[str] | None = None,
        keys: Mapping[str, str] | None = None,
    ) -> None:
        """Render ``detail``; ``failure`` is an error sentence to put first (the last action's);
        ``outcome`` the lines of what this app's last decision on the run did (they stay here
        after the toast fades);
        ``why_not`` what the screen offers now (the detail's offers, or the screen's own
        reasons while it is busy); ``keys`` how the key line names each action (``a approve``,
        from :mod:`resolver_tui.keys`)."""
        notice = self.query_one("#detail-notice", FoldedLines)
        body = self.query_one("#detail-body", FoldedLines)
        labels = keys or {a: a for a in ACTIONS}
        keys_line = self.query_one("#detail-keys", FoldedLines)
        if detail is None:
            self.shown_run = None
            self._title()
            self._set_title("")
            self._set_tone("")
            for widget in (notice, keys_line):
                widget.set_lines([])
            body.set_lines(["No run here." if empty else "Loading…"])
            return
        if detail.run_id != self.shown_run and self.scroll_offset.y:
            self.scroll_home(animate=False, immediate=True)  # a newly shown run opens at its top
        self.shown_run = detail.run_id
        self._title()
        self._set_title(detail.title)
        notes = (
            ([failure] if failure else [])
            + [f"Outcome: {line}" if i == 0 else f"  {line}" for i, line in enumerate(outcome or [])]
            + detail.notes
        )
        tone = "error" if failure else ("ok" if outcome and not detail.tone else detail.tone)
        notice.set_lines(notes)
        self._set_tone(tone or "")
        why = why_not if why_not is not None else dict(detail.offers)
        offered = [labels[a] for a in ACTIONS if why.get(a) is None]
        grouped: dict[str, list[str]] = {}  # keys refused for the same reason share one line
        for a in ACTIONS:
            reason = why.get(a)
            if reason is not None:
                grouped.setdefault(reason, []).append(labels[a])
        refused = [f"Not offered: {', '.join(labels)}: {reason}" for reason, labels in grouped.items()]
        keys_line.set_lines([f"Keys: {', '.join(offered) or 'none'}", *refused])
        body.set_lines(detail.body)
