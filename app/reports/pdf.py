"""PDF report: the same blocks as the HTML, laid out for A4 with Qt (QTextDocument -> QPdfWriter).

Why Qt and not an HTML-to-PDF engine: Qt is already the app's toolkit, needs no
system libraries beyond it and no browser, and works headless on the offscreen
platform.  Its rich-text engine reads a small subset of HTML, so this module
renders the blocks into that subset (tables with attributes, no CSS layout) and
draws every chart from its SVG onto a high-resolution image (QtSvg) placed in the
text.  Qt is imported here only, inside functions (DESIGN.md §2).
"""
from __future__ import annotations

import os
import re
from html import escape
from pathlib import Path
from typing import Any

from app.core.errors import NeuronBenchError
from app.reports.blocks import Block, Bullets, Chart, Heading, Paragraph, Summary, Table
from app.reports.content import build_blocks

_RUN_ID = re.compile(r"^\d{8}-\d{6}-")
PAGE_MARGIN_MM = 14.0
FOOTER_MM = 8.0
PDF_DPI = 300
CHART_DPI_SCALE = 3  # chart images at 3x their layout size: sharp when printed at 300 dpi
BODY_PT = 9
# QTextDocument's style sheet subset: tags and classes, fonts, colours, margins.
QT_CSS = f"""
body {{ font-family: 'DejaVu Sans'; font-size: {BODY_PT}pt; color: #222222; }}
h1 {{ font-size: 15pt; margin-bottom: 2pt; }}
h2 {{ font-size: 12pt; color: #0B4F7C; margin-top: 12pt; margin-bottom: 4pt; }}
h3 {{ font-size: 10pt; margin-top: 8pt; margin-bottom: 3pt; }}
th {{ background-color: #EFEFEF; font-weight: bold; }}
.meta {{ color: #666666; font-size: 8pt; }}
.note {{ color: #555555; font-size: 8pt; }}
.tnote {{ color: #555555; font-size: 7.5pt; }}
.caption {{ color: #555555; font-size: 7.5pt; }}
"""


