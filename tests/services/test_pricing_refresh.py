"""``prices refresh`` against botocore's Stubber: the documented request shapes, never a live call.

Every client is created with fake credentials and an endpoint on a closed
loopback port, so a request the Stubber did not expect fails at once on this
machine instead of reaching AWS.
"""
from __future__ import annotations

import datetime as dt
import json

import pytest

boto3 = pytest.importorskip("boto3")
from botocore.stub import ANY, Stubber  # noqa: E402

from app import cli  # noqa: E402
from app.core.errors import NeuronBenchError  # noqa: E402
from app.services import pricing_refresh  # noqa: E402
from app.services.pricing import load_pricebook  # noqa: E402
from tests.agent.imds_server import closed_port_url  # noqa: E402

NOW = dt.datetime(2026, 11, 22, 6, 0, tzinfo=dt.timezone.utc)


def _client(service: str, region: str):
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                                    region_name=region)
    return session.client(service, endpoint_url=closed_port_url())


def product(instance_type: str, usd: str, location: str = "US East (N. Virginia)") -> str:
    """One PriceList entry as the Price List API returns it (a JSON string), with a Reserved term to ignore."""
    sku = "ABCDEFGH12345678"
    return json.dumps({
        "product": {"productFamily": "Compute Instance", "sku": sku,
                    "attributes": {"instanceType": instance_type, "location": location, "regionCode": "us-east-1",
                                   "operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA",
                                   "capacitystatus": "Used", "operation": "RunInstances"}},
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {f"{sku}.JRTCKXETXF": {
                "offerTermCode": "JRTCKXETXF", "sku": sku, "effectiveDate": "2026-11-01T00:00:00Z",
                "termAttributes": {},
                "priceDimensions": {f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                    "unit": "Hrs", "beginRange": "0", "endRange": "Inf", "appliesTo": [],
                    "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                    "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                    "pricePerUnit": {"USD": usd}}}}},
            "Reserved": {f"{sku}.4NA7Y494T4": {
                "offerTermCode": "4NA7Y494T4", "sku": sku, "effectiveDate": "2026-11-01T00:00:00Z",
                "termAttributes": {"LeaseContractLength": "1yr", "PurchaseOption": "No Upfront"},
                "priceDimensions": {f"{sku}.4NA7Y494T4.6YS6EN2CT7": {
                    "unit": "Hrs", "pricePerUnit": {"USD": "0.3280000000"}, "appliesTo": [],
                    "beginRange": "0", "endRange": "Inf", "description": "RI", "rateCode": "x"}}}},
        },
        "version": "20261101000000", "publicationDate": "2026-11-01T00:00:00Z"})


def filters(instance_type: str, location: str) -> list[dict[str, str]]:
    """The README's filter set (tests/data/pricing/README.md §5)."""
    def tm(field, value):
        return {"Type": "TERM_MATCH", "Field": field, "Value": value}
    return [tm("instanceType", instance_type), tm("location", location), tm("operatingSystem", "Linux"),
            tm("tenancy", "Shared"), tm("preInstalledSw", "NA"), tm("capacitystatus", "Used")]


def spot(instance_type: str, zone: str, price: str, minutes_ago: int = 0) -> dict:
    return {"AvailabilityZone": zone, "InstanceType": instance_type, "ProductDescription": "Linux/UNIX",
            "SpotPrice": price, "Timestamp": NOW - dt.timedelta(minutes=minutes_ago)}


@pytest.fixture(scope="module")
def raw_clients():
    return _client("pricing", "us-east-1"), _client("ec2", "us-east-1")  # building the ec2 model takes a second


@pytest.fixture
def clients(raw_clients):
    pricing, ec2 = raw_clients
    with Stubber(pricing) as p_stub, Stubber(ec2) as e_stub:
        yield pricing, ec2, p_stub, e_stub
        p_stub.assert_no_pending_responses()
        e_stub.assert_no_pending_responses()


