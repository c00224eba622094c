"""Build the shipped price book from a snapshot of SkyPilot's public AWS catalog.

    python resources/pricing/build_price_book.py VMS_CSV --commit SHA --date YYYY-MM-DD \
        [--keep resources/pricing/aws-instances.csv] --output resources/pricing/aws-instances.csv

``VMS_CSV`` is ``catalogs/v8/aws/vms.csv`` of skypilot-org/skypilot-catalog at commit
``SHA`` (committed on ``--date``): one row per (InstanceType, Region, AvailabilityZone),
built by SkyPilot's fetcher from AWS's public on-demand price files, EC2
DescribeInstanceTypes and describe_spot_price_history.  The output has one row per
(instance type, commercial region) in the columns ``app.core.pricebook`` reads today,
so ``prices list``, ``prices set`` and ``prices refresh`` work on it unchanged.

Rules (the README beside this file repeats them for users):

* **Regions**: every commercial region the catalog lists; GovCloud (``us-gov-*``) and
  China (``cn-*``) are left out.
* **On-demand**: the region's price (the same in every zone of a region; where zones
  disagree, the most common value).  An empty cell stays empty: "no public price", never 0.
* **Spot**: the lowest price over the region's standard availability zones.  Local Zones
  and Wavelength zones (zone ids with an extra location segment, e.g. ``use1-atl2-az1``)
  are left out: they are dearer or cheaper for reasons a benchmark host does not share.
* **vCPUs, memory, accelerators**: the catalog's (DescribeInstanceTypes).  Accelerator
  memory and NeuronCores come from ``GpuInfo`` (TotalGpuMemoryInMiB, or the Neuron
  devices' memory and core counts).  ``--keep FILE`` keeps a previous file's accelerator
  memory and NeuronCores where it has the type: those came from the Neuron docs and AWS's
  GPU tables, better sourced than the API's figures where they disagree (trn2.48xlarge:
  the API's 8,388,608 MiB against the docs' 1,536 GiB).  Prices always come from the
  newer snapshot.

It reads and writes files only: it never runs in the tests or at install.
"""
from __future__ import annotations

import argparse
import ast
import csv
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

COLUMNS = ("instance_type", "region", "vcpus", "memory_gib", "accelerator_name", "accelerator_count",
           "accelerator_memory_gib", "neuron_cores", "on_demand_usd_per_hour", "spot_usd_per_hour", "source",
           "source_date")
KEPT_SPECS = ("accelerator_memory_gib", "neuron_cores")
STANDARD_ZONE = re.compile(r"^[a-z]+\d+-az\d+$")  # use1-az4; not use1-atl2-az1 (a Local Zone)
NOT_COMMERCIAL = ("us-gov-", "cn-")


def _number(text: str) -> float | None:
    text = (text or "").strip()
    return float(text) if text else None


def _figure(value: float | None) -> str:
    """Prices and sizes as the catalog wrote them, without a float's noise (0.2198, not 0.21980000000000002)."""
    if value is None:
        return ""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _gpu_info(text: str) -> tuple[float | None, int]:
    """(accelerator memory GiB in total, NeuronCores) from the catalog's GpuInfo (a Python dict's repr)."""
    text = (text or "").strip()
    if not text or not text.startswith("{"):
        return None, 0
    try:
        info = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None, 0
    if "TotalGpuMemoryInMiB" in info:
        return info["TotalGpuMemoryInMiB"] / 1024, 0
    devices = info.get("NeuronDevices") or []
    if not devices and any(str(d.get("Name", "")).startswith(("Trainium", "Inferentia"))
                           for d in info.get("Gpus") or []):
        # Newer catalog rows list Neuron chips under "Gpus" (trn2.3xlarge), with a memory figure
        # the Neuron docs contradict (512 GiB a Trainium2 chip against 96 GiB): cores only.
        cores = sum(d.get("Count", 0) * (d.get("CoreInfo") or {}).get("Count", 0) for d in info["Gpus"])
        return None, cores
    if devices:
        cores = sum(d.get("Count", 0) * (d.get("CoreInfo") or {}).get("Count", 0) for d in devices)
        memory = info.get("TotalNeuronDeviceMemoryInMiB")
        return (memory / 1024 if memory else None), cores
    return None, 0


