"""Scaling across node counts in compare: throughput, speed-up and weak-scaling efficiency with intervals, and
the dollars per million samples at each node count (N machines' price)."""
from __future__ import annotations

import pytest

from app.core.compare import compare_runs
from tests.core.runs import book, train_run


def cluster_run(nodes: int, throughput: float, stdev: float, host: str, steps: int = 100):
    """A run of global batch 32 x nodes whose steps average what its throughput says (samples / wall time)."""
    run = train_run(host, "trn1.32xlarge", throughput, batch=16, nnodes=nodes)
    mean = 32 * nodes / throughput
    run.result["train"].update(nodes=nodes, global_batch=32 * nodes, steps_measured=steps,
                               step_time_s={"median": mean * 0.98, "mean": mean, "stdev": stdev,
                                            "ci95": [mean * 0.97, mean * 0.99]})
    return run


def mean_interval(batch: int, throughput: float, stdev: float, n: int = 100) -> list[float]:
    mean, half = batch / throughput, 1.96 * stdev / n ** 0.5
    return [batch / (mean + half), batch / (mean - half)]


def test_one_two_and_four_nodes_give_speed_up_efficiency_and_cost_per_node_count():
    one = cluster_run(1, 100.0, 0.02, "trn-a")
    two = cluster_run(2, 180.0, 0.03, "trn-a,trn-b")
    four = cluster_run(4, 300.0, 0.05, "trn-a,trn-b,trn-c,trn-d")
    doc = compare_runs([one, two, four], book())
    rows = {r["nodes"]: r for r in doc["scaling"]}
    assert sorted(rows) == [1, 2, 4]
    assert rows[1]["speedup"] == 1.0 and rows[1]["efficiency"] == 1.0
    assert rows[2]["speedup"] == pytest.approx(1.8) and rows[2]["efficiency"] == pytest.approx(0.9)
    assert rows[4]["efficiency"] == pytest.approx(300.0 / (4 * 100.0))
    # The intervals come from each run's steps (no repeats): the global batch over the mean step's interval,
    # which holds the throughput (samples over wall time = global batch over the mean step).
    one_ci, two_ci = mean_interval(32, 100.0, 0.02), mean_interval(64, 180.0, 0.03)
    assert rows[2]["throughput_ci95"] == pytest.approx(two_ci)
    for row in rows.values():
        assert row["throughput_ci95"][0] < row["throughput"] < row["throughput_ci95"][1]
    lo, hi = rows[2]["efficiency_ci95"]
    assert lo == pytest.approx(two_ci[0] / one_ci[1] / 2) and hi == pytest.approx(two_ci[1] / one_ci[0] / 2)
    assert lo < rows[2]["efficiency"] < hi and rows[2]["interval_from"] == "steps"
    # N machines cost N times the hourly price: $ per 1M samples per node count.
    per_node = rows[1]["usd_per_hour"]
    assert rows[4]["usd_per_hour"] == pytest.approx(4 * per_node)
    assert rows[4]["usd_per_1m"] == pytest.approx(4 * per_node / 3600 / 300.0 * 1e6)
    labels = {r["nodes"]: r["label"] for r in doc["rows"]}
    assert labels == {1: "trn1.32xlarge", 2: "2 × trn1.32xlarge", 4: "4 × trn1.32xlarge"}


def test_setups_measured_on_one_node_count_only_have_no_scaling_rows():
    doc = compare_runs([cluster_run(1, 100.0, 0.02, "a"), train_run("b", "g5.xlarge", 80.0)], book())
    assert doc["scaling"] == []


def test_the_summary_report_and_cli_say_how_it_scaled():
    from app.cli.runs_text import format_compare
    from app.core.decision import summary
    from app.reports.blocks import Chart, Table
    from app.reports.scaling_section import scaling_section as _scaling

    doc = compare_runs([cluster_run(1, 100.0, 0.02, "a"), cluster_run(2, 150.0, 0.03, "a,b")], book())
    sentence = next(s for s in summary(doc) if s.startswith("From 1 to 2 nodes"))
    assert "1.50× as fast (weak-scaling efficiency 75%, 95% interval" in sentence
    assert "per 1M samples on 1 node(s)" in sentence
    text = format_compare(doc, [])
    assert "scaling across nodes" in text and "75%" in text
    blocks = _scaling(doc)
    table = next(b for b in blocks if isinstance(b, Table))
    assert [row[1] for row in table.rows] == ["1", "2"] and table.rows[1][5].startswith("75% (")
    assert any(isinstance(b, Chart) and "ideal" in b.svg for b in blocks)


def test_multi_node_runs_refuse_ec2_hosts_and_neuron_types_without_efa_before_anything_starts():
    from app.core.cluster import declared_multinode_problem, launched_nodes_problem

    assert launched_nodes_problem([("trn-a", False), ("trn-b", False)]) is None
    assert launched_nodes_problem([("trn-a", False), ("spot", True)]).startswith(
        "spot is an --ec2 host, launched for one run on its own")
    assert declared_multinode_problem(2, "auto", ["trn1.32xlarge", "trn1.32xlarge"]) is None
    assert declared_multinode_problem(2, "neuron", ["trn1.2xlarge", ""]) == (
        "a 2-node Neuron run needs EFA between the nodes, which trn1.2xlarge does not have: use trn1.32xlarge, "
        "trn1n.32xlarge, trn2.48xlarge nodes, or run on one node")
    assert declared_multinode_problem(2, "auto", ["inf2.48xlarge"]).startswith("a 2-node Neuron run needs EFA")
    assert declared_multinode_problem(2, "cpu", ["inf2.48xlarge"]) is None  # a CPU run needs no EFA
