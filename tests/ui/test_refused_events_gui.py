"""The live view of a host whose agent sends lines protocol v1 refuses: the run goes on, the view says so."""
from __future__ import annotations

from tests.ui.conftest import recorded, replay_transport
from tests.ui.test_live_views import ReplayHosts, run_to_the_end


def test_refused_events_are_logged_counted_and_in_the_result(make_window, qtbot):
    events = recorded("train-cpu-tiny.events.jsonl")
    probe_at = next(i for i, e in enumerate(events) if e["type"] == "probe")
    bad = [dict(events[probe_at], env=1.5),                                 # a float where the probe's env is
           {"v": 1, "type": ["log"], "level": "info", "message": "x"},     # a list as the type
           {"v": 1, "type": "log", "level": "warning", "message": "\x1b[2J\x07<b>bold</b>\u202eevil"}]
    stream = events[:probe_at] + bad + events[probe_at + 1:]
    provider = ReplayHosts(box=replay_transport(stream))
    window = make_window(provider=provider)
    window.sidebar.set_checked("box", True)
    (view,) = run_to_the_end(window, qtbot)

    assert view.state.status == "ok" and view.state.progress.step == 40  # every step after the bad lines
    log = view.log.text()
    assert "refused an event from box: probe event #" in log and "env must be an object, got 1.5" in log
    assert "unknown event type ['log']" in log
    # The host's text is shown, never obeyed: no escape sequence, bell or direction override reaches the pane.
    assert "\\x1b[2J\\x07<b>bold</b>\\u202eevil" in log and "\x1b" not in log and "\u202e" not in log
    assert "<b>2</b> events refused" in view.figures.text()
    assert "refused     2 event(s) from the agent" in view.result_text.toPlainText()
