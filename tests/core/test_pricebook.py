"""The shipped price book and the layered lookup (user > refreshed > snapshot)."""
from __future__ import annotations

import pytest

from app.core.pricebook import (
    ANY_REGION,
    PriceBook,
    PriceBookError,
    PriceEntry,
    parse_snapshot_csv,
    parse_usd_per_hour,
)
from app.paths import resources_dir
from tests.conftest import DATA

SHIPPED = resources_dir() / "pricing" / "aws-instances.csv"
FIXTURE = DATA / "pricing" / "aws-instances.csv"


@pytest.fixture(scope="module")
def snapshot():
    return parse_snapshot_csv(SHIPPED.read_text())


def test_the_shipped_price_book_holds_the_documented_snapshot_unchanged():
    # The fixture's 70 rows are checked against AWS's published prices (its README); the shipped book,
    # rebuilt from extracts of the same catalog commit, must give every one of them the same figures.
    shipped = {(r.split(",")[0], r.split(",")[1]): r for r in SHIPPED.read_text().splitlines()[1:]}
    fixture = FIXTURE.read_text().splitlines()[1:]
    assert len(fixture) == 70
    for row in fixture:
        assert shipped[(row.split(",")[0], row.split(",")[1])] == row


def test_every_row_is_read_with_both_markets_and_the_instance_specs(snapshot):
    entries, specs = snapshot
    assert len(entries) == 2 * len(SHIPPED.read_text().splitlines()[1:])
    inf2 = next(s for s in specs if s.instance_type == "inf2.xlarge")
    assert (inf2.vcpus, inf2.memory_gib, inf2.accelerator_count, inf2.accelerator_memory_gib, inf2.neuron_cores) \
        == (4, 16.0, 1, 32.0, 2)
    assert all(e.origin == "snapshot" and e.date is None for e in entries)
    # The price's source is the catalog, not the Neuron docs that supplied the core counts.
    assert {e.source for e in entries} == {"skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv @00148f2a"}


def test_the_hosts_users_bring_are_priced_beyond_the_three_us_regions(snapshot):
    # The instance types users asked about, in a European region the first snapshot lacked.
    book = PriceBook(snapshot=snapshot[0], specs=snapshot[1])
    for itype in ("g4dn.xlarge", "c7i.xlarge", "m5.2xlarge", "inf2.xlarge", "g5.xlarge", "p4d.24xlarge",
                  "c5n.18xlarge", "r6id.large", "t4g.micro", "x2idn.32xlarge"):
        assert book.price(itype, "eu-west-1").usd_per_hour > 0, itype
    assert book.price("g4dn.xlarge", "eu-west-1").usd_per_hour == 0.587
    assert len(book.regions_of("m5.xlarge")) >= 20
    assert book.spec("g4dn.xlarge").accelerator_name == "T4"
    # A fractional GPU is a fraction, not a parse error (g6f.large has an eighth of an L4).
    assert book.spec("g6f.large").accelerator_count == 0.125 and book.spec("g6f.large").accelerator_name == "L4"
    # trn2.3xlarge is in the catalog in one region, with a spot price and no public on-demand price.
    assert book.regions_of("trn2.3xlarge") == ["ap-southeast-4"]
    assert book.price("trn2.3xlarge", "ap-southeast-4").usd_per_hour is None
    assert book.price("trn2.3xlarge", "ap-southeast-4", "spot").usd_per_hour > 0


def test_the_articles_prices_are_found_with_source_and_an_honest_date(snapshot):
    entries, specs = snapshot
    book = PriceBook(snapshot=entries, specs=specs)
    price = book.price("inf2.xlarge", "us-east-1")
    assert price.usd_per_hour == 0.7582 and price.origin == "snapshot"
    assert price.source_label.endswith("@00148f2a (snapshot date unknown)")
    assert book.price("inf1.xlarge", "us-west-2").usd_per_hour == 0.228
    assert book.price("trn1.2xlarge", "us-east-1").usd_per_hour == 1.34375
    assert book.price("inf2.xlarge", "us-east-1", "spot").usd_per_hour == 0.1152


