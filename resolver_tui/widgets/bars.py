"""The top bar (who is at the keyboard, the simulated clock) and the status filter bar."""

from __future__ import annotations

from datetime import datetime

from core.views import role_label
from textual.content import Content
from textual.widgets import Static

from resolver_tui.widgets.safe import clean

FILTERS: list[tuple[str | None, str]] = [
    ("waiting_approval", "waiting approval"),
    ("executing", "executing"),
    ("running", "running"),
    ("handed_to_person", "handed to person"),
    ("stopped", "stopped"),
    ("done", "done"),
    (None, "all"),
]
"""The status filters, in the order of the number keys 1-7 (None: every status)."""


class TopBar(Static):
    """``Larkfield approvals · practice · at the keyboard: Tomás (team lead) · clock Mon
    2026-10-12 09:00 (simulated)``: ``kind`` is the home's kind, ``practice`` or ``shop``."""

    def show(self, name: str, role: str, now: datetime | None, kind: str = "practice") -> None:
        parts: list = [("Larkfield approvals", "bold"), "  ·  ", (kind, "bold"), "  ·  at the keyboard: ",
                       (clean(name), "bold"), f" ({role_label(role)})"]
        if now is not None:
            parts += ["  ·  clock ", (now.strftime("%a %Y-%m-%d %H:%M"), "bold"), " (simulated)"]
        self.update(Content.assemble(*parts))


class FilterBar(Static):
    """The status filters with live counts, the active one highlighted, and the refresh time."""

    def show(self, active: int, counts: dict[str, int], search: str | None, refreshed: str,
             following: bool = False) -> None:
        parts: list = []
        if search:  # first, so a narrow terminal never hides it
            hint = "a number key or Esc leaves it" if following else "Esc clears it"
            parts += [("showing only " if following else "filter: ", "bold"), (clean(search), "bold reverse"),
                      f" ({hint})  "]
        total = sum(counts.values())
        for i, (status, label) in enumerate(FILTERS):
            n = total if status is None else counts.get(status, 0)
            text = f" {i + 1} {label} {n} "
            parts.append((text, "reverse bold") if i == active else text)
            parts.append(" ")
        if refreshed:
            parts += [f"  refreshed {refreshed}"]
        self.update(Content.assemble(*parts))
