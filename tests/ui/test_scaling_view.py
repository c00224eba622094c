"""Compare shows how a training scales with machines: a real 1-node run and a real 2-node run (two agents on this
computer with homes of their own, torchrun's rendezvous over loopback) in a real run store, priced as trn1.32xlarge."""
from __future__ import annotations

import pytest

from app.core.presets import TINY_VIT_ARGS
from app.paths import AppPaths
from app.services.cluster_run import ClusterRun, NodeTarget
from app.services.pricing import load_pricebook
from app.services.recorder import RunRecorder, run_recorded
from app.services.store import RunStore
from app.services.transport import LocalTransport
from app.ui.views.compare_view import COLUMNS, CompareView
from remote_agent.protocol import RunSpec
from tests.ui.views_helpers import bridge, show  # noqa: F401

pytestmark = pytest.mark.slow
SPEC = dict(workload="train", model="vit_tiny_patch16_224", model_args=dict(TINY_VIT_ARGS), backend="cpu",
            workers=0, batch_sizes=(4,), steps=16, warmup=3)


@pytest.fixture
def scaled_runs(tmp_path):
    paths = AppPaths.resolve(tmp_path / "data")
    other = AppPaths.resolve(tmp_path / "node-b")
    book = load_pricebook(paths)
    with RunStore(paths.runs_db) as store:
        one = run_recorded(LocalTransport(paths, host="trn-a"), RunSpec(**SPEC), store, book,
                           declared_type="trn1.32xlarge", declared_region="us-east-1")
        spec = RunSpec(**SPEC, nnodes=2)
        cluster = ClusterRun([NodeTarget(LocalTransport(paths, host="trn-a"), "127.0.0.1"),
                              NodeTarget(LocalTransport(other, host="trn-b"), "127.0.0.1")], spec)
        recorder = RunRecorder.start(store, book, cluster.host, spec, cluster.run_id,
                                     declared_type="trn1.32xlarge", declared_region="us-east-1")
        cluster.on_event = recorder
        two = recorder.finish(cluster.run())
    assert one["status"] == two["status"] == "ok", (one.get("error"), two.get("error"))
    return paths, one, two


def test_runs_on_one_and_two_nodes_show_speed_up_efficiency_and_a_scaling_chart(scaled_runs, bridge, show,  # noqa: F811
                                                                                 qtbot):
    paths, one, two = scaled_runs
    view = show(CompareView(paths, bridge), (1400, 900))
    with qtbot.waitSignal(view.computed, timeout=30_000):
        view.set_runs([one["run_id"], two["run_id"]])
    t1, t2 = one["train"]["throughput_samples_per_s"], two["train"]["throughput_samples_per_s"]
    efficiency = t2 / (2 * t1)
    assert f"From 1 to 2 nodes of trn1.32xlarge, vit_tiny_patch16_224 trains {t2 / t1:.2f}× as fast " \
           f"(weak-scaling efficiency {efficiency * 100:.0f}%" in view.summary.text()
    assert view.scaling_plot.isVisible()
    x, y = view.scaling_curves["trn1.32xlarge"].getOriginalDataset()
    assert list(x) == [1.0, 2.0] and list(y) == pytest.approx([t1, t2])
    hosts = [view.table.item(row, 1).text() for row in range(view.table.rowCount())]
    assert hosts == ["trn1.32xlarge", "2 × trn1.32xlarge"]
    # Two machines cost twice the hourly price.
    prices = [view.table.item(row, COLUMNS.index("$/h")).text() for row in range(view.table.rowCount())]
    assert prices == ["$21.50", "$43.00"] or prices == ["$21.5", "$43"]