def test_trn2_has_no_public_on_demand_price_and_it_is_never_zero(snapshot):
    book = PriceBook(snapshot=snapshot[0])
    price = book.price("trn2.48xlarge", "us-east-2")
    assert price.usd_per_hour is None
    assert "no public on-demand price for trn2.48xlarge in us-east-2" in price.note
    assert book.price("trn2.48xlarge", "us-east-2", "spot").usd_per_hour == 23.0631
    elsewhere = book.price("trn2.48xlarge", "us-west-2")
    assert elsewhere.usd_per_hour is None and "listed in us-east-2" in elsewhere.note
    # region unknown: priced where the type is listed, and the note says so
    guessed = book.price("trn2.48xlarge", None, "spot")
    assert guessed.region == "us-east-2" and guessed.assumed_region and "region unknown" in guessed.note


def test_an_unknown_type_says_how_to_set_a_price(snapshot):
    price = PriceBook(snapshot=snapshot[0]).price("trn9.xlarge", "us-east-1")
    assert price.usd_per_hour is None
    assert "neuronbench prices set trn9.xlarge USD_PER_HOUR" in price.note


def test_user_prices_win_over_refreshed_which_win_over_the_snapshot(snapshot):
    refreshed = [PriceEntry("inf2.xlarge", "us-east-1", "on_demand", 0.76, "AWS Price List API",
                            "2026-11-01T10:00:00Z", "aws-api")]
    user = [PriceEntry("inf2.xlarge", ANY_REGION, "on_demand", 0.5, "set by you", "2026-11-20", "user"),
            PriceEntry("inf2.xlarge", "us-west-2", "on_demand", 0.45, "set by you", "2026-11-21", "user")]
    book = PriceBook(snapshot=snapshot[0], refreshed=refreshed)
    assert book.price("inf2.xlarge", "us-east-1").usd_per_hour == 0.76
    assert book.price("inf2.xlarge", "us-east-1").date_label == "2026-11-01T10:00:00Z"
    book = PriceBook(snapshot=snapshot[0], refreshed=refreshed, user=user)
    mine = book.price("inf2.xlarge", "us-east-1")
    assert (mine.usd_per_hour, mine.origin, mine.date_label) == (0.5, "user", "2026-11-20")
    assert book.price("inf2.xlarge", "us-west-2").usd_per_hour == 0.45  # the region's own beats "any region"
    assert book.price("inf2.xlarge", "us-east-1", "spot").usd_per_hour == 0.1152  # other market untouched


def test_listing_rows_cover_both_markets(snapshot):
    book = PriceBook(snapshot=snapshot[0], specs=snapshot[1])
    rows = book.rows(region="us-east-2")
    # Every type the book prices in us-east-2, and only those.
    assert {r["instance_type"] for r in rows} == {s.instance_type for s in snapshot[1]
                                                  if "us-east-2" in book.regions_of(s.instance_type)}
    assert len(rows) > 24
    trn2 = next(r for r in rows if r["instance_type"] == "trn2.48xlarge")
    assert trn2["on_demand"]["usd_per_hour"] is None and trn2["spot"]["usd_per_hour"] == 23.0631
    assert trn2["spec"]["neuron_cores"] == 128
    names = [r["instance_type"] for r in rows]
    assert names.index("trn1.2xlarge") < names.index("trn1.32xlarge")


@pytest.mark.parametrize("text", ["0", "-1", "abc", "", "nan", "1e9"])
def test_a_typed_price_must_be_a_positive_number(text):
    with pytest.raises(PriceBookError):
        parse_usd_per_hour(text)


def test_a_typed_price_may_carry_a_dollar_sign():
    assert parse_usd_per_hour("$0.7582") == 0.7582


def test_a_malformed_csv_names_the_line():
    header = FIXTURE.read_text().splitlines()[0]
    with pytest.raises(PriceBookError, match="line 2: on_demand_usd_per_hour 'cheap'"):
        parse_snapshot_csv(header + "\ninf2.xlarge,us-east-1,4,16,Inferentia2,1,32,2,cheap,0.1,src,\n")
    with pytest.raises(PriceBookError, match="lacks column"):
        parse_snapshot_csv("instance_type,region\ninf2.xlarge,us-east-1\n")
