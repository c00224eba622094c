"""The price book: hourly prices per (instance type, region, market), each with its source and date.

Pure model, no file access: ``app.services.pricing`` reads the shipped snapshot
CSV and the user's overrides and hands the text/entries here.

Prices come in layers; the first layer that has an entry wins:

1. ``user``      set with ``neuronbench prices set`` (dated the day it was set);
2. ``aws-api``   fetched with ``neuronbench prices refresh`` (dated the fetch);
3. ``snapshot``  the CSV shipped in ``resources/pricing`` (source named, date unknown).

A missing price is ``None`` with a sentence saying why (DESIGN.md: missing is not
zero): trn2.48xlarge has no public on-demand price, and an unknown type is not 0 $/h.
"""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from app.core.quoting import quoted

MARKETS = ("on_demand", "spot")
ORIGINS = ("user", "aws-api", "snapshot")
# When a run's region is unknown (a machine that is not EC2, or IMDS blocked) it is priced
# here, and the Price says so.  us-east-1 lists every type of the shipped snapshot but trn2.
DEFAULT_REGION = "us-east-1"
ANY_REGION = "*"
# What a user may name an instance type or region they price themselves: shown in every table and report.
TYPE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
REGION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,31}$")
SNAPSHOT_DATE_UNKNOWN = "snapshot date unknown"

_SPEC_COLUMNS = ("vcpus", "memory_gib", "accelerator_name", "accelerator_count", "accelerator_memory_gib",
                 "neuron_cores")
_SNAPSHOT_COLUMNS = ("instance_type", "region", *_SPEC_COLUMNS, "on_demand_usd_per_hour", "spot_usd_per_hour",
                     "source", "source_date")


class PriceBookError(ValueError):
    """A price file or a price a user typed is malformed (the message names the line or value)."""


def market_label(market: str) -> str:
    return "on-demand" if market == "on_demand" else market


@dataclass(frozen=True)
class PriceEntry:
    """One hourly price as a source gave it.  ``usd_per_hour`` None: the source lists no price."""

    instance_type: str
    region: str  # a region code, or ANY_REGION for a user price that holds everywhere
    market: str
    usd_per_hour: float | None
    source: str
    date: str | None  # ISO date or date-time; None when the source does not say
    origin: str

    def __post_init__(self) -> None:
        if self.market not in MARKETS:
            raise PriceBookError(f"market {self.market!r} is not one of {', '.join(MARKETS)}")
        if self.origin not in ORIGINS:
            raise PriceBookError(f"price origin {self.origin!r} is not one of {', '.join(ORIGINS)}")
        if self.usd_per_hour is not None and not (self.usd_per_hour > 0 and self.usd_per_hour < 1e6):
            raise PriceBookError(f"{self.instance_type}: {self.usd_per_hour!r} USD/hour is not a price "
                                 "(it must be above 0)")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> PriceEntry:
        return cls(**{key: data.get(key) for key in cls.__dataclass_fields__})


@dataclass(frozen=True)
class InstanceSpec:
    """What an instance type has (from the same snapshot): shown next to prices and in reports."""

    instance_type: str
    vcpus: int | None = None
    memory_gib: float | None = None
    accelerator_name: str = ""
    accelerator_count: int | float = 0  # a fraction for fractional-GPU types (g6f)
    accelerator_memory_gib: float | None = None
    neuron_cores: int = 0


@dataclass(frozen=True)
class Price:
    """The answer to "what does this type cost per hour here?", with where the figure came from."""

    instance_type: str | None
    region: str | None
    market: str
    usd_per_hour: float | None
    source: str = ""
    date: str | None = None
    origin: str | None = None
    note: str = ""  # why the price is missing, or an assumption made (region guessed)
    assumed_region: bool = field(default=False)

    @property
    def date_label(self) -> str:
        """The date to print: the source's date, or an honest "snapshot date unknown"."""
        if self.date:
            return self.date
        return SNAPSHOT_DATE_UNKNOWN if self.origin == "snapshot" else "date unknown"

    @property
    def source_label(self) -> str:
        """``source (date)``, e.g. "skypilot-org/skypilot-catalog … @00148f2a (snapshot date unknown)"."""
        if not self.source:
            return "no source"
        return f"{self.source} ({self.date_label})"

    def to_dict(self) -> dict:
        data = asdict(self)
        data["date_label"] = self.date_label
        return data