def test_on_demand_and_spot_prices_are_fetched_with_the_documented_requests(clients):
    pricing, ec2, p_stub, e_stub = clients
    # inf2.xlarge arrives over two pages (NextToken); trn2.48xlarge has no public on-demand price.
    p_stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": [], "NextToken": "page-2"},
                        {"ServiceCode": "AmazonEC2", "Filters": filters("inf2.xlarge", "US East (N. Virginia)"),
                         "FormatVersion": "aws_v1", "MaxResults": 100})
    p_stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": [product("inf2.xlarge", "0.7582")]},
                        {"ServiceCode": "AmazonEC2", "Filters": ANY, "FormatVersion": "aws_v1", "MaxResults": 100,
                         "NextToken": "page-2"})
    p_stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": []},
                        {"ServiceCode": "AmazonEC2", "Filters": filters("trn2.48xlarge", "US East (N. Virginia)"),
                         "FormatVersion": "aws_v1", "MaxResults": 100})
    e_stub.add_response("describe_spot_price_history", {"SpotPriceHistory": [
        spot("inf2.xlarge", "us-east-1a", "0.1300", minutes_ago=90),  # older record for the same zone
        spot("inf2.xlarge", "us-east-1a", "0.1200"),
        spot("inf2.xlarge", "us-east-1b", "0.1500"),
        spot("inf2.xlarge", "us-east-1-atl-2a", "0.0500"),  # a Local Zone: left out, as in the snapshot
    ]}, {"InstanceTypes": ["inf2.xlarge", "trn2.48xlarge"], "ProductDescriptions": ["Linux/UNIX"], "StartTime": NOW})

    outcome = pricing_refresh.refresh(["inf2.xlarge", "trn2.48xlarge"], ["us-east-1"], pricing=pricing,
                                      ec2_for=lambda region: ec2, now=NOW)
    got = {(e.instance_type, e.market): e for e in outcome.entries}
    assert outcome.problems == []
    assert got[("inf2.xlarge", "on_demand")].usd_per_hour == 0.7582  # the RI term is not the on-demand price
    assert got[("inf2.xlarge", "spot")].usd_per_hour == 0.12  # newest record, lowest standard zone
    assert got[("trn2.48xlarge", "on_demand")].usd_per_hour is None  # "no public price", not 0
    assert got[("trn2.48xlarge", "spot")].usd_per_hour is None
    assert all(e.date == "2026-11-22T06:00:00Z" and e.origin == "aws-api" for e in outcome.entries)


def test_a_region_outside_the_location_table_is_matched_by_region_code(clients):
    pricing, ec2, p_stub, e_stub = clients
    p_stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": []},
                        {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "MaxResults": 100,
                         "Filters": [f if f["Field"] != "location" else
                                     {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "ap-southeast-4"}
                                     for f in filters("inf2.xlarge", "x")]})
    e_stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []}, None)
    pricing_refresh.refresh(["inf2.xlarge"], ["ap-southeast-4"], pricing=pricing, ec2_for=lambda r: ec2, now=NOW)


def test_several_on_demand_prices_are_reported_not_guessed(clients):
    pricing, ec2, p_stub, e_stub = clients
    p_stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": [
        product("g5.xlarge", "1.0060000000"), product("g5.xlarge", "1.2000000000")]}, None)
    e_stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []}, None)
    outcome = pricing_refresh.refresh(["g5.xlarge"], ["us-east-1"], pricing=pricing, ec2_for=lambda r: ec2, now=NOW)
    assert [e.market for e in outcome.entries] == ["spot"]
    assert outcome.problems == ["g5.xlarge in us-east-1: the Price List API gave several on-demand prices "
                                "(1.006, 1.2); kept the earlier price"]


