"""Test stand-in for optimum-neuron 0.4.5's ``NeuronModelForCausalLM`` on machines without Neuron.

It lives under tests/ only (tests/doubles/python on PYTHONPATH).  The product's optimum-neuron path
(remote_agent/backends/optimum_neuron.py) runs against it end to end.  Its signatures are the real ones,
checked against the published 0.4.5 wheel by tests/contracts/test_optimum_neuron_contract.py (read with ``ast``:
the real package imports torch_neuronx and neuronx_distributed, which need a Neuron device).  The rules it keeps are
0.4.5's, each from the file named (optimum/neuron/... in the wheel):

- Export is two calls (models/inference/modeling_utils.py): ``get_neuron_config(model, batch_size=,
  sequence_length=, tensor_parallel_size=, ...)`` makes the static shape (batch 1, the model's positions capped at
  4096 and every NeuronCore when not given; the dtype is the config's), then ``export(model, neuron_config,
  load_weights=False)`` compiles it.  ``save_pretrained`` writes ``neuron_config.json``, the config and, for a model
  exported from a folder, that folder's weights (backend/pretrained_model.py ``_save_pretrained``).
- ``from_pretrained(model_id, **kwargs)`` only loads an exported model: every keyword it does not know, ``export=True``
  and the shape included, is dropped with the warning "Ignoring the following kwargs as they are not supported by
  neuron", and a folder without ``neuron_config.json`` is an ``OSError`` (backend/pretrained_model.py
  ``_from_pretrained``; configuration_utils.py).  So the 0.0.x call ``from_pretrained(path, export=True, ...)``
  exports nothing.  Loading needs at least the compiled tensor parallel degree of NeuronCores.
- ``generate`` refuses a prompt longer than the compiled sequence length and a batch larger than the compiled one
  (the real messages), left padding, and logits/scores/``return_dict_in_generate``
  (backend/modules/generation/generation_utils.py).  Llama's neuron config samples on the device
  (``on_device_sampling=True``, models/inference/llama/modeling_llama.py): logits processors do not run, so
  ``min_new_tokens`` is ignored and an EOS that is set ends a row early; stopping criteria run once per step.
  Only token ids come back.

Where it ends: it computes on the CPU with the transformers model and compiles nothing; it reads local folders only
(the real one also takes hub ids); the compilation target is ``inf2`` unless ``NEURONBENCH_FAKE_NEURON_TARGET`` says
otherwise, and the NeuronCores are ``NEURONBENCH_FAKE_NEURON_CORES`` (default 2, an inf2.xlarge).  It also refuses
prompt + new tokens past the compiled length, which 0.4.5 does not check up front (no KV cache exists there).  Every
call is appended to ``NEURONBENCH_FAKE_OPTIMUM_LOG`` (if set), one JSON object a line.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # annotations only: the real ones' names, compared as text by the contract test
    from transformers import GenerationConfig, PretrainedConfig, StoppingCriteriaList

__version__ = "0.4.5+testdouble"
NEURON_CONFIG_NAME = "neuron_config.json"
logger = logging.getLogger(__name__)


def _record(**event):
    path = os.environ.get("NEURONBENCH_FAKE_OPTIMUM_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")


def _available_cores() -> int:
    return int(os.environ.get("NEURONBENCH_FAKE_NEURON_CORES") or 2)


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


class NeuronConfig:
    """A neuron model's static configuration, saved beside it as ``neuron_config.json`` (configuration_utils.py)."""

    def save_pretrained(
        self,
        save_directory: str | os.PathLike,
        config_file_name: str | os.PathLike | None = None,
        push_to_hub: bool = False,
        **kwargs,
    ):
        os.makedirs(save_directory, exist_ok=True)
        with open(os.path.join(save_directory, config_file_name or NEURON_CONFIG_NAME), "w") as handle:
            json.dump(dict(self.__dict__), handle)

    @classmethod
    def from_pretrained(
        cls,
        pretrained_model_name: str | os.PathLike,
        config_file_name: str | os.PathLike | None = None,
        token: str | bool | None = None,
        revision: str = "main",
    ) -> NeuronConfig:
        name = config_file_name or NEURON_CONFIG_NAME
        path = os.path.join(str(pretrained_model_name), name)
        if not os.path.isfile(path):
            # transformers' cached_file for a local folder that lacks the file
            raise OSError(f"{pretrained_model_name} does not appear to have a file named {name}. Checkout "
                          f"'https://huggingface.co/{pretrained_model_name}/tree/{revision}' for available files.")
        with open(path) as handle:
            data = json.load(handle)
        config = NxDNeuronConfig()  # the real one finds the class by the file's serialized key: NxD's, here
        config.__dict__.update(data)
        return config


