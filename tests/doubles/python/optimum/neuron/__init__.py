"""Test stand-in for optimum-neuron's ``NeuronModelForCausalLM`` (0.0.28 API) on machines without Neuron.

It lives under tests/ only (tests/doubles/python on PYTHONPATH).  The product's real optimum-neuron path
(remote_agent/backends/optimum_neuron.py) runs against it end to end.  It keeps the real class's rules,
the ones a benchmark can trip over (research/llm-generation.md §2):

- ``from_pretrained(path, export=True, batch_size=, sequence_length=, num_cores=, auto_cast_type=)`` compiles
  for that one static shape (here: loads the transformers model and records the shape); ``save_pretrained``
  writes the compiled model, ``from_pretrained(path, export=False)`` loads it with its shape.  Exporting
  without a batch size or sequence length is refused, as neuron export needs static shapes.
- ``generate`` refuses a batch larger than the compiled one and a prompt + ``max_new_tokens`` past the
  compiled sequence length (the real messages), and refuses left padding.
- Sampling is on the device: logits processors do not run, so ``min_new_tokens`` is ignored (an EOS that is
  set ends a row early); stopping criteria are called once per step.  Only token ids come back.

Every export and load is appended to ``NEURONBENCH_FAKE_OPTIMUM_LOG`` (if set), one JSON object a line.
The stand-in ends where the device begins: it computes on the CPU and compiles nothing.
"""
import json
import os

__version__ = "0.0.28+testdouble"
_SHAPE_FILE = "neuron_shape.json"


def _record(**event):
    path = os.environ.get("NEURONBENCH_FAKE_OPTIMUM_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")


class NeuronModelForCausalLM:
    def __init__(self, model, batch_size, sequence_length, num_cores, auto_cast_type):
        self.model = model
        self.config = model.config
        self.generation_config = model.generation_config
        self.batch_size, self.max_length = batch_size, sequence_length
        self.num_cores, self.auto_cast_type = num_cores, auto_cast_type

    @classmethod
    def from_pretrained(cls, model_id, export=False, batch_size=None, sequence_length=None, num_cores=None,
                        auto_cast_type=None, **kwargs):
        import transformers

        if kwargs.get("tensor_parallel_size") is not None:
            raise TypeError("from_pretrained() got an unexpected keyword argument 'tensor_parallel_size' "
                            "(optimum-neuron 0.0.28 names it num_cores)")
        if export:
            if batch_size is None or sequence_length is None:
                raise ValueError("neuron export needs static shapes: batch_size and sequence_length")
            shape = {"batch_size": int(batch_size), "sequence_length": int(sequence_length),
                     "num_cores": int(num_cores or 1), "auto_cast_type": auto_cast_type or "fp32"}
        else:
            shape_file = os.path.join(str(model_id), _SHAPE_FILE)
            if not os.path.exists(shape_file):
                raise ValueError(f"{model_id} is not a neuron model: export it first (export=True)")
            with open(shape_file) as handle:
                shape = json.load(handle)
        model = transformers.AutoModelForCausalLM.from_pretrained(str(model_id)).eval()
        _record(call="from_pretrained", export=bool(export), **shape)
        return cls(model, shape["batch_size"], shape["sequence_length"], shape["num_cores"], shape["auto_cast_type"])

    def save_pretrained(self, path):
        self.model.save_pretrained(path)
        with open(os.path.join(path, _SHAPE_FILE), "w") as handle:
            json.dump({"batch_size": self.batch_size, "sequence_length": self.max_length,
                       "num_cores": self.num_cores, "auto_cast_type": self.auto_cast_type}, handle)

    def can_generate(self):
        return True

    def generate(self, input_ids, attention_mask=None, stopping_criteria=None, generation_config=None, **kwargs):
        import torch

        batch_size, sequence_length = input_ids.shape
        if batch_size > self.batch_size:
            raise ValueError(f"The specified batch_size ({batch_size}) exceeds the model static batch size "
                             f"({self.batch_size})")
        config = generation_config or self.generation_config
        max_new = kwargs.get("max_new_tokens", getattr(config, "max_new_tokens", None)) or 20
        if sequence_length + max_new > self.max_length:
            raise ValueError(f"The current sequence length ({sequence_length + max_new}) exceeds the model static "
                             f"sequence length ({self.max_length})")
        if attention_mask is not None and bool((attention_mask[:, 0] == 0).any()):
            raise ValueError("Neuron decoder models do not support left padding")
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
