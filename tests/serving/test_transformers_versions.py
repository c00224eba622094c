"""How the agent reads the host's transformers and optimum-neuron to build its calls (no server, no model).

The command line for `transformers serve` is parsed by the real CLI of this venv's transformers (5.x: typer), so a
flag it does not know fails here in its own words; 4.x's is run for real in tests/e2e/test_transformers_4_56.py.
"""
from __future__ import annotations

import sys
from importlib import metadata

import pytest

from remote_agent.serving.argv import ServeProblem, transformers_argv, transformers_serve


def test_this_venvs_transformers_5_serves_completions_and_its_own_cli_parses_the_command_line():
    found = transformers_serve()
    assert found == {"version": metadata.version("transformers"), "module": "transformers.cli.transformers",
                     "log_flag": "--log-level", "api": "completions"}
    argv = transformers_argv(sys.executable, 7000, "cpu", found)
    assert argv[:4] == [sys.executable, "-m", "transformers.cli.transformers", "serve"]
    from transformers.cli.transformers import app  # the typer app `transformers` runs

    serve = app.commands["serve"]
    params = serve.make_context("serve", argv[4:]).params  # parsed and type-checked, not run
    assert (params["host"], params["port"], params["device"], params["log_level"]) == ("127.0.0.1", 7000, "cpu",
                                                                                       "info")
    with pytest.raises(Exception, match="No such option '--log_level'"):  # 4.x's spelling: what 5.x refuses
        serve.make_context("serve", ["--log_level", "info"])


def test_a_transformers_without_its_serving_extra_is_one_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "fastapi", None)  # importlib.util.find_spec then finds nothing
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    with pytest.raises(ServeProblem) as caught:
        transformers_serve()
    version = metadata.version("transformers")
    assert str(caught.value) == (
        f"transformers serve needs transformers[serving], and fastapi, uvicorn of it are not installed for "
        f"{sys.executable} (transformers {version}): install it there with `python -m pip install "
        f'"transformers[serving]=={version}"`')


def test_the_export_keywords_follow_the_installed_get_neuron_config():
    """0.4.5 takes the dtype from the saved config; 0.4.0 still took ``auto_cast_type`` (its modeling_decoder.py)."""
    from remote_agent.backends.optimum_neuron import shape_kwargs
    from tests.contracts.test_optimum_neuron_contract import STAND_IN

    sys.path.insert(0, str(STAND_IN))
    try:
        from optimum.neuron import NeuronModelForCausalLM  # 0.4.5's signature (held to the wheel by the contract)
    finally:
        sys.path.pop(0)

    def get_neuron_config_0_4_0(model_name_or_path, config=None, token=None, revision=None, instance_type=None,
                                batch_size=None, sequence_length=None, tensor_parallel_size=None,
                                auto_cast_type=None):
        raise AssertionError("never called")

    assert shape_kwargs(NeuronModelForCausalLM.get_neuron_config, 2, 12, 2, "bf16") == {
        "batch_size": 2, "sequence_length": 12, "tensor_parallel_size": 2}
    assert shape_kwargs(get_neuron_config_0_4_0, 2, 12, 2, "bf16") == {
        "batch_size": 2, "sequence_length": 12, "tensor_parallel_size": 2, "auto_cast_type": "bf16"}
