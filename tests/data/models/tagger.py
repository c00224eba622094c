"""A user's own text model: dict inputs by name, outputs a dict that carries its own loss."""
import torch


class Tagger(torch.nn.Module):
    def __init__(self, vocab: int, width: int, tags: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.mix = torch.nn.Linear(width, width)
        self.head = torch.nn.Linear(width, tags)

    def forward(self, tokens, mask, tags=None):
        hidden = torch.tanh(self.mix(self.embed(tokens))) * mask.unsqueeze(-1)
        logits = self.head(hidden)
        out = {"logits": logits}
        if tags is not None:
            out["loss"] = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tags.flatten())
        return out


def make_model(batch_size, seq_len=12, vocab=100, width=24, tags=5, with_tags=True):
    model = Tagger(vocab, width, tags)
    tokens = torch.randint(0, vocab, (batch_size, seq_len))
    inputs = {"tokens": tokens, "mask": torch.ones(batch_size, seq_len)}
    if with_tags:  # for training: the model computes its loss from them (serving leaves them out)
        inputs["tags"] = torch.randint(0, tags, (batch_size, seq_len))
    return {"model": model, "inputs": inputs, "tokens_per_sample": seq_len}
