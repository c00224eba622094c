"""The window remembers its layout, the last workload and the ticked hosts (in the settings file it is given)."""
from __future__ import annotations

from tests.ui.conftest import open_settings


def test_layout_workload_and_hosts_survive_a_restart(make_window, settings_file):
    first = make_window(settings=open_settings(settings_file))
    form = first.workload
    form.workload.setCurrentIndex(form.workload.findData("infer"))
    form.model.setText("resnet50")
    form.batch_sizes.setText("1,10")
    form.duration.setValue(12.5)
    form.backend.setCurrentText("cpu")
    first.resize(777, 555)  # inside the offscreen screen (800x800): restoring clamps to it
    first.splitter.setSizes([380, 397])
    first.sidebar.set_checked("local", False)
    first.close()
    assert not first.isVisible()

    second = make_window(settings=open_settings(settings_file))
    form = second.workload
    assert form.current_workload() == "infer"
    assert form.model.text() == "resnet50" and form.batch_sizes.text() == "1,10"
    assert form.duration.value() == 12.5 and form.backend.currentText() == "cpu"
    assert form.spec().batch_sizes == (1, 10)
    assert (second.width(), second.height()) == (777, 555)
    assert second.splitter.sizes()[0] == 380
    assert second.sidebar.checked() == [] and not second.run_button.isEnabled()


def test_a_half_typed_workload_comes_back_as_typed_with_its_message(make_window, settings_file):
    first = make_window(settings=open_settings(settings_file))
    first.workload.batch_sizes.setText("8,")
    first.close()
    second = make_window(settings=open_settings(settings_file))
    assert second.workload.batch_sizes.text() == "8,"
    assert "is not a whole number" in second.workload.message.text()
    assert not second.run_button.isEnabled()


def test_a_damaged_settings_file_starts_a_new_users_window(make_window, settings_file):
    settings_file.write_text("[workload]\nlast=\"{not json\n[hosts]\nchecked=42\n")
    window = make_window(settings=open_settings(settings_file))
    assert window.workload.preset.currentData() == "quickstart"
    assert [h.name for h in window.sidebar.checked()] == ["local"]
