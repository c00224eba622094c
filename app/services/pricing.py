"""Reading and writing the price book's files.

* the shipped snapshot: ``resources/pricing/aws-instances.csv`` (read-only);
* the user's file: ``<data>/prices.json`` holding prices set with ``prices set``
  and prices fetched by ``prices refresh``, each dated.

Writes are read-modify-write under an exclusive lock and land with an atomic
rename, so two ``neuronbench`` processes never lose each other's prices and a
crash never leaves half a file.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from app.core.errors import NeuronBenchError
from app.core.pricebook import (
    ANY_REGION,
    REGION_NAME,
    TYPE_NAME,
    InstanceSpec,
    PriceBook,
    PriceBookError,
    PriceEntry,
    merge_entries,
    parse_snapshot_csv,
)
from app.core.quoting import quoted
from app.paths import AppPaths, resources_dir

try:  # POSIX; on Windows the rename alone keeps the file whole.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

PRICES_SCHEMA = "neuronbench.prices/1"
SNAPSHOT_NAME = "aws-instances.csv"


def snapshot_path() -> Path:
    return resources_dir() / "pricing" / SNAPSHOT_NAME


def today() -> str:
    return _dt.date.today().isoformat()


def _read_user_file(path: Path) -> tuple[list[PriceEntry], list[PriceEntry]]:
    if not path.exists():
        return [], []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != PRICES_SCHEMA:
            raise PriceBookError(f"schema is {data.get('schema')!r}, expected {PRICES_SCHEMA!r}")
        user = [PriceEntry.from_dict(item) for item in data.get("user", [])]
        refreshed = [PriceEntry.from_dict(item) for item in data.get("refreshed", [])]
    except (ValueError, TypeError, AttributeError) as exc:
        raise NeuronBenchError(f"the price file {path} is damaged ({exc}): fix it or delete it to start "
                               "again from the shipped prices") from None
    return user, refreshed


# The shipped snapshot as parsed, keyed by its path, size and mtime: 30,000 rows cost ~0.14 CPU-s to parse, and
# the app loads the book for every view that prices (History, Compare, the form, each export).  Its entries
# are frozen dataclasses, so every PriceBook may share them.
_PARSED: dict[tuple[str, int, int], tuple[list[PriceEntry], list[InstanceSpec]]] = {}


def _parsed_snapshot(csv_path: Path) -> tuple[list[PriceEntry], list[InstanceSpec]]:
    stat = csv_path.stat()
    key = (str(csv_path), stat.st_size, stat.st_mtime_ns)
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = parse_snapshot_csv(csv_path.read_text(encoding="utf-8"))
        _PARSED.clear()  # one snapshot at a time: a changed file replaces the old one
        _PARSED[key] = parsed
    return parsed


def load_pricebook(paths: AppPaths | None, snapshot: Path | None = None) -> PriceBook:
    """The shipped snapshot plus (when ``paths`` is given) the user's and refreshed prices."""
    csv_path = snapshot or snapshot_path()
    try:
        entries, specs = _parsed_snapshot(csv_path)
    except OSError as exc:
        raise NeuronBenchError(f"the shipped price book {csv_path} cannot be read: {exc.strerror}") from None
    except PriceBookError as exc:
        raise NeuronBenchError(f"the shipped price book {csv_path} is malformed: {exc}") from None
    user, refreshed = _read_user_file(paths.prices_file) if paths else ([], [])
    return PriceBook(snapshot=entries, refreshed=refreshed, user=user, specs=specs)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a+") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _update(paths: AppPaths, change) -> None:
    """Apply ``change(user, refreshed) -> (user, refreshed)`` to the user's price file, atomically."""
    path = paths.prices_file
    with _locked(path):
        user, refreshed = _read_user_file(path)
        user, refreshed = change(user, refreshed)
        body = {"schema": PRICES_SCHEMA, "user": [e.to_dict() for e in user],
                "refreshed": [e.to_dict() for e in refreshed]}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".prices-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(body, handle, indent=1, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def user_source(note: str | None = None) -> str:
    """The source shown beside a price the user set: "set by you", with their note when they gave one."""
    note = " ".join((note or "").split())
    return f"set by you: {note}" if note else "set by you"


def set_user_price(paths: AppPaths, instance_type: str, usd_per_hour: float, region: str | None = None,
                   market: str = "on_demand", date: str | None = None, note: str | None = None) -> PriceEntry:
    """Record the user's own price (a discount, an RI rate); it wins over every other source.

    ``note`` (e.g. "1-year RI") travels with the price as part of its source, so every
    table and report that shows the price says what it is.
    """
    instance_type = instance_type.strip()
    if not TYPE_NAME.match(instance_type):  # shown in every table and report: a name, not any text
        raise PriceBookError(f"{quoted(instance_type, 60)} is not an instance type (e.g. inf2.xlarge: letters, "
                             f"digits and . _ - :, at most 64)")
    region = (region or "").strip() or None
    if region is not None and not REGION_NAME.match(region):
        raise PriceBookError(f"{quoted(region, 60)} is not a region (e.g. us-east-1)")
    entry = PriceEntry(instance_type, region or ANY_REGION, market, usd_per_hour, user_source(note),
                       date or today(), "user")
    _update(paths, lambda user, refreshed: (merge_entries(user, [entry]), refreshed))
    return entry


def unset_user_price(paths: AppPaths, instance_type: str, region: str | None = None,
                     market: str | None = None) -> int:
    """Remove the user's prices for a type (one region or all, one market or both); returns how many."""
    removed = 0

    def change(user, refreshed):
        nonlocal removed
        keep = [e for e in user if not (e.instance_type == instance_type
                                        and (region is None or e.region == region)
                                        and (market is None or e.market == market))]
        removed = len(user) - len(keep)
        return keep, refreshed

    _update(paths, change)
    return removed


def save_refreshed(paths: AppPaths, entries: Sequence[PriceEntry]) -> None:
    """Keep prices fetched from AWS (they replace earlier fetches of the same type/region/market)."""
    _update(paths, lambda user, refreshed: (user, merge_entries(refreshed, list(entries))))
