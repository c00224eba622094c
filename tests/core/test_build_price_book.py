"""resources/pricing/build_price_book.py: the rules that turn the catalog's zone rows into the shipped book.

The catalog rows here are made up in the catalog's own columns (catalogs/v8/aws/vms.csv); the book the
script writes is read back through the app's own parser, so what is asserted is what a user is quoted.
"""
from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

from app.core.pricebook import PriceBook, parse_snapshot_csv

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "resources" / "pricing" / "build_price_book.py"
HEADER = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
          "AvailabilityZone,Arch")
NEURON_INFO = ('"{\'NeuronDevices\': [{\'Count\': 1, \'Name\': \'Inferentia2\', \'CoreInfo\': {\'Count\': 2, '
               '\'Version\': 2}, \'MemoryInfo\': {\'SizeInMiB\': 32768}}], \'TotalNeuronDeviceMemoryInMiB\': 32768}"')
COMMIT = "00148f2af3672e2229b4f7bf8157d5a3f36e3c35"


def _script():
    spec = importlib.util.spec_from_file_location("build_price_book", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _catalog(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join([HEADER, *lines]) + "\n", encoding="utf-8")
    return path


def _book(tmp_path: Path, argv: list[str]) -> PriceBook:
    out = tmp_path / "book.csv"
    assert _script().main([*argv, "--commit", COMMIT, "--output", str(out)]) == 0
    entries, specs = parse_snapshot_csv(out.read_text(encoding="utf-8"))
    return PriceBook(snapshot=entries, specs=specs)


def test_every_commercial_region_is_priced_with_the_lowest_standard_zone_spot(tmp_path):
    catalog = _catalog(tmp_path, "vms.csv", [
        f"inf2.xlarge,Inferentia2,1.0,4.0,16.0,{NEURON_INFO},0.7582,0.30,eu-west-1,euw1-az1,x86_64",
        # GpuInfo on the first row only (as the family extracts carry it): the type's specs still hold.
        "inf2.xlarge,Inferentia2,1.0,4.0,16.0,,0.7582,0.25,eu-west-1,euw1-az2,x86_64",
        # A Local Zone: cheaper spot, left out of the region's spot price.
        "inf2.xlarge,Inferentia2,1.0,4.0,16.0,,0.7582,0.05,eu-west-1,euw1-lhr1-az1,x86_64",
        "inf2.xlarge,Inferentia2,1.0,4.0,16.0,,0.99,0.41,ap-south-1,aps1-az1,x86_64",
        # GovCloud and China are not regions a user can be quoted here.
        "inf2.xlarge,Inferentia2,1.0,4.0,16.0,,0.95,0.40,us-gov-west-1,usgw1-az1,x86_64",
        # No public on-demand price: stays "no price", never $0.
        "g4dn.xlarge,T4,1.0,4.0,16.0,,,0.20,eu-west-1,euw1-az1,x86_64",
    ])
    book = _book(tmp_path, [str(catalog), "--date", "2026-11-01"])

    assert book.regions_of("inf2.xlarge") == ["ap-south-1", "eu-west-1"]
    assert book.entry("inf2.xlarge", "eu-west-1").usd_per_hour == 0.7582
    assert book.entry("inf2.xlarge", "eu-west-1", "spot").usd_per_hour == 0.25
    assert book.entry("inf2.xlarge", "eu-west-1").date == "2026-11-01"
    spec = book.spec("inf2.xlarge")
    assert (spec.vcpus, spec.neuron_cores, spec.accelerator_memory_gib) == (4, 2, 32)
    assert book.entry("g4dn.xlarge", "eu-west-1").usd_per_hour is None
    assert book.entry("g4dn.xlarge", "eu-west-1", "spot").usd_per_hour == 0.2


def test_an_extract_of_some_families_keeps_the_previous_books_other_types(tmp_path):
    previous = tmp_path / "previous.csv"
    with open(previous, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(_script().COLUMNS)
        writer.writerow(["c6a.8xlarge", "us-east-1", "32", "64", "", "0", "0", "0", "1.224", "0.5",
                         "an older snapshot", ""])
        writer.writerow(["inf2.xlarge", "us-east-1", "4", "16", "Inferentia2", "1", "32", "2", "0.70", "0.3",
                         "an older snapshot", ""])
    extract = _catalog(tmp_path, "inf2.csv", [
        f"inf2.xlarge,Inferentia2,1.0,4.0,16.0,{NEURON_INFO},0.7582,0.30,us-east-1,use1-az1,x86_64"])

    book = _book(tmp_path, [str(extract), "--date", "unknown", "--keep", str(previous), "--carry-over"])

    # The extract's type takes the newer price; the type it lacks is kept as it was; no date is invented.
    assert book.entry("inf2.xlarge", "us-east-1").usd_per_hour == 0.7582
    assert book.entry("inf2.xlarge", "us-east-1").date is None
    assert book.entry("c6a.8xlarge", "us-east-1").usd_per_hour == 1.224
    assert book.entry("c6a.8xlarge", "us-east-1").source == "an older snapshot"
