"""The report's content as a list of plain blocks, so HTML and PDF show exactly the same things."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2
    page_break: bool = False  # start a new page when printed


@dataclass(frozen=True)
class Paragraph:
    text: str
    kind: str = "normal"  # normal | note | meta


@dataclass(frozen=True)
class Summary:
    """The decision summary: the sentences a reader acts on, shown first and boxed."""

    sentences: tuple[str, ...]


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...] = ()  # right-align these columns
    caption: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Chart:
    title: str
    svg: str
    width: int
    height: int
    caption: str = ""


Block = Heading | Paragraph | Summary | Bullets | Table | Chart
