"""A model that computes something else on an accelerator than on the CPU (it asks which device it is on):
the training check's reference, eager on the CPU, must disagree with the first step's loss on XLA."""
import torch


class DeviceDependent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.linear(x)
        return y if x.device.type == "cpu" else y * 3.0


def build(batch_size):
    def loss(outputs, inputs):
        return outputs.pow(2).mean()

    return {"model": DeviceDependent(), "inputs": (torch.randn(batch_size, 8),), "loss": loss}
