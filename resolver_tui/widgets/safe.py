"""The one helper for untrusted text (ticket text, evidence, reasons, reply drafts, names).

A plain ``str`` given to ``Static``, ``Label``, a ``DataTable`` cell, ``notify`` or a border
title is parsed as markup: ``"[/"`` crashes the app and ``"[@click=app.quit]x[/]"`` becomes a
live action (textual issue 6155). Everything shown from the store goes through :func:`plain`
(a :class:`~textual.content.Content`) or :func:`cell` (a Rich ``Text`` for table cells), both
built from :func:`core.views.safe_text`, which strips ESC sequences and control characters.
"""

from __future__ import annotations

from typing import Any

from core.views import safe_text
from rich.text import Text
from textual.content import Content


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
