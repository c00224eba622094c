"""HTML report: ONE self-contained file (inline CSS and SVG; no scripts, fonts or links to fetch)."""
from __future__ import annotations

from html import escape
from typing import Any

from app.reports.blocks import Block, Bullets, Chart, Heading, Paragraph, Summary, Table
from app.reports.content import build_blocks

CSS = """
:root { color-scheme: light; }
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; color: #222; margin: 2rem auto; max-width: 1040px;
       padding: 0 1.2rem; line-height: 1.45; font-size: 14px; }
h1 { font-size: 1.55rem; margin-bottom: .2rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 2px solid #0072B2; padding-bottom: .2rem; }
h3 { font-size: 1.02rem; margin-top: 1.4rem; }
.meta { color: #666; font-size: .86rem; margin-top: 0; }
.summary { background: #EEF5FB; border-left: 5px solid #0072B2; padding: .7rem 1rem; margin: 1.2rem 0; }
.summary h2 { border: none; margin: 0 0 .4rem 0; padding: 0; }
.summary li { margin: .25rem 0; }
.note { color: #555; font-size: .9rem; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .84rem; width: 100%; }
caption { text-align: left; font-weight: bold; padding: .3rem 0; }
th, td { border: 1px solid #CCC; padding: .25rem .45rem; vertical-align: top; }
th { background: #F2F2F2; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
p.tnote { font-size: .8rem; color: #555; margin: .1rem 0; }
figure { margin: 1rem 0; page-break-inside: avoid; break-inside: avoid; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: .82rem; color: #555; }
@page { size: A4; margin: 16mm; }
@media print { body { margin: 0; max-width: none; font-size: 11px; } h2.break { page-break-before: always; }
               table, figure { page-break-inside: avoid; } }
"""


def _table(block: Table) -> str:
    numeric = block.numeric or (False,) * len(block.header)
    head = "".join(f"<th>{escape(h)}</th>" for h in block.header)
    body = []
    for row in block.rows:
        cells = "".join(f'<td class="num">{escape(c)}</td>' if i < len(numeric) and numeric[i]
                        else f"<td>{escape(c)}</td>" for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    caption = f"<caption>{escape(block.caption)}</caption>" if block.caption else ""
    notes = "".join(f'<p class="tnote">{escape(n)}</p>' for n in block.notes)
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{notes}"


def render_block(block: Block) -> str:
    if isinstance(block, Heading):
        cls = ' class="break"' if block.page_break else ""
        return f"<h{block.level}{cls}>{escape(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        cls = {"note": ' class="note"', "meta": ' class="meta"'}.get(block.kind, "")
        return f"<p{cls}>{escape(block.text)}</p>"
    if isinstance(block, Summary):
        items = "".join(f"<li>{escape(s)}</li>" for s in block.sentences)
        return f'<section class="summary"><h2>Decision summary</h2><ul>{items}</ul></section>'
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{escape(i)}</li>" for i in block.items) + "</ul>"
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Chart):
        caption = f"<figcaption>{escape(block.caption)}</figcaption>" if block.caption else ""
        return f"<figure>{block.svg}{caption}</figure>"
    raise TypeError(f"unknown report block {type(block).__name__}")


def render_html(doc: dict[str, Any]) -> str:
    """The report as one HTML string."""
    body = "\n".join(render_block(b) for b in build_blocks(doc))
    title = f"NeuronBench report: {doc['title']}"
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<meta name="generator" content="{escape(doc["generator"])}">\n'
            f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            f"<h1>{escape(title)}</h1>\n{body}\n</body>\n</html>\n")
