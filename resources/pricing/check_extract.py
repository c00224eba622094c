"""Check a copy of the catalog's vms.csv against figures recorded from the source file itself.

    python resources/pricing/check_extract.py resources/pricing/extracts/vms-00148f2a.csv

The figures live beside the copy, in the same name with ``.json`` (``vms-00148f2a.json``):

* ``source``: what was read from ``catalogs/v8/aws/vms.csv`` of skypilot-org/skypilot-catalog at the
  commit, through a reader of stored public files: the file's length in characters, and the character
  offset at which a few rows start (a read at a given offset shows which row begins there).
* ``extract``: the copy's own data rows, bytes and SHA-256, recorded when the copy was mended and
  checked against the ``source`` figures.

The copy differs from the source in one way: a type's ``GpuInfo`` is kept on its first row only
(the other rows leave the field empty).  In the source, a type's GpuInfo differs between rows only in
the order of its ``Workloads`` list (``['ml-ai', 'graphics']`` in one region, ``['graphics', 'ml-ai']``
in another): the same characters in another order, so putting the first row's GpuInfo back on every
row of the type gives each row its length in the source.  Summed, that must be the source's length,
and the recorded rows must start at the recorded offsets: a dropped, doubled or moved row cannot pass.

It reads files only and prints what differs; the exit status is 1 when anything does.
"""
from __future__ import annotations

import csv
import hashlib
import json
import sys
from pathlib import Path


def _quoted(field: str) -> str:
    """The field as the source's CSV writer wrote it (quoted when it holds a comma or a quote)."""
    if any(c in field for c in ',"\n'):
        return '"' + field.replace('"', '""') + '"'
    return field


def figures(path: Path, probes: list[str] = ()) -> dict:
    """The copy's rows, bytes and SHA-256; its length with every row's GpuInfo put back (as characters
    of the source); the offset where each probe row ("TYPE ZONE", e.g. "f1.16xlarge apse2-az1") starts;
    and the rows that break the source's order (type, region, zone)."""
    data = path.read_bytes()
    lines = data.decode("utf-8").splitlines(keepends=True)
    wanted = set(probes)
    gpu_info: dict[str, str] = {}
    offset = len(lines[0]) if lines else 0
    offsets: dict[str, int] = {}
    out_of_order: list[int] = []
    previous: tuple[str, str, str] | None = None
    for number, line in enumerate(lines[1:], start=2):
        row = next(csv.reader([line]))
        itype, region, zone = row[0], row[8], row[9]
        name = f"{itype} {zone}"
        if name in wanted:
            offsets[name] = offset
        if previous is not None and (itype, region, zone) <= previous:
            out_of_order.append(number)
        previous = (itype, region, zone)
        if row[5]:
            gpu_info.setdefault(itype, row[5])
            offset += len(line)
        else:
            info = gpu_info.get(itype, "")
            offset += len(line) + len(_quoted(info))
    return {"rows": len(lines) - 1, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "source_characters": offset, "row_offsets": offsets, "out_of_order_lines": out_of_order}


def check(path: Path, recorded: dict) -> list[str]:
    """What differs between the copy at ``path`` and the recorded figures: one sentence each."""
    source, extract = recorded["source"], recorded["extract"]
    found = figures(path, list(source["row_offsets"]))
    problems = []
    if found["rows"] != extract["rows"]:
        problems.append(f"{path.name} has {found['rows']:,} data rows; {extract['rows']:,} were recorded")
    if found["source_characters"] != source["characters"]:
        problems.append(f"{path.name} with its GpuInfo put back is {found['source_characters']:,} characters; "
                        f"the source is {source['characters']:,} (rows dropped, doubled or changed)")
    for name, offset in source["row_offsets"].items():
        if found["row_offsets"].get(name) != offset:
            problems.append(f"row {name} starts at {found['row_offsets'].get(name)} as the source would be laid "
                            f"out; it starts at {offset:,} in the source")
    if found["out_of_order_lines"]:
        problems.append(f"lines out of the source's order (type, region, zone): {found['out_of_order_lines'][:5]}")
    if (found["bytes"], found["sha256"]) != (extract["bytes"], extract["sha256"]):
        problems.append(f"{path.name} is {found['bytes']:,} bytes with SHA-256 {found['sha256']}; "
                        f"{extract['bytes']:,} bytes and {extract['sha256']} were recorded")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    path = Path(args[0])
    recorded = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    problems = check(path, recorded)
    for problem in problems:
        print(problem, file=sys.stderr)
    found = figures(path)
    print(f"{path}: {found['rows']:,} rows, {found['bytes']:,} bytes, sha256 {found['sha256']}, "
          f"{found['source_characters']:,} characters as the source; "
          + ("differs from the recorded figures" if problems else "matches the recorded figures"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
