"""The seed article's training loop, bare: no agent, no events, no telemetry.

Shaped like the script in *DL training on AWS Inferentia* (timm ViT, random
FakeDataset, DataLoader workers, Adam, cross-entropy), and timed the way the
agent times (end of step to end of step, waiting for the loss) with the same
compile accounting, so that ``overhead.py`` compares like with like.  Prints
``{"times": [...], "compiled": [step numbers]}`` as JSON.

    python bench/seed_loop.py --model vit_small_patch16_224 --batch-size 8 --steps 30 --backend cpu
"""
from __future__ import annotations

import argparse
import json
import os
import time

import timm
import torch


class FakeDataset(torch.utils.data.Dataset):
    def __init__(self, length, shape, num_classes):
        self.length, self.shape, self.num_classes = length, shape, num_classes

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        return torch.randn(self.shape, dtype=torch.float32), torch.tensor(index % self.num_classes)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="vit_base_patch16_224")
    parser.add_argument("--model-args", default="{}", help="JSON kwargs for timm.create_model")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--backend", choices=("cpu", "xla"), default="cpu")
    parser.add_argument("--stamps", action="store_true",
                        help="print [[wall-clock end, step time], ...] instead (telemetry_overhead.py)")
    args = parser.parse_args()
    model_args = json.loads(args.model_args)

    if args.backend == "xla":
        os.environ.setdefault("PJRT_DEVICE", "CPU")
        import torch_xla
        import torch_xla.core.xla_model as xm
        import torch_xla.debug.metrics as met

        device = torch_xla.device()
    else:
        device = torch.device("cpu")
    torch.manual_seed(0)
    model = timm.create_model(args.model, pretrained=False, **model_args)
    size = model_args.get("img_size") or model.pretrained_cfg["input_size"][1]
    loader = torch.utils.data.DataLoader(FakeDataset(args.steps * args.batch_size, (3, size, size),
                                                     model.num_classes),
                                         batch_size=args.batch_size, num_workers=args.workers, drop_last=True)
    model = model.to(device).train()
    optimizer = torch.optim.Adam(model.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    times, ends, compiled = [], [], []
    compiles = 0
    end = time.perf_counter()
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        if args.backend == "xla":
            xm.optimizer_step(optimizer)
            torch_xla.sync()
        else:
            optimizer.step()
        loss.item()
        now = time.perf_counter()
        times.append(now - end)
        ends.append(time.time())
        end = now
        if args.backend == "xla":  # the same compile accounting as the agent: did CompileTime count up?
            count = (met.metric_data("CompileTime") or (0,))[0]
            if count > compiles:
                compiled.append(len(times))
            compiles = count
    if args.stamps:
        print(json.dumps([list(pair) for pair in zip(ends, times, strict=True)]))
    else:
        print(json.dumps({"times": times, "compiled": compiled}))


if __name__ == "__main__":
    main()