class NxDNeuronConfig(NeuronConfig):
    """The static shape an export compiles for (backend/config.py); only what the stand-in reads is kept."""

    def __init__(
        self,
        checkpoint_id: str = None,  # noqa: RUF013 (the real signature, compared as text)
        checkpoint_revision: str = None,  # noqa: RUF013
        batch_size: int | None = 1,
        max_batch_size: int | None = None,
        continuous_batching: bool | None = False,
        speculation_length: int | None = 0,
        sequence_length: int | None = 128,
        tp_degree: int | None = 1,
        ep_degree: int | None = 1,
        pp_degree: int | None = 1,
        torch_dtype: str | torch.dtype | None = torch.bfloat16,
        n_active_tokens: int | None = None,
        max_context_length: int | None = None,
        output_logits: bool | None = False,
        fused_qkv: bool | None = False,
        target: str | None = None,
        on_device_sampling: bool | None = False,
        max_topk: int | None = 256,
        start_rank_id: int | None = 0,
        local_ranks_size: int | None = None,
        capacity_factor: float = None,  # noqa: RUF013
        glu_mlp: bool = True,
    ) -> None:
        self.checkpoint_id, self.checkpoint_revision = checkpoint_id, checkpoint_revision
        self.batch_size, self.sequence_length, self.tp_degree = batch_size, sequence_length, tp_degree
        self.torch_dtype = _dtype_name(torch_dtype)
        self.continuous_batching, self.target = continuous_batching, target
        self.on_device_sampling, self.fused_qkv, self.output_logits = on_device_sampling, fused_qkv, output_logits


class NeuronPreTrainedModel:
    """get_neuron_config, export, from_pretrained and save_pretrained (models/inference/modeling_utils.py)."""

    task: str | None = None

    def __init__(self, config, neuron_config: NxDNeuronConfig, model=None) -> None:
        self.config = config
        self.neuron_config = neuron_config
        self.model = model  # the transformers model with its weights, once they are loaded
        import transformers

        self.generation_config = (model.generation_config if model is not None
                                  else transformers.GenerationConfig.from_model_config(config))

    @classmethod
    def get_neuron_config(
        cls,
        model_name_or_path: str | Path,
        config: PretrainedConfig | None = None,
        token: bool | str | None = None,
        revision: str | None = None,
        instance_type: str | None = None,
        batch_size: int | None = None,
        sequence_length: int | None = None,
        tensor_parallel_size: int | None = None,
    ) -> NeuronConfig:
        import transformers

        if not os.path.isdir(model_name_or_path):
            raise OSError(f"the optimum-neuron stand-in reads local folders only, not the hub id {model_name_or_path}")
        if config is None:
            config = transformers.AutoConfig.from_pretrained(model_name_or_path).get_text_config()
        instance_type = instance_type or os.environ.get("NEURONBENCH_FAKE_NEURON_TARGET") or "inf2"
        if batch_size is None:
            batch_size = 1
        if sequence_length is None:
            sequence_length = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
            sequence_length = min(sequence_length or 1024, 4096)
        if tensor_parallel_size is None:
            tensor_parallel_size = _available_cores()
        dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
        if dtype is None:
            raise KeyError("None")  # DTYPE_MAPPER.pt(config.dtype): a config without a dtype has no mapping
        neuron_config = NxDNeuronConfig(checkpoint_id=None, checkpoint_revision=None, batch_size=batch_size,
                                        sequence_length=sequence_length, tp_degree=tensor_parallel_size,
                                        torch_dtype=dtype, target=instance_type, on_device_sampling=True,
                                        fused_qkv=True, continuous_batching=batch_size > 1)
        _record(call="get_neuron_config", batch_size=batch_size, sequence_length=sequence_length,
                tp_degree=tensor_parallel_size, torch_dtype=neuron_config.torch_dtype)
        return neuron_config

    @classmethod
    def export(
        cls,
        model_id: str,
        neuron_config: NeuronConfig,
        config: PretrainedConfig | None = None,
        token: bool | str | None = None,
        revision: str | None = None,
        load_weights: bool | None = False,
        **kwargs,
    ) -> NeuronPreTrainedModel:
        import transformers

        if kwargs:
            logger.warning("Ignoring the following kwargs as they are not supported by neuron: %s", kwargs.keys())
        if not isinstance(neuron_config, NxDNeuronConfig):
            raise TypeError(f"export() needs the NeuronConfig get_neuron_config() made, not {neuron_config!r}")
        if config is None:
            config = transformers.AutoConfig.from_pretrained(model_id).get_text_config()
        config.torch_dtype = neuron_config.torch_dtype
        model = transformers.AutoModelForCausalLM.from_pretrained(model_id).eval() if load_weights else None
        _record(call="export", batch_size=neuron_config.batch_size, sequence_length=neuron_config.sequence_length,
                tp_degree=neuron_config.tp_degree, torch_dtype=neuron_config.torch_dtype,
                load_weights=bool(load_weights))
        exported = cls(config, neuron_config, model)
        exported.checkpoint = str(model_id)
        return exported

    @classmethod
    def from_pretrained(
        cls,
        model_id: str | Path,
        **kwargs,
    ) -> NeuronPreTrainedModel:
        import transformers

        config = transformers.AutoConfig.from_pretrained(model_id, **kwargs)
        known = ("revision", "token", "cache_dir", "force_download", "local_files_only")
        ignored = {k: v for k, v in kwargs.items() if k not in known}
        if ignored:
            logger.warning("Ignoring the following kwargs as they are not supported by neuron: %s", ignored.keys())
        neuron_config = NxDNeuronConfig.from_pretrained(model_id)
        if _available_cores() < neuron_config.tp_degree:
            raise ValueError(f"The model requires at least {neuron_config.tp_degree} Neuron cores but only "
                             f"{_available_cores()} are available. Please use a compatible instance type.")
        model = transformers.AutoModelForCausalLM.from_pretrained(str(model_id)).eval()
        _record(call="from_pretrained", batch_size=neuron_config.batch_size,
                sequence_length=neuron_config.sequence_length, tp_degree=neuron_config.tp_degree,
                torch_dtype=neuron_config.torch_dtype)
        return cls(config, neuron_config, model)

    def save_pretrained(self, save_directory: str, **kwargs):
        import transformers

        os.makedirs(save_directory, exist_ok=True)
        checkpoint = getattr(self, "checkpoint", None)
        if self.model is not None:
            self.model.save_pretrained(save_directory)
        elif checkpoint and os.path.isdir(checkpoint):
            # _save_pretrained: a model exported from a folder saves that folder's weights beside the compiled one
            transformers.AutoModelForCausalLM.from_pretrained(checkpoint).save_pretrained(save_directory)
        self.neuron_config.save_pretrained(save_directory)
        self.config.save_pretrained(save_directory)