def test_a_refused_spot_lookup_is_reported_and_the_on_demand_prices_are_kept(clients):
    pricing, ec2, p_stub, e_stub = clients
    p_stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": [product("inf2.xlarge", "0.7582")]},
                        None)
    e_stub.add_client_error("describe_spot_price_history", service_error_code="UnauthorizedOperation",
                            service_message="You are not authorized to perform this operation.", http_status_code=403)
    outcome = pricing_refresh.refresh(["inf2.xlarge"], ["us-east-1"], pricing=pricing, ec2_for=lambda r: ec2, now=NOW)
    assert [(e.market, e.usd_per_hour) for e in outcome.entries] == [("on_demand", 0.7582)]
    [problem] = outcome.problems
    assert problem.startswith("AWS refused reading spot prices in us-east-1 (UnauthorizedOperation")
    assert "ec2:DescribeSpotPriceHistory" in problem


def test_a_refused_price_list_call_stops_with_one_sentence(clients):
    pricing, ec2, p_stub, _ = clients
    p_stub.add_client_error("get_products", service_error_code="AccessDeniedException",
                            service_message="User is not authorized to perform: pricing:GetProducts",
                            http_status_code=400)
    with pytest.raises(NeuronBenchError, match=r"AWS refused reading on-demand prices \(inf2.xlarge, us-east-1\)"):
        pricing_refresh.refresh(["inf2.xlarge"], ["us-east-1"], pricing=pricing, ec2_for=lambda r: ec2, now=NOW)


def test_a_bad_region_is_refused_before_any_call():
    with pytest.raises(NeuronBenchError, match="'US East' is not an AWS region code"):
        pricing_refresh.refresh(["inf2.xlarge"], ["US East"], pricing=object(), ec2_for=lambda r: None)


def test_refresh_through_the_cli_keeps_dated_prices_that_win_over_the_snapshot(clients, data_dir, monkeypatch,
                                                                                capsys):
    pricing, ec2, p_stub, e_stub = clients
    p_stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": [product("inf2.xlarge", "0.7700")]},
                        None)
    e_stub.add_response("describe_spot_price_history",
                        {"SpotPriceHistory": [spot("inf2.xlarge", "us-east-1c", "0.2000")]}, None)
    monkeypatch.setattr(pricing_refresh, "default_clients", lambda: (pricing, lambda region: ec2))
    code = cli.main(["prices", "refresh", "--region", "us-east-1", "--type", "inf2.xlarge", "--data-dir",
                     str(data_dir)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "fetched 1 on-demand and 1 spot prices for 1 type(s) in us-east-1" in out.out
    from app.paths import AppPaths

    price = load_pricebook(AppPaths.resolve(data_dir)).price("inf2.xlarge", "us-east-1")
    assert price.usd_per_hour == 0.77 and price.source.startswith("AWS Price List API")
    assert price.date_label.startswith(dt.date.today().isoformat()[:4])  # dated with the fetch time


def test_without_credentials_the_cli_says_what_to_configure(run_cli, cli_env, tmp_path):
    env = dict(cli_env)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        env.pop(key, None)
    env.update(AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_EC2_METADATA_DISABLED="true",  # never ask 169.254.169.254 for credentials
               AWS_ENDPOINT_URL=closed_port_url())
    out = run_cli("prices", "refresh", "--region", "us-east-1", "--type", "inf2.xlarge", env=env, timeout=60)
    assert out.code == 1
    assert "no AWS credentials found" in out.stderr and "pricing:GetProducts" in out.stderr
    assert "Traceback" not in out.stderr


def test_with_aws_unreachable_the_cli_fails_in_one_sentence(run_cli, cli_env, tmp_path):
    env = dict(cli_env, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_EC2_METADATA_DISABLED="true", AWS_ENDPOINT_URL=closed_port_url())
    out = run_cli("prices", "refresh", "--region", "us-east-1", "--type", "inf2.xlarge", env=env, timeout=60)
    assert out.code == 1
    assert "cannot reach AWS while reading on-demand prices (inf2.xlarge, us-east-1)" in out.stderr
    assert "Traceback" not in out.stderr
