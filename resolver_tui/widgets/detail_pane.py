"""The detail pane: one run's title, notices, offered keys and body, handed a
:class:`core.views.RunDetail` (it knows nothing of the store)."""

from __future__ import annotations

from collections.abc import Mapping

from core.views import ACTIONS, RunDetail
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from resolver_tui.widgets.safe import lines, plain

KEY_LABELS = {"approve": "a approve", "reject": "x reject", "resume": "u resume", "trace": "t trace", "compare": "d compare"}
"""How the pane names each action's key."""


class DetailPane(VerticalScroll):
    """The pane under the table. ``show`` renders a detail (or the empty and loading states)."""

    def compose(self) -> ComposeResult:
        yield Static(id="detail-title")
        yield Static(id="detail-notice")
        yield Static(id="detail-keys")
        yield Static(id="detail-body")

    def on_mount(self) -> None:
        self.border_title = "run"

    def show(
        self,
        detail: RunDetail | None,
        *,
        empty: bool = False,
        failure: str | None = None,
        why_not: Mapping[str, str | None] | None = None,
        outcome: list[str] | None = None,
    ) -> None:
        """Render ``detail``; ``failure`` is an error sentence to put first (the last action's);
        ``outcome`` the lines of what this app's last decision on the run did (they stay here
        after the toast fades);
        ``why_not`` what the screen offers now (the detail's offers, or the screen's own
        reasons while it is busy)."""
        title = self.query_one("#detail-title", Static)
        notice = self.query_one("#detail-notice", Static)
        keys = self.query_one("#detail-keys", Static)
        body = self.query_one("#detail-body", Static)
        notice.set_classes("")
        if detail is None:
            self.border_title = plain("run")
            for widget in (title, notice, keys):
                widget.update("")
            body.update(plain("No run here." if empty else "Loading…"))
            return
        self.border_title = plain(detail.run_id)
        title.update(plain(detail.title, "bold"))
        notes = (
            ([failure] if failure else [])
            + [f"Outcome: {line}" if i == 0 else f"  {line}" for i, line in enumerate(outcome or [])]
            + detail.notes
        )
        tone = "error" if failure else ("ok" if outcome and not detail.tone else detail.tone)
        notice.update(lines(notes))
        if tone:
            notice.set_classes(tone)
        why = why_not if why_not is not None else dict(detail.offers)
        offered = [KEY_LABELS[a] for a in ACTIONS if why.get(a) is None]
        grouped: dict[str, list[str]] = {}  # keys refused for the same reason share one line
        for a in ACTIONS:
            reason = why.get(a)
            if reason is not None:
                grouped.setdefault(reason, []).append(KEY_LABELS[a])
        refused = [f"Not offered: {', '.join(labels)}: {reason}" for reason, labels in grouped.items()]
        keys.update(lines([f"Keys: {', '.join(offered) or 'none'}", *refused]))
        body.update(lines(detail.body))
