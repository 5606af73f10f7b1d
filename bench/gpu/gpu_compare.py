#!/usr/bin/env python3
"""Troupe on the GPU next to PyTorch CUDA and nccl-tests, on the same GPU, in one run.

  python3 bench/gpu/gpu_compare.py --gpu-bench build/bench/gpu_bench \
      [--all-reduce-perf PATH/all_reduce_perf] [--steps 200]

Models (same layers, float32, Adam 1e-3, sparse softmax cross-entropy, batch as given):
  lenet:   LeNet-5 on 28x28x1 (conv5x5x6 SAME relu, avgpool, conv5x5x16 relu, avgpool,
           120 relu, 84 relu, 10), batch 64 and 512;
  convnet: 32x32x3, 2x conv3x3x32 relu, maxpool, 2x conv3x3x64 relu, maxpool, 256 relu, 10,
           batch 128.
PyTorch runs with TF32 off (Troupe computes in exact FP32), cudnn.benchmark on, and is timed
the same way: warm-up, then N steps between two device synchronisations. Troupe's "full" step
is what `troupe train` does for one GPU replica (weights and Adam slots on the GPU); "compute"
is forward+backward alone. Ratios are Troupe time / PyTorch time (lower is better).
NCCL: a one-rank allreduce through Troupe's NcclCommunicator vs all_reduce_perf -g 1 in place
(one GPU: bus bandwidth is zero by definition for one rank, so the time per call is compared;
it measures the fixed cost of a collective, not the interconnect).
"""
import argparse
import json
import re
import subprocess
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5, padding=2)
        self.c2 = nn.Conv2d(6, 16, 5)
        self.f1, self.f2, self.f3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = F.avg_pool2d(F.relu(self.c1(x)), 2)
        x = F.avg_pool2d(F.relu(self.c2(x)), 2)
        x = torch.flatten(x, 1)
        return self.f3(F.relu(self.f2(F.relu(self.f1(x)))))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 32, 3, padding=1)
        self.c3, self.c4 = nn.Conv2d(32, 64, 3, padding=1), nn.Conv2d(64, 64, 3, padding=1)
        self.f1, self.f2 = nn.Linear(8 * 8 * 64, 256), nn.Linear(256, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c2(F.relu(self.c1(x)))), 2)
        x = F.max_pool2d(F.relu(self.c4(F.relu(self.c3(x)))), 2)
        return self.f2(F.relu(self.f1(torch.flatten(x, 1))))


def torch_step_ms(model, shape, batch, steps):
    dev = torch.device("cuda:0")
    model = model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    x = torch.rand((batch,) + shape, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps * 1e3


def troupe(bin_path, *args):
    out = subprocess.run([bin_path, *map(str, args)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu-bench", required=True)
    ap.add_argument("--all-reduce-perf")
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}")
    print(f"{'model':8} {'batch':>5} {'torch ms':>9} {'troupe full':>12} {'troupe compute':>15}"
          f" {'full/torch':>11} {'compute/torch':>14}")
    for name, cls, shape, batch in [("lenet", LeNet, (1, 28, 28), 64),
                                    ("lenet", LeNet, (1, 28, 28), 512),
                                    ("convnet", ConvNet, (3, 32, 32), 128)]:
        torch.manual_seed(0)
        t = torch_step_ms(cls(), shape, batch, a.steps)
        r = troupe(a.gpu_bench, name, batch, a.steps)
        print(f"{name:8} {batch:5d} {t:9.3f} {r['full_step_ms']:12.3f} {r['compute_step_ms']:15.3f}"
              f" {r['full_step_ms'] / t:11.2f} {r['compute_step_ms'] / t:14.2f}")
    print(f"\n{'allreduce':>12} {'troupe us':>10} {'troupe GB/s':>12} {'nccl-tests us':>14}"
          f" {'nccl-tests GB/s':>16} {'ratio (time)':>13}")
    ref = {}
    if a.all_reduce_perf:
        out = subprocess.run([a.all_reduce_perf, "-b", "1M", "-e", "256M", "-f", "4", "-g", "1",
                              "-d", "float", "-o", "sum", "-n", "50", "-w", "5"],
                             check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) > 8 and re.fullmatch(r"\d+", f[0]):
                # in-place time (us) and algbw: one rank reduces in place, as Troupe does
                ref[int(f[0])] = (float(f[9]), float(f[10]))
    for size in [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]:
        r = troupe(a.gpu_bench, "allreduce", size, 50)
        us_ref, bw_ref = ref.get(size, (float("nan"), float("nan")))
        print(f"{size:12d} {r['us']:10.1f} {r['algbw_GBps']:12.1f} {us_ref:14.1f} {bw_ref:16.1f}"
              f" {r['us'] / us_ref:13.2f}")


if __name__ == "__main__":
    main()
