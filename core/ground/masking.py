"""Passwords kept out of everything resolver writes: the one place a store URL is masked.

A team store's URL may carry its database password, in the user part
(``postgresql://grace:s3cret@db/shop``) or as libpq's ``password`` parameter
(``postgresql://grace@db/shop?password=s3cret``, or ``password=s3cret`` in a keyword conninfo).
The screen, the log file, ``doctor``, error sentences and ``--json`` all name the store by
:func:`mask_url`, and text that may quote a URL from elsewhere (a library's error, a command line
in the log) passes through :func:`mask_text`, so a password is written nowhere, whoever wrote
the sentence. URLs are read by :mod:`urllib.parse`, as libpq reads them; nothing here imports a
database library, so every face may use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote, unquote, urlsplit

__all__ = ["MASK", "mask_text", "mask_url", "passwords_of"]

MASK = "***"
"""What a password is replaced by."""

_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+")
"""A URL inside free text: a scheme, ``://`` and everything up to a space or a quote."""

_KEYWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s'\"&,;)]+)", re.IGNORECASE)
"""libpq's ``password=VALUE`` (a keyword conninfo's, quoted or not, or a URL's parameter)."""

_USERINFO = re.compile(r"(://[^:/@\s]*:)[^\s\"'<>`]*@")
"""``://user:PASSWORD@``: the user part of a URL :mod:`urllib.parse` cannot read (a broken IPv6
host), masked up to its last ``@`` (libpq reads to the first, so this masks at least as much)."""


def mask_url(url: str) -> str:
    """``url`` with every password replaced by ``***``: the one of its user part and each
    ``password`` query parameter (``postgresql://grace:***@db/shop?password=***``); anything
    else stays as written, so the URL shown is still the one to recognise. A URL that
    :mod:`urllib.parse` cannot read keeps its user but loses everything between the user's
    ``:`` and its last ``@``, so a malformed URL is never a way to print its password.
    Text that is not a URL (a keyword conninfo) has its ``password=`` values masked."""
    if "://" not in url:
        return _KEYWORD.sub(lambda m: m.group(1) + MASK, url)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return _KEYWORD.sub(lambda m: m.group(1) + MASK, _USERINFO.sub(lambda m: m.group(1) + MASK + "@", url))
    masked = url
    if password is not None:
        userinfo, _, host = parts.netloc.rpartition("@")
        masked = masked.replace(parts.netloc, f"{userinfo.partition(':')[0]}:{MASK}@{host}", 1)
    if parts.query:
        pairs = [_masked_pair(pair) for pair in parts.query.split("&")]
        masked = masked.replace(f"?{parts.query}", "?" + "&".join(pairs), 1)
    return masked


def _masked_pair(pair: str) -> str:
    """One ``key=value`` of a URL's query, its value masked when the key is ``password``."""
    key, sep, _ = pair.partition("=")
    return f"{key}={MASK}" if sep and unquote(key).strip().lower() == "password" else pair


def passwords_of(url: str) -> set[str]:
    """Every password ``url`` carries, in each spelling a message may quote it: as written in the
    URL (``s3%40cret``), decoded (``s3@cret``) and encoded again. Empty when it carries none."""
    found: list[str] = []
    if "://" in url:
        try:
            parts = urlsplit(url)
            if parts.password is not None:
                found.append(parts.netloc.rpartition("@")[0].partition(":")[2])
            found += [p.partition("=")[2] for p in parts.query.split("&") if _masked_pair(p) != p]
        except ValueError:
            match = _USERINFO.search(url)
            if match:
                found.append(url[match.end(1) : match.end() - 1])
    found += [m.group(2).strip("'") for m in _KEYWORD.finditer(url)]
    spellings = {form for raw in found for form in (raw, unquote(raw), quote(unquote(raw), safe=""))}
    return {form for form in spellings if form}


def mask_text(text: str, urls: Iterable[str | None] = ()) -> str:
    """``text`` with no password left in it: each password of ``urls`` (:func:`passwords_of`:
    the store's own URL, when a library's error may quote a piece of it, such as libpq's
    "invalid percent-encoded token") replaced wherever it stands, then every URL in the text
    through :func:`mask_url` and every ``password=VALUE`` masked. Used on every line of the log
    and every error sentence, where nobody can know in advance what a message quotes; a
    sentence masked more than needed is harmless, a password written once is not."""
    secrets = {secret for url in urls if url for secret in passwords_of(url)}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    if "://" in text:
        text = _URL.sub(lambda m: mask_url(m.group()), text)
    if "=" in text:
        text = _KEYWORD.sub(lambda m: m.group(1) + MASK, text)
    return text