def _number(text: str, column: str, line: int, kind=float):
    text = (text or "").strip()
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        raise PriceBookError(f"price book line {line}: {column} {text!r} is not a number") from None


def _count(value: float | None) -> int | float:
    """An accelerator count: whole for most types, a fraction of a GPU for a few (g6f.large has 1/8 of an L4)."""
    if not value:
        return 0
    return int(value) if value == int(value) else value


def price_source_of(source_column: str) -> str:
    """The part of the snapshot's ``source`` column that the *price* comes from.

    The column reads "<price catalog>; accelerator memory/neuron cores: <docs>"; a
    price shown with the whole string would cite the Neuron docs for a dollar figure.
    """
    return source_column.split(";", 1)[0].strip()


def parse_snapshot_csv(text: str) -> tuple[list[PriceEntry], list[InstanceSpec]]:
    """Entries and instance specs from the shipped ``aws-instances.csv`` (its README names each column).

    A blank price cell becomes an entry with ``usd_per_hour=None``: the source
    lists the type there but publishes no price (trn2.48xlarge on-demand).
    """
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in _SNAPSHOT_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise PriceBookError(f"price book CSV lacks column(s) {', '.join(missing)}")
    entries: list[PriceEntry] = []
    specs: dict[str, InstanceSpec] = {}
    for line, row in enumerate(reader, start=2):
        itype, region = row["instance_type"].strip(), row["region"].strip()
        if not itype or not region:
            raise PriceBookError(f"price book line {line}: instance_type and region are required")
        source = price_source_of(row["source"])
        date = row["source_date"].strip() or None
        for market, column in (("on_demand", "on_demand_usd_per_hour"), ("spot", "spot_usd_per_hour")):
            entries.append(PriceEntry(itype, region, market, _number(row[column], column, line), source, date,
                                      "snapshot"))
        specs.setdefault(itype, InstanceSpec(
            itype, _number(row["vcpus"], "vcpus", line, int), _number(row["memory_gib"], "memory_gib", line),
            row["accelerator_name"].strip(), _count(_number(row["accelerator_count"], "accelerator_count", line)),
            _number(row["accelerator_memory_gib"], "accelerator_memory_gib", line),
            _number(row["neuron_cores"], "neuron_cores", line, int) or 0))
    return entries, list(specs.values())


def parse_usd_per_hour(text: str) -> float:
    """What a user typed after ``prices set TYPE``: "0.7582" or "$0.7582"; never 0 or negative."""
    cleaned = text.strip().lstrip("$").strip()
    try:
        value = float(cleaned)
    except ValueError:
        raise PriceBookError(f"{quoted(text, 60)} is not a price in USD per hour (e.g. 0.7582)") from None
    if not value > 0 or value != value or value >= 1e6:
        raise PriceBookError(f"{quoted(text, 60)} is not a price in USD per hour: it must be above 0")
    return value