class NeuronModelForCausalLM(NeuronPreTrainedModel):
    task = "text-generation"

    def generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        generation_config: GenerationConfig | None = None,
        stopping_criteria: StoppingCriteriaList | None = None,
        **kwargs,
    ) -> torch.LongTensor:
        import torch

        batch_size, sequence_length = input_ids.shape
        static = self.neuron_config
        if sequence_length > static.sequence_length:
            raise ValueError(f"The input sequence length ({sequence_length}) exceeds the model static sequence "
                             f"length ({static.sequence_length})")
        if batch_size > static.batch_size:
            raise ValueError(f"The specified batch_size ({batch_size}) exceeds the model static batch size "
                             f"({static.batch_size})")
        if self.model is None:
            raise RuntimeError("this model was exported without its weights (load_weights=False): save it and load "
                               "it with from_pretrained")
        config = generation_config or self.generation_config
        if kwargs.get("output_logits", getattr(config, "output_logits", None)):
            raise ValueError("Output logits are not supported for neuron models")
        if kwargs.get("output_scores", getattr(config, "output_scores", None)):
            raise ValueError("Output scores are not supported for neuron models")
        if kwargs.get("return_dict_in_generate", getattr(config, "return_dict_in_generate", None)):
            raise ValueError("return_dict_in_generate is not supported for neuron models")
        if attention_mask is not None and bool((attention_mask[:, 0] == 0).any()):
            raise ValueError("Left padding is not supported for Neuron models.")
        max_new = kwargs.get("max_new_tokens", getattr(config, "max_new_tokens", None)) or 20
        if sequence_length + max_new > static.sequence_length:
            raise ValueError(f"{sequence_length} prompt tokens + {max_new} new tokens are past the model static "
                             f"sequence length ({static.sequence_length}): its KV cache has no room for them")
        eos = kwargs["eos_token_id"] if "eos_token_id" in kwargs else getattr(config, "eos_token_id", None)
        pad = kwargs.get("pad_token_id", getattr(config, "pad_token_id", None)) or 0
        # min_new_tokens is a logits processor's job: on-device sampling runs none, so it is not read here.
        ids = input_ids
        done = torch.zeros(batch_size, dtype=torch.bool)
        with torch.no_grad():
            for _ in range(max_new):
                logits = self.model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[:, -1, :]
                token = torch.where(done, torch.full_like(logits[:, 0], pad, dtype=torch.long), logits.argmax(-1))
                ids = torch.cat([ids, token[:, None]], dim=1)
                stop = torch.zeros(batch_size, dtype=torch.bool)
                for criterion in stopping_criteria or []:
                    stop = stop | criterion(ids, None)
                if eos is not None:
                    done = done | (token == eos)
                if bool((done | stop).all()):
                    break
        return ids
