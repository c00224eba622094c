"""A user's own model file, as the README's contract describes: two inputs as a tuple, its own loss."""
import torch


class TwoTower(torch.nn.Module):
    def __init__(self, features: int, hidden: int):
        super().__init__()
        self.left = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 8))
        self.right = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 8))

    def forward(self, query, document):
        return (self.left(query) * self.right(document)).sum(dim=-1)


def build(batch_size, features=16, hidden=32):
    model = TwoTower(features, hidden)
    inputs = (torch.randn(batch_size, features), torch.randn(batch_size, features))

    def loss(score, inputs):
        return torch.nn.functional.softplus(-score).mean()

    return {"model": model, "inputs": inputs, "loss": loss}
