"""A model whose trace is wrong: its forward branches on the data, and a trace keeps only the branch the
example took.  The numerical check must flag it (fresh inputs take the other branch)."""
import torch


class Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.linear(x)
        if bool(x.mean() > 0):  # data-dependent control flow: a tracer records one branch only
            return y * 2.0
        return -y


def build(batch_size):
    torch.manual_seed(0)
    example = torch.full((batch_size, 8), 5.0)
    example[:, 0] = -30.0  # mean 0.625 > 0 at any batch size: the trace records "y * 2" ... but the values
    # range from -30 to 5, so fresh inputs drawn within that range (mean about -12) take "-y"
    return {"model": Branchy(), "inputs": (example,)}
