"""The runs table never shows rows drawn at widths it no longer has (a flaky test's cause:
rows painted before the table measured them kept label-wide columns, ``T-652…  waiti…``)."""

from __future__ import annotations

from resolver_tui.widgets.run_table import COLUMNS, RunTable
from textual.app import App, ComposeResult

ROW = (
    "T-65273-agent-chat-small-1",
    "T-65273",
    "Olivia Martin",
    "request_refund",
    "119.00",
    "team lead",
    "2d 16h",
    "waiting",
)


class _One(App[None]):
    def compose(self) -> ComposeResult:
        yield RunTable(id="runs")


def _line(table: RunTable, y: int) -> str:
    return "".join(segment.text for segment in table.render_line(y))


async def test_a_row_painted_before_it_was_measured_is_drawn_again_at_the_measured_widths():
    """What a resize's :meth:`RunTable.fit` does (the table emptied and its rows added again)
    ends at the virtual size it started from, so no Resize bumps the table's update count: the
    rows painted in between must still be drawn again once measured."""
    assert len(ROW) == len(COLUMNS)
    app = _One()
    async with app.run_test(size=(160, 20)) as pilot:
        table = app.query_one(RunTable)
        table._add(ROW[0], ROW)
        for _ in range(3):
            await pilot.pause()
        assert all(cell in _line(table, 1) for cell in ROW), _line(table, 1)
        with app.batch_update():  # as fit() rebuilds the rows
            table.clear(columns=True)
            table._add_columns()
            table._add(ROW[0], ROW)
        early = _line(table, 1)  # painted before the idle that measures the new row
        assert "T-65273-agent-chat-small-1" not in early, early  # drawn at the label's width
        for _ in range(3):
            await pilot.pause()
        later = _line(table, 1)
        for cell in ROW:
            assert cell in later, (cell, later)
