"""A model whose forward runs out of memory from batch ``limit`` up, as a GPU does when the activations of a
large batch outgrow it (this machine has no GPU to fill): torch's own OutOfMemoryError, with the allocator's
words, raised where the real one is (the forward), at every batch size that would not fit."""
import torch


class OutgrowsMemory(torch.nn.Module):
    limit = 4

    def __init__(self, features: int = 16):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(features, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))

    def forward(self, x):
        if x.shape[0] >= self.limit:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                                         "capacity of 22.05 GiB of which 1.12 GiB is free.")
        return self.body(x)


def build(batch_size, features=16):
    return {"model": OutgrowsMemory(features), "inputs": (torch.randn(batch_size, features),)}