def _read_catalog(paths: list[Path]) -> tuple[dict[tuple[str, str], list[dict[str, str]]], dict[str, str]]:
    """Zone rows by (type, commercial region), and each type's GpuInfo.

    The figures read from GpuInfo (accelerator memory, NeuronCores) are the same on every row of a
    type; only the order of its ``Workloads`` list differs by region.  So an extract may carry it on
    one row only (``extracts/vms-00148f2a.csv`` does): the first non-empty one counts.
    """
    zones: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    gpu_info: dict[str, str] = {}
    for path in paths:
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                itype = row["InstanceType"]
                if not itype:
                    continue
                if (row.get("GpuInfo") or "").strip():
                    gpu_info.setdefault(itype, row["GpuInfo"])
                if row["Region"].startswith(NOT_COMMERCIAL):
                    continue
                zones[(itype, row["Region"])].append(row)
    return zones, gpu_info


def build(vms_csvs: list[Path], commit: str, date: str, keep: Path | None,
          carry_over: bool = False) -> list[dict[str, str]]:
    zones, gpu_info = _read_catalog(vms_csvs)
    kept_rows: list[dict[str, str]] = []
    if keep is not None:
        with open(keep, newline="", encoding="utf-8") as handle:
            kept_rows = list(csv.DictReader(handle))
    kept = {row["instance_type"]: row for row in kept_rows}
    source = f"skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv @{commit[:8]}"
    out = []
    for (itype, region), rows in sorted(zones.items()):
        first = rows[0]
        on_demand = Counter(_number(r["Price"]) for r in rows if _number(r["Price"]) is not None).most_common(1)
        spots = [_number(r["SpotPrice"]) for r in rows if STANDARD_ZONE.match(r["AvailabilityZone"] or "")
                 and _number(r["SpotPrice"]) is not None]
        memory, cores = _gpu_info(gpu_info.get(itype, ""))
        count = _number(first["AcceleratorCount"])
        spec = {"accelerator_memory_gib": _figure(memory) if memory else ("0" if not count else ""),
                "neuron_cores": str(cores)}
        row_source = source
        if itype in kept:
            spec = {key: kept[itype][key] for key in KEPT_SPECS}
            # The kept figures keep their citation ("...; accelerator memory/neuron cores: <docs>").
            _, _, cited = kept[itype]["source"].partition(";")
            row_source = f"{source};{cited}" if cited else source
        out.append({"instance_type": itype, "region": region, "vcpus": _figure(_number(first["vCPUs"])),
                    "memory_gib": _figure(_number(first["MemoryGiB"])),
                    "accelerator_name": first["AcceleratorName"], "accelerator_count": _figure(count or 0.0),
                    **spec, "on_demand_usd_per_hour": _figure(on_demand[0][0]) if on_demand else "",
                    "spot_usd_per_hour": _figure(min(spots)) if spots else "",
                    "source": row_source, "source_date": date})
    if carry_over:
        # A partial extract (some families only): the previous book's rows of every other type stay
        # as they were, with their own source and date.
        listed = {itype for itype, _ in zones}
        out.extend(row for row in kept_rows if row["instance_type"] not in listed)
        out.sort(key=lambda row: (row["instance_type"], row["region"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vms_csv", type=Path, nargs="+",
                        help="catalogs/v8/aws/vms.csv of skypilot-org/skypilot-catalog, or extracts of it "
                             "(same columns)")
    parser.add_argument("--commit", required=True, help="the catalog commit the file is from (40 hex digits)")
    parser.add_argument("--date", required=True, help="that commit's date, YYYY-MM-DD, or 'unknown' (prices are then "
                                                       "shown as 'snapshot date unknown', never with an invented date)")
    parser.add_argument("--keep", type=Path, help="a previous price book whose accelerator memory and NeuronCores "
                                                   "win (better sourced)")
    parser.add_argument("--carry-over", action="store_true",
                        help="the input is an extract of some families: keep --keep's rows of every type it lacks")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[0-9a-f]{40}", args.commit) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}|unknown", args.date):
        parser.error("--commit is a full 40-digit commit id and --date YYYY-MM-DD (or unknown)")
    if args.carry_over and args.keep is None:
        parser.error("--carry-over needs --keep (the book whose other types are kept)")
    date = "" if args.date == "unknown" else args.date
    rows = build(args.vms_csv, args.commit, date, args.keep, args.carry_over)
    with open(args.output, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    types = len({r["instance_type"] for r in rows})
    regions = len({r["region"] for r in rows})
    print(f"wrote {len(rows)} rows ({types} instance types, {regions} regions, "
          f"{args.output.stat().st_size:,} bytes) to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
