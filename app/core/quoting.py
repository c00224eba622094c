"""Quoting user and host text in messages: control characters escaped, long text shortened.

Every sentence that repeats what a user typed or a host sent goes through here, in the CLI and in the
app alike: an ESC, BEL or CR in a host name, a run id or an agent's log line must never repaint the
user's terminal, a bidirectional override never reorder what a dialog says, and a 100 kB argument is
not echoed back whole.  Escapes read as Python writes them (``\\x1b``, ``\\n``, ``\\u202e``, ``\\udcff``
for a byte that was not UTF-8), so what was sent can still be told apart.
"""
from __future__ import annotations

import unicodedata

ONE_LINE_LIMIT = 200        # a value quoted inside a sentence
SENTENCE_LIMIT = 2_000      # a whole sentence (an error quoting a host's message, a progress line)
BLOCK_LIMIT = 100_000       # a multi-line text shown as it came (a traceback, a Result's summary)
# Categories that move the cursor, reorder text or end a line on some terminals: C0/C1 controls (Cc),
# format characters such as bidirectional overrides and zero-width joiners (Cf), lone surrogates from
# arguments that were not UTF-8 (Cs), and the Unicode line and paragraph separators (Zl, Zp).
_UNSAFE = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _escaped(text: str, keep: str) -> str:
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(_escape(c) if c not in keep and unicodedata.category(c) in _UNSAFE else c for c in text)


def _shortened(text: str, limit: int) -> tuple[str, str]:
    if len(text) <= limit:
        return text, ""
    return text[:limit], f"… ({len(text):,} characters)"


def clean(text: object, limit: int = ONE_LINE_LIMIT) -> str:
    """``text`` on one line: every control character escaped (newlines too), cut after ``limit`` characters."""
    head, tail = _shortened(str(text), limit)
    return _escaped(head, "") + tail


def quoted(text: object, limit: int = ONE_LINE_LIMIT) -> str:
    """``clean(text)`` in single quotes: for a value inside a sentence (``no host 'x'``)."""
    return f"'{clean(text, limit)}'"


def clean_block(text: object, limit: int = BLOCK_LIMIT) -> str:
    """Text of several lines as it came, but with every control character other than newline and tab escaped."""
    head, tail = _shortened(str(text), limit)
    return _escaped(head, "\n\t") + tail


def has_surrogates(text: str) -> bool:
    """Whether ``text`` holds lone surrogates: bytes that were not UTF-8, as Python passes them in ``argv``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
