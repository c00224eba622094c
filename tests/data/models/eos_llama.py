"""A causal LM whose end-of-sequence token wins every step: without the fixed-length guard, generate()
would stop after one token.  Its generation config names that EOS, as a real checkpoint's does."""
import torch
import transformers

EOS = 7


def _eos_wins(module, inputs, logits):
    bump = torch.zeros(logits.shape[-1], dtype=logits.dtype, device=logits.device)
    bump[EOS] = 1000.0
    return logits + bump


def build(batch_size, seq_len=8):
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      eos_token_id=EOS, pad_token_id=0)
    model = transformers.LlamaForCausalLM(config)
    model.lm_head.register_forward_hook(_eos_wins)
    model.generation_config.eos_token_id = EOS
    ids = torch.randint(0, 64, (batch_size, seq_len))
    return {"model": model, "inputs": {"input_ids": ids, "attention_mask": torch.ones_like(ids)}}
