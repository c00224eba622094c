"""``neuronbench prices list|set|unset`` and the user's price file, as a user drives them."""
from __future__ import annotations

import datetime as dt
import json
import threading

from app.core.pricebook import ANY_REGION
from app.services import pricing


def test_list_shows_every_price_with_its_source_and_an_honest_date(run_cli):
    out = run_cli("prices", "list", "--region", "us-east-2")
    assert out.code == 0, out.stderr
    assert "trn2.48xlarge" in out.stdout and "N/A (no public price)" in out.stdout
    assert "@00148f2a (snapshot date unknown)" in out.stdout
    listed = run_cli("prices", "list", "--type", "inf2.xlarge", "--json").json()["prices"]
    # Every commercial region that sells it, Europe and Asia too (the first snapshot had three US regions).
    assert {"us-east-1", "us-east-2", "us-west-2", "eu-west-1", "ap-northeast-1"} <= {r["region"] for r in listed}
    row = next(r for r in listed if r["region"] == "us-east-1")
    assert row["on_demand"]["usd_per_hour"] == 0.7582 and row["on_demand"]["date"] == "snapshot date unknown"
    assert row["spec"]["neuron_cores"] == 2


def test_a_price_set_by_the_user_wins_carries_its_date_and_can_be_removed(run_cli):
    out = run_cli("prices", "set", "inf2.xlarge", "0.50", "--json")
    assert out.code == 0, out.stderr
    assert out.json() == {"instance_type": "inf2.xlarge", "region": ANY_REGION, "market": "on_demand",
                          "usd_per_hour": 0.5, "source": "set by you", "date": dt.date.today().isoformat(),
                          "origin": "user"}
    assert run_cli("prices", "set", "inf2.xlarge", "0.09", "--spot", "--region", "us-west-2").code == 0
    rows = {r["region"]: r for r in run_cli("prices", "list", "--type", "inf2.xlarge", "--json").json()["prices"]}
    assert rows["us-east-1"]["on_demand"]["usd_per_hour"] == 0.5 and rows["us-east-1"]["on_demand"]["origin"] == "user"
    assert rows["us-west-2"]["spot"]["usd_per_hour"] == 0.09
    assert rows["us-east-1"]["spot"]["usd_per_hour"] == 0.1152  # the snapshot still prices the rest
    assert run_cli("prices", "unset", "inf2.xlarge").code == 0
    rows = {r["region"]: r for r in run_cli("prices", "list", "--type", "inf2.xlarge", "--json").json()["prices"]}
    assert rows["us-east-1"]["on_demand"]["usd_per_hour"] == 0.7582
    again = run_cli("prices", "unset", "inf2.xlarge")
    assert again.code == 2 and "you have set no price for inf2.xlarge" in again.stderr


def test_a_note_says_what_a_price_is_wherever_it_is_shown(run_cli):
    out = run_cli("prices", "set", "trn1.2xlarge", "0.95", "--note", "1-year  RI", "--region", "us-east-1")
    assert out.code == 0, out.stderr
    assert "trn1.2xlarge on-demand in us-east-1: $0.95/h (set by you: 1-year RI on " in out.stdout
    rows = {r["region"]: r for r in run_cli("prices", "list", "--type", "trn1.2xlarge", "--json").json()["prices"]}
    assert rows["us-east-1"]["on_demand"]["source"] == "set by you: 1-year RI"
    assert rows["us-east-2"]["on_demand"]["source"].startswith("skypilot-org")


def test_a_price_that_is_not_a_positive_number_is_refused_in_one_sentence(run_cli):
    for bad in ("0", "-3", "cheap"):
        out = run_cli("prices", "set", "inf2.xlarge", bad)
        assert out.code == 2
        assert out.stderr.count("\n") == 1 and "is not a price in USD per hour" in out.stderr


def test_a_damaged_price_file_is_named_with_what_to_do(run_cli, app_paths):
    app_paths.prices_file.write_text("{not json")
    out = run_cli("prices", "list")
    assert out.code == 1
    assert f"the price file {app_paths.prices_file} is damaged" in out.stderr and "delete it" in out.stderr


def test_concurrent_price_updates_do_not_lose_each_other(app_paths):
    types = [f"trn9.{n}xlarge" for n in range(8)]
    threads = [threading.Thread(target=pricing.set_user_price, args=(app_paths, t, 1.0 + i))
               for i, t in enumerate(types)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = json.loads(app_paths.prices_file.read_text())["user"]
    assert sorted(e["instance_type"] for e in stored) == sorted(types)
