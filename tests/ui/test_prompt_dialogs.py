"""DialogPrompts: a worker thread's question becomes a dialog on the UI thread; the answer goes back to it."""
from __future__ import annotations

import threading

from PySide6.QtCore import Qt

from app.services.ssh_prompts import FROM_PYPI, FROM_WHEEL, InstallOffer


def ask_on_a_thread(fn, *args) -> tuple[threading.Thread, list]:
    answers: list = []
    thread = threading.Thread(target=lambda: answers.append(fn(*args)), name="connect-test")
    thread.start()
    return thread, answers


def test_the_timm_offer_lists_the_choices_and_returns_the_one_clicked(make_window, qtbot):
    window = make_window()
    offer = InstallOffer("trn1", "/opt/venv/bin/python3", "timm", (FROM_PYPI, FROM_WHEEL), "timm: models",
                         "timm 1.0.31 goes into ~/.cache/neuronbench/site")
    thread, answers = ask_on_a_thread(window.prompts.offer_install, offer)
    qtbot.waitUntil(lambda: window.prompts.dialog is not None and window.prompts.dialog.isVisible())
    box = window.prompts.dialog
    assert box.text().startswith("The Python NeuronBench uses on trn1 (/opt/venv/bin/python3) has no timm")
    assert [b.text() for b in box.buttons()] == ["Install from PyPI on the host",
                                                 "Upload the timm wheel NeuronBench carries", "Leave it"]
    assert box.defaultButton() is box.leave_button  # nothing is installed by pressing Enter
    qtbot.mouseClick(box.choice_buttons[FROM_WHEEL], Qt.MouseButton.LeftButton)
    thread.join(10)
    assert answers == [FROM_WHEEL]


def test_the_transformers_offer_names_it_and_what_needs_it_and_leaving_it_answers_none(make_window, qtbot):
    window = make_window()
    offer = InstallOffer("g5 <b>", "/usr/bin/python3", "transformers", (FROM_PYPI,), "hf: models",
                         "transformers 4.56.2 and the packages it needs that the host lacks go into "
                         "~/.cache/neuronbench/site, for the agent only, from PyPI; the host needs internet")
    thread, answers = ask_on_a_thread(window.prompts.offer_install, offer)
    qtbot.waitUntil(lambda: window.prompts.dialog is not None and window.prompts.dialog.isVisible())
    box = window.prompts.dialog
    assert box.windowTitle() == "transformers is missing on g5 <b>"
    assert box.text() == ("The Python NeuronBench uses on g5 <b> (/usr/bin/python3) has no transformers, which "
                          "hf: models need.")
    assert "the host needs internet" in box.informativeText()
    assert [b.text() for b in box.buttons()] == ["Install from PyPI on the host", "Leave it"]
    qtbot.mouseClick(box.leave_button, Qt.MouseButton.LeftButton)
    thread.join(10)
    assert answers == [None]


def test_the_optimum_neuron_offer_says_what_needs_it_and_where_it_goes(make_window, qtbot, tmp_path):
    from app.services.host_libraries import install_offer
    from tests.services.test_optimum_neuron_offer import VENV_PYTHON, setup

    window = make_window()
    offer = install_offer(setup(), "inf2", "optimum-neuron", tmp_path)
    thread, answers = ask_on_a_thread(window.prompts.offer_install, offer)
    qtbot.waitUntil(lambda: window.prompts.dialog is not None and window.prompts.dialog.isVisible())
    box = window.prompts.dialog
    assert box.text() == (f"The Python NeuronBench uses on inf2 ({VENV_PYTHON}) has no optimum-neuron, which "
                          f"generate runs on backend neuron (Neuron SDK 2.31 or older) need.")
    assert "https://pip.repos.neuron.amazonaws.com" in box.informativeText()
    assert "the venv is not changed" in box.informativeText()
    qtbot.mouseClick(box.choice_buttons[FROM_PYPI], Qt.MouseButton.LeftButton)
    thread.join(10)
    assert answers == [FROM_PYPI]


def test_closing_the_window_answers_a_waiting_question_with_no(make_window, qtbot):
    window = make_window()
    thread, answers = ask_on_a_thread(window.prompts.confirm_host_key, "trn1 (10.0.0.1)", "ssh-ed25519",
                                      "SHA256:abc")
    qtbot.waitUntil(lambda: window.prompts.dialog is not None and window.prompts.dialog.isVisible())
    window.close()
    thread.join(10)
    assert answers == [False] and not thread.is_alive()
    # and later questions (a host still connecting) are not asked at all
    thread, answers = ask_on_a_thread(window.prompts.ask_passphrase, "/home/u/.ssh/id_ed25519")
    thread.join(10)
    assert answers == [None]
