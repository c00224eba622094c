"""Refused events: said without flooding, counted in the Result, summed over a multi-node run's nodes."""
from __future__ import annotations

from app.core.cluster import NodeOutcome, merge_results, plan_nodes
from app.core.refused_events import RefusedEvents


def test_the_first_refusals_are_said_with_their_reason_then_only_every_tenth_power():
    refused = RefusedEvents()
    said = []
    for n in range(1, 1001):
        refused.add(f"step event #{n}: dt_s is nan, not a number")
        said.append(refused.sentence("trn1"))
    lines = [s for s in said if s]
    assert lines[0] == "refused an event from trn1: step event #1: dt_s is nan, not a number (the run goes on; " \
                       "1 refused so far)"
    assert len(lines) == 6 and lines[3:] == [f"{n:,} events from trn1 refused so far (the run goes on; the Result "
                                             f"counts them)" for n in (10, 100, 1000)]
    assert refused.to_dict() == {"count": 1000, "reasons": [f"step event #{n}: dt_s is nan, not a number"
                                                            for n in range(1, 6)]}


def test_a_hosts_text_in_a_reason_is_escaped_and_shortened():
    refused = RefusedEvents()
    refused.add("log event #3: \x1b]0;owned\x07" + "x" * 1000)
    assert "\x1b" not in refused.sentence("h\x1b[2J") and "\\x1b[2J" in refused.sentence("h\x1b[2J")
    assert len(refused.reasons[0]) < 400


def test_a_multi_node_result_counts_every_nodes_refusals():
    nodes = plan_nodes("20261124-000000-abcdef", ["trn-a", "trn-b"])
    ok = {"status": "ok", "workload": "train", "train": {"world_size": 2}, "warnings": []}
    outcomes = [NodeOutcome(nodes[0], result=dict(ok, events_refused={"count": 2, "reasons": ["a1", "a2"]})),
                NodeOutcome(nodes[1], result=dict(ok, events_refused={"count": 1, "reasons": ["b1"]}))]
    merged = merge_results("20261124-000000-abcdef", {"workload": "train", "nproc": 1}, outcomes, False, None, "")
    assert merged["events_refused"] == {"count": 3, "reasons": ["trn-a: a1", "trn-a: a2", "trn-b: b1"]}
    clean = merge_results("r", {"workload": "train"}, [NodeOutcome(n, result=dict(ok)) for n in nodes], False,
                          None, "")
    assert "events_refused" not in clean
