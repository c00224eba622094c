"""A causal LM that runs out of memory from batch ``limit`` up, as a GPU does when the KV cache outgrows it
(this machine has no GPU to fill): torch's own OutOfMemoryError, with the allocator's words."""
import torch
import transformers


class OutgrowsMemory(transformers.LlamaForCausalLM):
    limit = 4

    def generate(self, input_ids=None, **kwargs):
        if input_ids.shape[0] >= self.limit:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                                         "capacity of 22.05 GiB of which 1.12 GiB is free.")
        return super().generate(input_ids=input_ids, **kwargs)


def build(batch_size, seq_len=8):
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    ids = torch.randint(0, 64, (batch_size, seq_len))
    return {"model": OutgrowsMemory(config), "inputs": {"input_ids": ids, "attention_mask": torch.ones_like(ids)}}
