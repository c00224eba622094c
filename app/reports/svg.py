"""Small, dependency-free SVG charts for reports: grouped bars with intervals, lines, labelled scatter.

The SVG is self-contained and sticks to presentation attributes (no CSS, no
scripts, no external fonts) so that browsers and Qt's SVG renderer (used for the
PDF) draw it the same.  A missing value is drawn as an "N/A" label, never as a
zero-height bar.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

# Okabe-Ito: distinguishable with the common colour-vision deficiencies, and in greyscale print.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
TEXT = "#222222"
GRID = "#DDDDDD"
AXIS = "#555555"
LIMIT = "#D55E00"  # a limit the figures are held to (an SLO line)


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1, 2, 2.5 or 5 times a power of ten apart)."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def fmt(value: float) -> str:
    """Axis labels: 1500 -> 1.5k, 0.0004 -> 0.0004, 12.5 -> 12.5."""
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:g}M"
    if magnitude >= 1e4:
        return f"{value / 1e3:g}k"
    return f"{value:.4g}"


@dataclass
class _Canvas:
    width: int
    height: int
    parts: list[str] = field(default_factory=list)

    def text(self, x: float, y: float, content: str, size: float = 11, anchor: str = "start",
             weight: str = "normal", fill: str = TEXT, rotate: float | None = None) -> None:
        transform = f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"' if rotate else ""
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-family="{FONT}" font-size="{size:g}" '
                          f'text-anchor="{anchor}" font-weight="{weight}" fill="{fill}"{transform}>'
                          f"{escape(content)}</text>")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = AXIS, width: float = 1.0,
             dash: str | None = None) -> None:
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
                          f'stroke-width="{width:g}"{dashed}/>')

    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str = "none") -> None:
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" '
                          f'fill="{fill}" stroke="{stroke}"/>')

    def polyline(self, points: Sequence[tuple[float, float]], stroke: str, width: float = 2.0) -> None:
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.parts.append(f'<polyline points="{coords}" fill="none" stroke="{stroke}" stroke-width="{width:g}" '
                          f'stroke-linejoin="round"/>')

    def circle(self, x: float, y: float, r: float, fill: str) -> None:
        self.parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:g}" fill="{fill}" stroke="#FFFFFF" '
                          f'stroke-width="1"/>')

    def render(self, title: str) -> str:
        body = "\n".join(self.parts)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{self.width}" '
                f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" role="img" '
                f'aria-label="{escape(title, {chr(34): "&quot;"})}">\n'
                f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="#FFFFFF"/>\n{body}\n</svg>')


@dataclass
class _Frame:
    """The plotting area inside the margins, with a y axis from ``y_ticks``."""

    canvas: _Canvas
    left: float
    top: float
    right: float
    bottom: float
    y_ticks: list[float]

    def y(self, value: float) -> float:
        low, high = self.y_ticks[0], self.y_ticks[-1]
        return self.bottom - (value - low) / (high - low) * (self.bottom - self.top)

    def draw_y_axis(self, label: str) -> None:
        c = self.canvas
        for tick in self.y_ticks:
            y = self.y(tick)
            c.line(self.left, y, self.right, y, GRID)
            c.text(self.left - 6, y + 4, fmt(tick), size=10, anchor="end")
        c.line(self.left, self.top, self.left, self.bottom)
        c.line(self.left, self.bottom, self.right, self.bottom)
        c.text(14, (self.top + self.bottom) / 2, label, size=11, anchor="middle", rotate=-90)


def _legend(canvas: _Canvas, entries: Sequence[tuple[str, str]], x: float, y: float) -> None:
    for i, (name, fill) in enumerate(entries):
        canvas.rect(x, y + i * 16 - 9, 10, 10, fill)
        canvas.text(x + 15, y + i * 16, name, size=10)


def _colours(series: Sequence[BarSeries | PointSeries]) -> list[str]:
    return [s.colour or colour(i) for i, s in enumerate(series)]


def _legend_width(names: Sequence[str]) -> float:
    return 30 + 6.2 * max((len(n) for n in names), default=0)


@dataclass
class BarSeries:
    name: str
    values: list[float | None]
    intervals: list[Sequence[float] | None] | None = None
    missing: list[str] | None = None  # what to print where a value is None ("N/A", "not run")
    colour: str | None = None  # the same host keeps its colour in every chart


def bar_chart(title: str, categories: Sequence[str], series: Sequence[BarSeries], y_label: str,
              x_label: str = "", width: int = 720, height: int = 320) -> str:
    """Grouped bars: one group per category, one bar per series; whiskers for 95% intervals."""
    c = _Canvas(width, height)
    legend_w = min(_legend_width([s.name for s in series]), width * 0.4)
    top_values = [v for s in series for v in s.values if v is not None]
    top_values += [iv[1] for s in series for iv in (s.intervals or []) if iv]
    frame = _Frame(c, 70, 34, width - legend_w - 10, height - 46,
                   nice_ticks(0.0, max(top_values) if top_values else 1.0))
    c.text(frame.left, 20, title, size=13, weight="bold")
    frame.draw_y_axis(y_label)
    fills = _colours(series)
    slot = (frame.right - frame.left) / max(len(categories), 1)
    bar_w = min(48.0, slot * 0.8 / max(len(series), 1))
    for ci, category in enumerate(categories):
        x0 = frame.left + ci * slot + (slot - bar_w * len(series)) / 2
        c.text(frame.left + (ci + 0.5) * slot, frame.bottom + 16, category, size=10, anchor="middle")
        for si, s in enumerate(series):
            value = s.values[ci] if ci < len(s.values) else None
            x = x0 + si * bar_w
            if value is None:
                why = s.missing[ci] if s.missing and ci < len(s.missing) else "N/A"
                if len(why) > 4 and bar_w < 40:  # too wide for the bar: write it upwards
                    c.text(x + bar_w / 2 + 3, frame.bottom - 4, why, size=9, fill="#888888", rotate=-90)
                else:
                    c.text(x + bar_w / 2, frame.bottom - 4, why, size=9, anchor="middle", fill="#888888")
                continue
            c.rect(x + 1, frame.y(value), bar_w - 2, frame.bottom - frame.y(value), fills[si])
            interval = (s.intervals or [None] * len(categories))[ci] if s.intervals else None
            if interval:
                xm = x + bar_w / 2
                c.line(xm, frame.y(interval[0]), xm, frame.y(interval[1]), TEXT, 1.2)
                for bound in interval:
                    c.line(xm - 4, frame.y(bound), xm + 4, frame.y(bound), TEXT, 1.2)
    if x_label:
        c.text((frame.left + frame.right) / 2, height - 10, x_label, size=11, anchor="middle")
    _legend(c, list(zip([s.name for s in series], fills, strict=True)), frame.right + 16, frame.top + 8)
    return c.render(title)


@dataclass
class PointSeries:
    name: str
    points: list[tuple[float, float]]
    labels: list[str] | None = None  # one per point (e.g. batch sizes), drawn next to it
    colour: str | None = None


def _axes_from(series: Sequence[PointSeries], y_max: float | None) -> tuple[list[float], list[float]]:
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    x_ticks = nice_ticks(0.0, max(xs) if xs else 1.0, 6)
    y_ticks = nice_ticks(0.0, y_max if y_max is not None else (max(ys) if ys else 1.0))
    return x_ticks, y_ticks


def xy_chart(title: str, series: Sequence[PointSeries], x_label: str, y_label: str, lines: bool = True,
             y_max: float | None = None, width: int = 720, height: int = 320, empty_text: str = "no data",
             x_ticks: Sequence[float] | None = None, limit: tuple[float, str] | None = None) -> str:
    """Lines (utilisation over time) or labelled points joined in order (latency vs throughput).

    ``x_ticks``: the x axis' ticks when the data says better than round numbers (whole node counts).
    ``limit``: (y, its name): a dashed horizontal line, e.g. an SLO's p99 TTFT, always inside the axis.
    """
    c = _Canvas(width, height)
    legend_w = min(_legend_width([s.name for s in series]), width * 0.4)
    if limit is not None and y_max is None:
        y_max = max([y for s in series for _, y in s.points] + [limit[0]])
    auto_x, y_ticks = _axes_from(series, y_max)
    x_ticks = list(x_ticks) if x_ticks else auto_x
    frame = _Frame(c, 70, 34, width - legend_w - 10, height - 46, y_ticks)
    c.text(frame.left, 20, title, size=13, weight="bold")
    frame.draw_y_axis(y_label)

    def x_of(value: float) -> float:
        return frame.left + (value - x_ticks[0]) / (x_ticks[-1] - x_ticks[0]) * (frame.right - frame.left)

    for tick in x_ticks:
        c.line(x_of(tick), frame.bottom, x_of(tick), frame.bottom + 4)
        c.text(x_of(tick), frame.bottom + 16, fmt(tick), size=10, anchor="middle")
    c.text((frame.left + frame.right) / 2, height - 10, x_label, size=11, anchor="middle")
    if not any(s.points for s in series):
        c.text((frame.left + frame.right) / 2, (frame.top + frame.bottom) / 2, empty_text, size=12,
               anchor="middle", fill="#888888")
    if limit is not None:
        c.line(frame.left, frame.y(limit[0]), frame.right, frame.y(limit[0]), LIMIT, 1.5, dash="6 4")
        c.text(frame.right - 4, frame.y(limit[0]) + 14, limit[1], size=10, anchor="end", fill=LIMIT)  # under it
    fills = _colours(series)
    for si, s in enumerate(series):
        points = [(x_of(x), frame.y(y)) for x, y in s.points]
        if len(points) > 1:
            c.polyline(points, fills[si], 2.0 if lines else 1.2)
        if not lines or len(points) == 1:
            for pi, (x, y) in enumerate(points):
                c.circle(x, y, 4, fills[si])
                if s.labels and pi < len(s.labels):
                    c.text(x + 6, y - 6, s.labels[pi], size=9)
    _legend(c, list(zip([s.name for s in series], fills, strict=True)), frame.right + 16, frame.top + 8)
    return c.render(title)


def thin(points: Sequence[tuple[float, float]], limit: int = 400) -> list[tuple[float, float]]:
    """At most ``limit`` points for a line (every k-th point, the last kept): a chart, not a data dump."""
    if len(points) <= limit:
        return list(points)
    step = math.ceil(len(points) / limit)
    kept = list(points[::step])
    if kept[-1] != points[-1]:
        kept.append(points[-1])
    return kept
