#!/usr/bin/env python3
"""Troupe on gpu:0 next to PyTorch CUDA, per training step, on bench/model_compare.py's models.

  python3 bench/gpu/model_steps.py --build BUILD_OR_BUNDLE_BIN [--models resnet20,resnet50,...]
      [--text '/usr/share/games/fortunes/*.u8'] [--steps 200]

Models and batches: resnet20 b128 (synthetic 28x28x1, 10 classes), resnet50 b32 and b128
(synthetic 224x224x3, 1000 classes), transformer_lm b12 (character LM on --text, 64 per row).
Troupe: `troupe train --set train.device=gpu` with one replica, the mean step time of the
progress windows after the first (tracing and warm-up). PyTorch: the same model definitions as
bench/model_compare_steps.py, Adam, cudnn.benchmark on, timed between two synchronisations after
warm-up, in float32 with TF32 off (Troupe computes in exact FP32) and with bf16 autocast (Troupe
refuses mixed precision on the GPU so far). A Troupe run that fails prints its last error line.
Measured on an H100 (2026-11-26): resnet20 18.4 vs 7.6 ms, resnet50 b32 121 vs 42 ms, b128 out of
memory in Troupe vs 133 ms, transformer_lm 7.5 vs 7.4 ms; on another H100 (2026-11-27): resnet20
19.1 vs 11.2 ms, resnet50 b32 121 vs 40.7 ms, transformer_lm 5.0 vs 9.5 ms; on an H200
(2026-11-27): resnet20 16.2 vs 8.8 ms, resnet50 b32 114 vs 38.8 ms, b128 365 vs 125 ms (it fits in
139 GiB), transformer_lm 6.9 vs 7.0 ms.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from model_compare_steps import TORCH_STEP  # noqa: E402

R50 = ["data.source=synthetic", "data.features.image.shape=[224,224,3]", "data.num_classes=1000"]
# name: (model, batch, troupe --set overrides, classes or None for the text's vocabulary)
CASES = {
    "resnet20": ("resnet20", 128, ["data.source=synthetic", "data.features.image.shape=[28,28,1]",
                                   "data.num_classes=10"], 10),
    "resnet50": ("resnet50", 32, R50, 1000),
    "resnet50_b128": ("resnet50", 128, R50, 1000),
    "transformer_lm": ("transformer_lm", 12, ["data.source=text", "data.sequence_length=64"],
                       None),
}


def troupe_step_ms(build, model, batch, sets, steps, device="gpu"):
    window = max(1, steps // 8)
    with tempfile.TemporaryDirectory() as run:
        cmd = [os.path.join(build, "troupe"), "train",
               os.path.join(ROOT, "examples", "fashion_lenet.toml")]
        if "data.source=synthetic" in sets:
            sets = sets + ["data.synthetic_examples=%d" % (batch * (steps + window))]
        for s in sets + ["job.run_dir=" + run, "model.name=" + model, "train.device=" + device,
                         "train.replicas_per_process=1", "train.global_batch_size=%d" % batch,
                         "train.max_steps=%d" % (steps + window), "train.log_every=%d" % window,
                         "checkpoint.every_steps=0", "train.epochs=100"]:
            cmd += ["--set", s]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        with open(os.path.join(run, "metrics.jsonl")) as f:
            lines = [json.loads(x) for x in f if x.strip()]
        rates = [x["examples_per_sec"] for x in lines if x.get("split") == "train"][1:]
    return sum(1000.0 * batch / r for r in rates) / len(rates), ""


_SCOPE = {}


def torch_models(classes):
    """The model classes of bench/model_compare_steps.py, building `classes` outputs (they read
    it from their globals). Its preamble sets torch's thread counts, which torch allows once per
    process, so it runs once."""
    if not _SCOPE:
        sys.argv = ["x", "1", "1", "1", "1", str(classes), "resnet20"]
        exec(TORCH_STEP.split('if name == "resnet20":')[0], _SCOPE)
    _SCOPE["classes"] = classes
    return _SCOPE


def torch_step_ms(model, batch, classes, precision, steps):
    import torch
    import torch.nn.functional as F
    scope = torch_models(classes)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = "cuda"
    if model == "transformer_lm":
        net = scope["Gpt"]().to(dev)
        x = torch.randint(0, classes, (batch, 64), device=dev)
        y = torch.randint(0, classes, (batch, 64), device=dev)
    else:
        net = (scope["ResNet20"] if model == "resnet20" else scope["ResNet50"])().to(dev)
        shape = (batch, 1, 28, 28) if model == "resnet20" else (batch, 3, 224, 224)
        x = torch.rand(*shape, device=dev)
        y = torch.randint(0, classes, (batch,), device=dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            out = net(x)
        F.cross_entropy(out.float().reshape(-1, classes), y.reshape(-1)).backward()
        opt.step()

    for _ in range(15):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return 1000 * (time.perf_counter() - start) / steps


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True, help="folder holding the troupe binary")
    p.add_argument("--models", default="resnet20,resnet50,resnet50_b128,transformer_lm")
    p.add_argument("--text", default="/usr/share/games/fortunes/*.u8",
                   help="text files (a glob) for transformer_lm")
    p.add_argument("--steps", type=int, default=100)
    args = p.parse_args()
    import torch
    print("# %s, torch %s, cuDNN %s" % (torch.cuda.get_device_name(0), torch.__version__,
                                        torch.backends.cudnn.version()))
    print("%-15s %5s %11s %11s %11s %13s" % ("model", "batch", "troupe ms", "torch ms",
                                              "torch bf16", "troupe/torch"))
    texts = sorted(glob.glob(args.text))
    for name in args.models.split(","):
        model, batch, sets, classes = CASES[name]
        steps = args.steps if model != "resnet50" else max(10, args.steps // 5)
        if classes is None:
            if not texts:
                print("%-15s skipped: no files match --text %s" % (name, args.text))
                continue
            classes = len(set(b"".join(open(f, "rb").read() for f in texts)))
            sets = sets + ["data.files=" + args.text]
        ms, error = troupe_step_ms(args.build, model, batch, sets, steps)
        fp32 = torch_step_ms(model, batch, classes, "fp32", steps)
        bf16 = torch_step_ms(model, batch, classes, "bf16", steps)
        ratio = "%.2f" % (ms / fp32) if ms else "-"
        print("%-15s %5d %11s %11.2f %11.2f %13s" % (name, batch, "%.2f" % ms if ms else "failed",
                                                      fp32, bf16, ratio), flush=True)
        if error:
            print("    troupe: " + error[:300])


if __name__ == "__main__":
    main()
