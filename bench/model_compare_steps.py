"""The Keras and PyTorch training steps bench/model_compare.py times, as script text run in each
framework's own interpreter. Each prints the mean ms/step of its timed steps as its last line.

KERAS_STEP argv: threads batch warm steps interop_dir; the model JSON comes on stdin.
TORCH_STEP argv: threads batch warm steps classes name (resnet20 | transformer_lm | resnet50).
"""

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
torch.set_num_interop_threads(1)
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

def conv_bn(cin, cout, k, stride, pad=0):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, pad), nn.BatchNorm2d(cout, eps=1.001e-5))

class Bottleneck(nn.Module):
    # keras.applications' v1 block: the stride on the first 1x1 conv, conv biases kept.
    def __init__(self, cin, f, stride, project):
        super().__init__()
        self.short = conv_bn(cin, 4 * f, 1, stride) if project else None
        self.a = conv_bn(cin, f, 1, stride); self.b = conv_bn(f, f, 3, 1, 1)
        self.c = conv_bn(f, 4 * f, 1, 1)
    def forward(self, x):
        y = self.c(F.relu(self.b(F.relu(self.a(x)))))
        return F.relu((self.short(x) if self.short is not None else x) + y)

class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 64, 7, 2, 3)
        layers, cin = [], 64
        for s, (f, n) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
            for block in range(n):
                layers.append(Bottleneck(cin, f, 2 if s > 0 and block == 0 else 1, block == 0))
                cin = 4 * f
        self.blocks = nn.Sequential(*layers); self.fc = nn.Linear(2048, classes)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.stem(x)), 3, 2, 1)
        return self.fc(self.blocks(x).mean((2, 3)))

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
elif name == "resnet50":
    model, x = ResNet50(), torch.rand(batch, 3, 224, 224)
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