def _qt():
    """Import Qt lazily; a clear sentence when PySide6 is not installed."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # no display needed to print
    try:
        from PySide6 import QtCore, QtGui, QtSvg
    except ImportError:
        raise NeuronBenchError("PDF reports need PySide6 (pip install PySide6-Essentials); "
                               "--format html makes the same report without it") from None
    if QtGui.QGuiApplication.instance() is None:
        _qt.app = QtGui.QGuiApplication(["neuronbench-report"])  # kept alive for the process
    return QtCore, QtGui, QtSvg


def _kept_whole(block: Table, column: int, cell: str) -> bool:
    """Figures, the first column (the host) and run ids must not break across lines; prose columns wrap."""
    numeric = block.numeric or (False,) * len(block.header)
    return (column < len(numeric) and numeric[column]) or column == 0 or bool(_RUN_ID.match(cell))


def column_shares(block: Table) -> list[float]:
    """Each column's share of the table's width, from what it must hold on one line.

    Qt's table layout, left to itself, gives the slack to the widest column and squeezes narrow ones below
    their header's longest word, which then wraps letter by letter ("B/a/t/c/h"): widths from the content
    avoid that.  A column needs its longest word (header or cell) and, where a cell must stay whole, that cell.
    """
    needs = []
    for column, header in enumerate(block.header):
        need = 1.2 * max(len(word) for word in header.split() or [""])  # bold: wider letters
        for row in block.rows:
            cell = row[column] if column < len(row) else ""
            whole = _kept_whole(block, column, cell)
            need = max(need, len(cell) if whole else min(max((len(w) for w in cell.split()), default=0), 30))
        needs.append(need + 2.5)  # the cell's padding and border, in characters
    total = sum(needs) or 1.0
    return [n / total for n in needs]


def _table(block: Table, width_pct: int = 100) -> str:
    numeric = block.numeric or (False,) * len(block.header)
    font = "7.5pt" if len(block.header) > 8 else "8pt"
    shares = column_shares(block)
    # A one-word header stays whole (Qt would otherwise break "Check" into "Chec" / "k" in a squeezed column).
    head = "".join(f'<th align="left" width="{share * 100:.1f}%"'
                   + (' style="white-space: nowrap;"' if len(h.split()) == 1 else "") + f">{escape(h)}</th>"
                   for h, share in zip(block.header, shares, strict=True))
    rows = []
    for row in block.rows:
        cells = []
        for i, cell in enumerate(row):
            right = i < len(numeric) and numeric[i]
            keep = _kept_whole(block, i, cell)
            style = ' style="white-space: nowrap;"' if keep else ""
            cells.append(f'<td align="{"right" if right else "left"}"{style}>{escape(cell)}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    caption = f"<p><b>{escape(block.caption)}</b></p>" if block.caption else ""
    notes = "".join(f'<p class="tnote">{escape(n)}</p>' for n in block.notes)
    return (f'{caption}<table border="1" cellspacing="0" cellpadding="3" width="{width_pct}%" '
            f'style="border-color: #BBBBBB; border-style: solid; font-size: {font};">'
            f"<thead><tr>{head}</tr></thead>{''.join(rows)}</table>{notes}")


def _block_html(block: Block, chart_name: str | None, text_width: float) -> str:
    if isinstance(block, Heading):
        style = ' style="page-break-before: always;"' if block.page_break else ""
        return f"<h{block.level}{style}>{escape(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        cls = {"note": ' class="note"', "meta": ' class="meta"'}.get(block.kind, "")
        return f"<p{cls}>{escape(block.text)}</p>"
    if isinstance(block, Summary):
        items = "".join(f"<li>{escape(s)}</li>" for s in block.sentences)
        return ('<table width="100%" cellspacing="0" cellpadding="7" bgcolor="#EEF5FB" '
                'style="border-left: 4px solid #0072B2;"><tr><td>'
                f'<h2 style="margin-top: 0;">Decision summary</h2><ul>{items}</ul></td></tr></table>')
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{escape(i)}</li>" for i in block.items) + "</ul>"
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Chart):
        height = text_width * block.height / block.width
        caption = f'<p class="caption">{escape(block.caption)}</p>' if block.caption else ""
        return (f'<p align="center"><img src="{chart_name}" width="{text_width:.0f}" height="{height:.0f}"></p>'
                f"{caption}")
    raise TypeError(f"unknown report block {type(block).__name__}")


def _chart_image(QtCore, QtGui, QtSvg, chart: Chart):
    renderer = QtSvg.QSvgRenderer(QtCore.QByteArray(chart.svg.encode("utf-8")))
    if not renderer.isValid():
        raise NeuronBenchError(f"the chart {chart.title!r} could not be drawn for the PDF")
    image = QtGui.QImage(chart.width * CHART_DPI_SCALE, chart.height * CHART_DPI_SCALE,
                         QtGui.QImage.Format.Format_RGB32)
    image.fill(QtGui.QColor("white"))
    painter = QtGui.QPainter(image)
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing)
    renderer.render(painter)
    painter.end()
    return image


def write_pdf(doc: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write the report to ``path`` as an A4 PDF, with the title and "page N of M" at the foot of each page.

    The text is laid out on the PDF device itself (its resolution), paginated by
    Qt's layout (table rows never split, header rows repeat), and drawn page by page.
    """
    QtCore, QtGui, QtSvg = _qt()
    writer = QtGui.QPdfWriter(str(Path(path)))
    writer.setResolution(PDF_DPI)
    writer.setTitle(f"NeuronBench report: {doc['title']}")
    writer.setCreator(doc["generator"])
    writer.setPageLayout(QtGui.QPageLayout(QtGui.QPageSize(QtGui.QPageSize.PageSizeId.A4),
                                           QtGui.QPageLayout.Orientation.Portrait, QtCore.QMarginsF(0, 0, 0, 0),
                                           QtGui.QPageLayout.Unit.Millimeter))
    mm = PDF_DPI / 25.4
    page_w, page_h = writer.width(), writer.height()
    body = QtCore.QRectF(PAGE_MARGIN_MM * mm, PAGE_MARGIN_MM * mm, page_w - 2 * PAGE_MARGIN_MM * mm,
                         page_h - (PAGE_MARGIN_MM + FOOTER_MM) * mm - PAGE_MARGIN_MM * mm)

    text = QtGui.QTextDocument()
    text.documentLayout().setPaintDevice(writer)  # fonts measured at the PDF's resolution
    text.setDefaultStyleSheet(QT_CSS)
    font = QtGui.QFont("DejaVu Sans")
    font.setPointSizeF(BODY_PT)
    text.setDefaultFont(font)
    text.setDocumentMargin(0)
    text.setPageSize(body.size())
    parts = [f"<h1>{escape('NeuronBench report: ' + doc['title'])}</h1>"]
    for index, block in enumerate(build_blocks(doc)):
        name = None
        if isinstance(block, Chart):
            name = f"neuronbench-chart-{index}.png"
            text.addResource(QtGui.QTextDocument.ResourceType.ImageResource, QtCore.QUrl(name),
                             _chart_image(QtCore, QtGui, QtSvg, block))
        # <img width> is read in 96-dpi pixels and scaled to the device: give the body width in those.
        parts.append(_block_html(block, name, body.width() * 96 / PDF_DPI))
    text.setHtml(f"<html><body>{''.join(parts)}</body></html>")

    pages = text.pageCount()
    painter = QtGui.QPainter()
    if not painter.begin(writer):
        raise NeuronBenchError(f"cannot write the PDF {path}")
    try:
        footer_font = QtGui.QFont("DejaVu Sans")
        footer_font.setPointSizeF(7)
        for page in range(pages):
            if page:
                writer.newPage()
            painter.save()
            painter.translate(body.left(), body.top() - page * body.height())
            view = QtCore.QRectF(0, page * body.height(), body.width(), body.height())
            painter.setClipRect(view)
            context = QtGui.QAbstractTextDocumentLayout.PaintContext()
            context.clip = view
            text.documentLayout().draw(painter, context)
            painter.restore()
            painter.setFont(footer_font)
            painter.setPen(QtGui.QColor("#666666"))
            foot = QtCore.QRectF(body.left(), page_h - (PAGE_MARGIN_MM + FOOTER_MM / 2) * mm, body.width(),
                                 FOOTER_MM * mm)
            painter.drawLine(QtCore.QPointF(foot.left(), foot.top()), QtCore.QPointF(foot.right(), foot.top()))
            painter.drawText(foot, int(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter),
                             f"NeuronBench report · {doc['generated_at'].replace('T', ' ').replace('Z', ' UTC')}")
            painter.drawText(foot, int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter),
                             f"page {page + 1} of {pages}")
    finally:
        painter.end()
