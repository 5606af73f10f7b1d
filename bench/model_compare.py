"""Side by side on this machine, per training step (forward, backward, Adam update), float32:
the zoo's resnet20 (Fashion-MNIST 28x28x1, batch 128) and transformer_lm (4 layers, 4 heads,
128 wide, context 64, batch 12, characters of Debian's fortunes) in Troupe (`troupe train`,
one replica), Keras 3 on TensorFlow (the same model JSON, `troupe model show --json`, trained
by a tf.function train step) and PyTorch on CPU (the same architecture written in torch).
Every framework gets the same thread count. Prints ms/step and the ratios.

PyTorch comes from its own virtualenv (~/.cache/troupe/torch-venv, `pip install torch` when
missing); Keras from the interop venv that scripts/setup --tests makes.

    python3 bench/model_compare.py [--build build] [--threads 2] [--models resnet20,transformer_lm]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
FORTUNES = "/usr/share/games/fortunes/*.u8"
TF_PY = os.path.expanduser("~/.cache/troupe/venv/bin/python")
TORCH_VENV = os.path.expanduser("~/.cache/troupe/torch-venv")

MODELS = {
    # name: (global batch, troupe --set overrides, warm-up steps, timed steps)
    "resnet20": (128, [], 10, 40),
    "transformer_lm": (12, ["data.source=text", "data.files=" + FORTUNES,
                            "data.sequence_length=64"], 20, 200),
}


def troupe_ms(build, name, threads):
    batch, extra, warm, steps = MODELS[name]
    sets = ["job.run_dir=RUN", "model.name=" + name, "train.replicas_per_process=1",
            "train.global_batch_size=%d" % batch, "train.max_steps=%d" % (warm + steps),
            "train.log_every=%d" % warm, "checkpoint.every_steps=0", "train.epochs=100"] + extra
    with tempfile.TemporaryDirectory() as run:
        cmd = [os.path.join(build, "troupe"), "train", os.path.join(ROOT, "examples",
                                                                     "fashion_lenet.toml")]
        for s in sets:
            cmd += ["--set", s.replace("RUN", run)]
        env = dict(os.environ, TROUPE_NUM_THREADS=str(threads))
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    # Rates of the windows after the first (warm-up, tracing).
    rates = [float(x) for x in re.findall(r"([0-9.]+) ex/s", out)][1:]
    return 1000.0 * batch / (sum(rates) / len(rates))


def model_json(build, name):
    out = subprocess.run([os.path.join(build, "troupe"), "model", "show", name, "--json"] +
                         (["--classes", str(vocab())] if name == "transformer_lm" else []),
                         check=True, capture_output=True, text=True).stdout
    return out


def vocab():
    data = b"".join(open(f, "rb").read() for f in sorted(glob.glob(FORTUNES)))
    return len(set(data))


KERAS_STEP = r'''
import json, os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, keras
sys.path.insert(0, sys.argv[5])
import troupe_keras  # noqa: F401  (registers troupe>PositionEmbedding)
threads, batch, warm, steps = (int(a) for a in sys.argv[1:5])
tf.config.threading.set_intra_op_parallelism_threads(threads)
tf.config.threading.set_inter_op_parallelism_threads(1)
model = keras.models.model_from_json(sys.stdin.read())
shape = model.inputs[0].shape[1:]
rng = np.random.default_rng(0)
classes = model.outputs[0].shape[-1]
if model.inputs[0].dtype == "int32":
    x = rng.integers(0, classes, (batch,) + tuple(shape)).astype(np.int32)
    y = rng.integers(0, classes, (batch,) + tuple(shape)).astype(np.int32)
else:
    x = rng.random((batch,) + tuple(shape), dtype=np.float32)
    y = rng.integers(0, classes, (batch,)).astype(np.int32)
opt = keras.optimizers.Adam(1e-3)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
@tf.function
def step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True)) + tf.add_n(model.losses or [0.0])
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss
x, y = tf.constant(x), tf.constant(y)
for _ in range(warm): step(x, y).numpy()
t = time.perf_counter()
for _ in range(steps): step(x, y).numpy()
print(1000 * (time.perf_counter() - t) / steps)
'''

TORCH_STEP = r'''
import sys, time, torch, torch.nn as nn, torch.nn.functional as F
threads, batch, warm, steps, classes = (int(a) for a in sys.argv[1:6])
name = sys.argv[6]
torch.set_num_threads(threads)
torch.manual_seed(0)

class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1); self.b1 = nn.BatchNorm2d(cout, eps=1e-3)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1); self.b2 = nn.BatchNorm2d(cout, eps=1e-3)
        self.proj = nn.Conv2d(cin, cout, 1, stride) if stride != 1 or cin != cout else None
    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu((self.proj(x) if self.proj is not None else x) + y)

class ResNet20(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(1, 16, 3, 1, 1); self.b = nn.BatchNorm2d(16, eps=1e-3)
        layers, cin = [], 16
        for stack, f in enumerate((16, 32, 64)):
            for block in range(3):
                layers.append(Block(cin, f, 2 if stack > 0 and block == 0 else 1)); cin = f
        self.blocks = nn.Sequential(*layers); self.fc = nn.Linear(64, classes)
    def forward(self, x):
        x = self.blocks(F.relu(self.b(self.c(x))))
        return self.fc(x.mean((2, 3)))

class Gpt(nn.Module):
    def __init__(self, T=64, d=128, heads=4, layers=4):
        super().__init__()
        self.tok = nn.Embedding(classes, d); self.pos = nn.Parameter(torch.zeros(T, d))
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict(dict(
                ln1=nn.LayerNorm(d, eps=1e-5), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
                ln2=nn.LayerNorm(d, eps=1e-5), fc=nn.Linear(d, 4 * d), out=nn.Linear(4 * d, d))))
        self.ln = nn.LayerNorm(d, eps=1e-5); self.head = nn.Linear(d, classes); self.h = heads
    def forward(self, ids):
        B, T = ids.shape
        x = self.tok(ids) + self.pos[:T]
        for b in self.blocks:
            q, k, v = b["qkv"](b["ln1"](x)).view(B, T, 3, self.h, -1).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + b["proj"](a.transpose(1, 2).reshape(B, T, -1))
            x = x + b["out"](F.gelu(b["fc"](b["ln2"](x))))
        return self.head(self.ln(x))

if name == "resnet20":
    model, x = ResNet20(), torch.rand(batch, 1, 28, 28)
    y = torch.randint(0, classes, (batch,))
else:
    model = Gpt()
    x = torch.randint(0, classes, (batch, 64)); y = torch.randint(0, classes, (batch, 64))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
def step():
    opt.zero_grad(set_to_none=True)
    out = model(x)
    loss = F.cross_entropy(out.reshape(-1, classes), y.reshape(-1))
    loss.backward(); opt.step()
for _ in range(warm): step()
t = time.perf_counter()
for _ in range(steps): step()
print(1000 * (time.perf_counter() - t) / steps)
'''


def torch_python():
    py = os.path.join(TORCH_VENV, "bin", "python")
    if not os.path.exists(py):
        print("model_compare: installing torch into " + TORCH_VENV, file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", TORCH_VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "torch"], check=True)
    return py


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--models", default="resnet20,transformer_lm")
    p.add_argument("--no-torch", action="store_true")
    args = p.parse_args()
    tpy = None if args.no_torch else torch_python()
    print("%-16s %10s %10s %10s %12s %12s" % ("model", "troupe ms", "keras ms", "torch ms",
                                            "keras/troupe", "torch/troupe"))
    for name in args.models.split(","):
        batch, _, warm, steps = MODELS[name]
        t = troupe_ms(args.build, name, args.threads)
        spec = model_json(args.build, name)
        k = float(subprocess.run([TF_PY, "-c", KERAS_STEP, str(args.threads), str(batch),
                                  str(warm), str(steps), os.path.join(ROOT, "tests", "interop")],
                                 input=spec, check=True, capture_output=True,
                                 text=True).stdout.split()[-1])
        classes = json.loads(spec)["config"]["layers"][-1]["config"]["units"]
        pt = float("nan")
        if tpy:
            pt = float(subprocess.run([tpy, "-c", TORCH_STEP, str(args.threads), str(batch),
                                       str(warm), str(steps), str(classes), name],
                                      check=True, capture_output=True, text=True).stdout.split()[-1])
        print("%-16s %10.2f %10.2f %10.2f %11.2fx %11.2fx" % (name, t, k, pt, k / t, pt / t))


if __name__ == "__main__":
    main()