class PriceBook:
    """Layered price lookup.  Build with ``PriceBook(snapshot, refreshed, user, specs)``."""

    def __init__(self, snapshot: Iterable[PriceEntry] = (), refreshed: Iterable[PriceEntry] = (),
                 user: Iterable[PriceEntry] = (), specs: Iterable[InstanceSpec] = ()) -> None:
        # Highest precedence first.
        self.layers: list[tuple[str, dict[tuple[str, str, str], PriceEntry]]] = []
        for origin, entries in (("user", user), ("aws-api", refreshed), ("snapshot", snapshot)):
            table = {(e.instance_type, e.region, e.market): e for e in entries}
            self.layers.append((origin, table))
        self.specs = {s.instance_type: s for s in specs}

    # -- queries -------------------------------------------------------------------------------
    def instance_types(self) -> list[str]:
        return sorted({key[0] for _, table in self.layers for key in table}, key=_type_sort_key)

    def regions_of(self, instance_type: str) -> list[str]:
        return sorted({key[1] for _, table in self.layers for key in table
                       if key[0] == instance_type and key[1] != ANY_REGION})

    def spec(self, instance_type: str | None) -> InstanceSpec | None:
        return self.specs.get(instance_type or "")

    def entry(self, instance_type: str, region: str, market: str = "on_demand") -> PriceEntry | None:
        """The winning entry for exactly this region (a user price for any region counts too)."""
        for origin, table in self.layers:
            hit = table.get((instance_type, region, market))
            if hit is None and origin == "user":
                hit = table.get((instance_type, ANY_REGION, market))
            if hit is not None:
                return hit
        return None

    def price(self, instance_type: str | None, region: str | None = None, market: str = "on_demand") -> Price:
        """The hourly price to use, or a Price whose ``usd_per_hour`` is None and whose note says why."""
        if market not in MARKETS:
            raise PriceBookError(f"market {market!r} is not one of {', '.join(MARKETS)}")
        if not instance_type:
            return Price(None, region, market, None, note="instance type unknown: declare it to price this run "
                         "(`neuronbench runs set RUN --instance-type T`, or History's \"Declare instance type…\"; "
                         "for later runs, on the host: `neuronbench hosts add NAME --instance-type T`)")
        assumed = False
        note = ""
        if not region:
            listed = self.regions_of(instance_type)
            region = DEFAULT_REGION if DEFAULT_REGION in listed or not listed else listed[0]
            assumed = True
            note = f"region unknown: priced as {region}"
        hit = self.entry(instance_type, region, market)
        if hit is None:
            listed = self.regions_of(instance_type)
            if listed or self.entry(instance_type, ANY_REGION, market):
                where = f" (listed in {', '.join(listed)})" if listed else ""
                why = f"{instance_type} has no {market_label(market)} price in {region}{where}"
            else:
                why = (f"{instance_type} is not in the price book: set one with "
                       f"`neuronbench prices set {instance_type} USD_PER_HOUR`")
            return Price(instance_type, region, market, None, note=_join(note, why), assumed_region=assumed)
        if hit.usd_per_hour is None:
            why = f"no public {market_label(market)} price for {instance_type} in {region} (per {hit.source})"
            return Price(instance_type, region, market, None, hit.source, hit.date, hit.origin,
                         _join(note, why), assumed)
        return Price(instance_type, region, market, hit.usd_per_hour, hit.source, hit.date, hit.origin, note,
                     assumed)

    def rows(self, region: str | None = None) -> list[dict]:
        """One row per (type, region) with both markets, for ``prices list``."""
        keys = sorted({(k[0], k[1]) for _, table in self.layers for k in table if k[1] != ANY_REGION},
                      key=lambda k: (_type_sort_key(k[0]), k[1]))
        user_any = {k[0] for k in self.layers[0][1] if k[1] == ANY_REGION}
        if region:
            keys = [k for k in keys if k[1] == region]
            keys += [(t, region) for t in sorted(user_any) if (t, region) not in keys]
        out = []
        for itype, reg in keys:
            row: dict = {"instance_type": itype, "region": reg}
            for market in MARKETS:
                price = self.price(itype, reg, market)
                row[market] = {"usd_per_hour": price.usd_per_hour, "source": price.source,
                               "date": price.date_label if price.source else None, "origin": price.origin,
                               "note": price.note}
            spec = self.spec(itype)
            row["spec"] = asdict(spec) if spec else None
            out.append(row)
        return out


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _type_sort_key(instance_type: str) -> tuple:
    """trn1.2xlarge before trn1.32xlarge: family, then size as a number."""
    family, _, size = instance_type.partition(".")
    digits = "".join(ch for ch in size if ch.isdigit())
    return (family, int(digits) if digits else 1 if size == "xlarge" else 0, size)


def merge_entries(existing: Sequence[PriceEntry], new: Sequence[PriceEntry]) -> list[PriceEntry]:
    """``existing`` with every (type, region, market) that ``new`` names replaced by ``new``'s entry."""
    replaced = {(e.instance_type, e.region, e.market) for e in new}
    return [e for e in existing if (e.instance_type, e.region, e.market) not in replaced] + list(new)
