"""A tiny model for the runs a test stops or cuts midway: cancel, Ctrl-C, a dropped connection, a killed node.

Each forward first sleeps ``pace_s`` seconds, so a step lasts about that long and costs almost no CPU.  A run
that trains until the test stops it then leaves the CPUs to the rest of the suite (the tiny ViT trains flat
out meanwhile: a whole CPU per process for as long as the test waits), and how many steps a test sees in a
given time no longer depends on how fast or how busy the machine is.  It is a plain ``file:`` model otherwise
(docs/model.md): no timm or torchvision to import in every workload process, random inputs, a real loss.
"""
import time

import torch


class Paced(torch.nn.Module):
    def __init__(self, pace_s: float, width: int):
        super().__init__()
        self.pace_s = pace_s
        self.net = torch.nn.Sequential(torch.nn.Linear(8, width), torch.nn.ReLU(), torch.nn.Linear(width, 4))

    def forward(self, x):
        if self.pace_s > 0 and x.device.type != "meta":  # the FLOP count on the meta device need not wait
            time.sleep(self.pace_s)
        return self.net(x)


def build(batch_size, pace_s=0.05, width=16):
    return {"model": Paced(float(pace_s), int(width)), "inputs": (torch.randn(batch_size, 8),),
            "loss": lambda outputs, inputs: outputs.float().pow(2).mean()}
