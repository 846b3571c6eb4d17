"""mkdocs hooks for the documentation site (``mkdocs.yml`` names this file under ``hooks``).

The pages are written for two readers: GitHub's Markdown, where a ``|`` inside a code span of a
table must be written ``\\|``, and the site's Python-Markdown, which splits table cells outside
code spans only and would print the backslash. So on the way into the site, a ``\\|`` inside a
code span of a table row loses its backslash; nothing else of a page changes.
"""

from __future__ import annotations

import re
from typing import Any

_CODE = re.compile(r"`[^`\n]*`")


def unescape_table_pipes(markdown: str) -> str:
    """``markdown`` with ``\\|`` written ``|`` inside the code spans of table rows (lines that
    start with ``|``); every other line, and text outside code spans, stays as it was."""

    def line(text: str) -> str:
        if not text.lstrip().startswith("|"):
            return text
        return _CODE.sub(lambda m: m.group(0).replace("\\|", "|"), text)

    return "\n".join(line(text) for text in markdown.split("\n"))


def on_page_markdown(markdown: str, **_: Any) -> str:
    """mkdocs' hook: each page's Markdown before it is rendered."""
    return unescape_table_pipes(markdown)
