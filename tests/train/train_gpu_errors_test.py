"""Asking for more GPUs than the machine has: `troupe train` stops before touching the run
dir, exits 2 (a configuration this machine cannot run), and names the GPU it wanted, how many are visible and what to change. Runs on
every machine (a GPU-less one asks for gpu:0; a GPU machine for one past its last GPU). An
existing checkpoint in the run dir stays as it was."""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from train_common import tmpdir, train  # noqa: E402

base = tmpdir()
try:
    d = os.path.join(base, "run")
    train(d, 5, 1, extra=["checkpoint.every_steps=0"])  # a CPU checkpoint to keep intact
    ckpts = os.path.join(d, "checkpoints")
    before = {f: open(os.path.join(ckpts, f), "rb").read() for f in sorted(os.listdir(ckpts))}

    probe = train(d, 6, 1, extra=["train.device=gpu"], check=False)
    text = probe.stdout + probe.stderr
    if "built without CUDA" in text:
        assert probe.returncode == 2, text
        assert 'device = "cpu"' in text, text
        print("built without CUDA: clear error")
    else:
        m = re.search(r"(\d+) GPU\(s\) are visible", text)
        visible = int(m.group(1)) if m else None
        if visible is None:  # the probe trained: ask for one GPU more than there are
            assert probe.returncode == 0, text
            p = train(d, 7, 1, extra=["train.device=gpu", "train.replicas_per_process=%d" % 64,
                                      "train.global_batch_size=64"], check=False)
            text = p.stdout + p.stderr
            m = re.search(r"(\d+) GPU\(s\) are visible", text)
            assert p.returncode == 2 and m, text
            visible = int(m.group(1))
            wanted = "gpu:%d" % visible
        else:
            assert probe.returncode == 2 and visible == 0, text
            wanted = "gpu:0"
        assert wanted in text and "replicas_per_gpu" in text, text
        print("clear error: " + text.strip().splitlines()[-1])
    after = {f: open(os.path.join(ckpts, f), "rb").read() for f in sorted(os.listdir(ckpts))}
    if visible == 0 or "built without CUDA" in text:
        assert before == after, "the checkpoint directory changed"
finally:
    shutil.rmtree(base, ignore_errors=True)
print("ok")
