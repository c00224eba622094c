"""A causal LM whose own generate() ends every call after two new tokens, whatever it is asked (a stop rule
baked into a user's model): the run must fail, never report the fast, false figures."""
import torch
import transformers


class StopsEarly(transformers.LlamaForCausalLM):
    def generate(self, *args, **kwargs):
        kwargs["max_new_tokens"] = kwargs["min_new_tokens"] = 2
        return super().generate(*args, **kwargs)


def build(batch_size, seq_len=8):
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    ids = torch.randint(0, 64, (batch_size, seq_len))
    return {"model": StopsEarly(config), "inputs": {"input_ids": ids, "attention_mask": torch.ones_like(ids)}}
