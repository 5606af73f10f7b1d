"""GPU replicas end to end (label gpu): `troupe train` with train.device = "gpu".
  - two GPU runs give bit-identical checkpoints, and a run stopped halfway and resumed matches;
  - the NCCL backend (one replica, one rank) gives the same bits as the host reduction;
  - two replicas sharing one GPU (replicas_per_gpu = 2) train;
  - one epoch on the GPU reaches the CPU's test accuracy (within 1 point);
  - running out of GPU memory is a clear error that leaves the checkpoints as they were;
  - a real fault inside a kernel (TROUPE_GPU_INJECT_FAULT) stops the job with exit 1 and an
    error naming the device, the illegal access and TROUPE_GPU_SYNC (with TROUPE_GPU_SYNC=1:
    the op), leaves the checkpoints as they were, and a plain resume then matches.
Exits 77 (reported as skipped) where no GPU is visible."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from train_common import BIN, CONFIG, ckpt_diff, settings, tmpdir, train  # noqa: E402

STEPS = int(os.environ.get("TROUPE_GPU_STEPS", "200"))
GPU = ["train.device=gpu", "checkpoint.every_steps=0"]
base = tmpdir()
try:
    probe = train(os.path.join(base, "probe"), 1, 1, extra=GPU, check=False)
    if probe.returncode != 0 and re.search(r"0 GPU\(s\) are visible|built without CUDA",
                                           probe.stderr + probe.stdout):
        print("no GPU visible: skipped\n" + probe.stderr)
        sys.exit(77)
    assert probe.returncode == 0, probe.stdout + probe.stderr

    a, b = os.path.join(base, "a"), os.path.join(base, "b")
    train(a, STEPS, 1, extra=GPU)
    train(b, STEPS, 1, extra=GPU)
    r = ckpt_diff(os.path.join(a, "checkpoints"), os.path.join(b, "checkpoints"))
    assert r.returncode == 0, "two GPU runs differ:\n" + r.stdout + r.stderr
    print("GPU run == GPU run after %d steps" % STEPS)

    d = os.path.join(base, "resumed")
    train(d, STEPS // 2, 1, extra=GPU)
    p = train(d, STEPS, 1, extra=GPU)
    assert "resuming from" in p.stdout, p.stdout
    r = ckpt_diff(os.path.join(a, "checkpoints"), os.path.join(d, "checkpoints"))
    assert r.returncode == 0, "resumed GPU run differs:\n" + r.stdout + r.stderr
    print("resumed GPU run == uninterrupted")

    n = os.path.join(base, "nccl")
    p = train(n, STEPS, 1, extra=GPU + ["collectives.backend=nccl"], check=False)
    if "built without NCCL" in p.stderr:
        print("NCCL not built: NCCL leg skipped")
    else:
        assert p.returncode == 0, p.stdout + p.stderr
        r = ckpt_diff(os.path.join(a, "checkpoints"), os.path.join(n, "checkpoints"))
        assert r.returncode == 0, "NCCL backend differs from host reduction:\n" + r.stdout + r.stderr
        print("NCCL backend == host reduction")

    # Out of GPU memory (capped at 1 MiB) while resuming: a clear error naming the device and
    # the op, exit 1, and the checkpoints stay exactly as they were.
    ckpts = os.path.join(a, "checkpoints")
    before = {f: open(os.path.join(ckpts, f), "rb").read() for f in sorted(os.listdir(ckpts))}
    env = dict(os.environ, TROUPE_GPU_MEMORY_LIMIT_MB="1")
    cmd = [BIN, "train", CONFIG] + settings(a, STEPS + 10, 1, GPU)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "out of memory" in p.stderr and "gpu:0" in p.stderr, p.stderr
    after = {f: open(os.path.join(ckpts, f), "rb").read() for f in sorted(os.listdir(ckpts))}
    assert before == after, "checkpoints changed after the out-of-memory failure"
    print("out of memory: " + p.stderr.strip().splitlines()[-1][:300])

    # A real CUDA fault inside a kernel while resuming: TROUPE_GPU_INJECT_FAULT queues a write
    # through an invalid pointer after the N-th Conv2DBackpropFilter (two per step), part-way
    # through. Exit 1 (not a signal, not a hang), an error naming the device, the illegal access
    # and TROUPE_GPU_SYNC=1 (which, set, names the op), the checkpoints exactly as they were,
    # and a plain resume afterwards gives the uninterrupted run's bits.
    def snapshot(d):
        files = {}
        for root, _, names in os.walk(d):
            for name in names:
                path = os.path.join(root, name)
                files[os.path.relpath(path, d)] = open(path, "rb").read()
        return files

    fdir = os.path.join(base, "fault")
    train(fdir, STEPS // 2, 1, extra=GPU)
    fckpts = os.path.join(fdir, "checkpoints")
    before = snapshot(fckpts)
    assert "checkpoint" in before, sorted(before)
    fault = "Conv2DBackpropFilter:%d" % max(1, STEPS // 4)
    for sync in (False, True):
        env = dict(os.environ, TROUPE_GPU_INJECT_FAULT=fault)
        env.pop("TROUPE_GPU_SYNC", None)
        if sync:
            env["TROUPE_GPU_SYNC"] = "1"
        cmd = [BIN, "train", CONFIG] + settings(fdir, STEPS, 1, GPU)
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired as e:
            raise AssertionError("GPU fault (TROUPE_GPU_SYNC=%d): no exit within 300 s:\n%s\n%s"
                                 % (sync, e.stdout, e.stderr))
        what = "GPU fault (TROUPE_GPU_SYNC=%d)" % sync
        assert p.returncode == 1, (what, p.returncode, p.stdout, p.stderr)
        errors = [l for l in p.stderr.splitlines() if "illegal memory access" in l]
        assert errors, (what, p.stderr)
        assert any("gpu:0" in l and "TROUPE_GPU_SYNC=1" in l for l in errors), (what, p.stderr)
        if sync:
            assert any("Conv2DBackpropFilter" in l for l in errors), (what, p.stderr)
        assert snapshot(fckpts) == before, what + ": the checkpoints changed"
        print("%s: %s" % (what, errors[-1][:400]))
    p = train(fdir, STEPS, 1, extra=GPU)
    assert "resuming from" in p.stdout, p.stdout
    r = ckpt_diff(os.path.join(a, "checkpoints"), fckpts)
    assert r.returncode == 0, "GPU run resumed after a fault differs:\n" + r.stdout + r.stderr
    print("resumed after a GPU fault == uninterrupted")

    shared = os.path.join(base, "shared")
    train(shared, 20, 2, extra=GPU + ["train.replicas_per_gpu=2"])
    print("two replicas on one GPU: ok")

    def epoch_accuracy(run_dir, extra):
        p = train(run_dir, 0, 2, extra=extra + ["train.epochs=1"], timeout=1200)
        m = re.findall(r"test accuracy ([0-9.]+)", p.stdout)
        assert m, p.stdout
        return float(m[-1])

    gpu_acc = epoch_accuracy(os.path.join(base, "epoch_gpu"),
                             GPU + ["train.replicas_per_gpu=2"])
    cpu_acc = epoch_accuracy(os.path.join(base, "epoch_cpu"), ["checkpoint.every_steps=0"])
    print("one epoch: GPU test accuracy %.4f, CPU %.4f" % (gpu_acc, cpu_acc))
    assert abs(gpu_acc - cpu_acc) < 0.01, (gpu_acc, cpu_acc)
finally:
    shutil.rmtree(base, ignore_errors=True)
print("ok")
