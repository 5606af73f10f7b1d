#!/usr/bin/env python3
"""Troupe's Keras 3 optimizers against real Keras (TF backend), update by update.

For every optimizer (adam, adamw, sgd, sgd+nesterov momentum, rmsprop, rmsprop centered with
momentum, adagrad, lion) x every learning-rate schedule (none, cosine with and without warmup,
piecewise, exponential, inverse_time, polynomial) x every clipping mode (off, clipnorm,
global_clipnorm, clipvalue) x weight decay (off, on with no_decay=["bias"]) - the full
product - plus EMA (with and without overwrite) and gradient accumulation cases, the test:
  1. applies 30 updates to four variables of different shapes (one named bias) from the same
     initial weights and the same numpy gradients in Troupe (tests/graph/optimizer_driver) and
     in Keras, and compares the weights and every float optimizer variable, in Keras'
     `_variables` order, within 1e-6 of the tensor's scale (counting bit-equal results);
  2. restores Troupe's checkpoint (slots, iterations, EMA averages, accumulators, no
     learning_rate variable with a schedule) into a fresh Keras optimizer with
     tf.train.Checkpoint(optimizer=...).restore(...).assert_existing_objects_matched() and
     checks that 5 more Keras updates equal Troupe's continuation.
With accumulation K, Keras gets the K micro-gradients; Troupe gets their float32 sum in
micro-step order divided by K, once per update (the trainer's contract).
Env: TROUPE_BINARY_DIR (build dir with tests/graph/optimizer_driver).
"""
import itertools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
try:
    import tensorflow as tf
    import keras
except ImportError:
    sys.exit("optimizers_keras_test: tensorflow is not installed for this Python")

BIN = os.path.join(os.environ.get("TROUPE_BINARY_DIR", "build"), "tests", "graph",
                   "optimizer_driver")
VARS = [("dense/kernel", (3, 4)), ("dense/bias", (4,)), ("conv/kernel", (2, 2, 3)),
        ("norm/gamma", (5,))]
STEPS, MORE = 30, 5
LR = 0.01

OPTIMIZERS = {
    "adam": {"name": "adam"},
    "adamw": {"name": "adamw"},
    "sgd": {"name": "sgd", "momentum": 0.9},
    "sgd_nesterov": {"name": "sgd", "momentum": 0.8, "nesterov": True},
    "sgd_plain": {"name": "sgd"},
    "rmsprop": {"name": "rmsprop"},
    "rmsprop_centered": {"name": "rmsprop", "momentum": 0.5, "centered": True, "rho": 0.8},
    "adagrad": {"name": "adagrad", "initial_accumulator_value": 0.2},
    "lion": {"name": "lion", "beta_1": 0.9, "beta_2": 0.99},
}
SCHEDULES = {
    "none": None,
    "cosine": {"kind": "cosine", "decay_steps": 20, "alpha": 0.1},
    "cosine_warmup": {"kind": "cosine", "decay_steps": 20, "alpha": 0.1, "warmup_steps": 5,
                      "warmup_target": 0.02},
    "piecewise": {"kind": "piecewise", "boundaries": [5, 12, 20],
                  "values": [0.01, 0.005, 0.002, 0.001]},
    "exponential": {"kind": "exponential", "decay_steps": 7, "decay_rate": 0.6,
                    "staircase": True},
    "exponential_smooth": {"kind": "exponential", "decay_steps": 7, "decay_rate": 0.6},
    "inverse_time": {"kind": "inverse_time", "decay_steps": 5, "decay_rate": 0.5},
    "polynomial": {"kind": "polynomial", "decay_steps": 25, "end_learning_rate": 0.001,
                   "power": 2.0, "cycle": True},
    "polynomial_flat": {"kind": "polynomial", "decay_steps": 12, "end_learning_rate": 0.002,
                        "power": 0.5},
}
CLIPS = {"off": {}, "clipnorm": {"clipnorm": 1.0}, "global_clipnorm": {"global_clipnorm": 1.3},
         "clipvalue": {"clipvalue": 0.4}}


def keras_schedule(s):
    S = keras.optimizers.schedules
    if s is None:
        return LR
    k = s["kind"]
    if k == "cosine":
        return S.CosineDecay(LR, s["decay_steps"], alpha=s.get("alpha", 0.0),
                             warmup_target=s.get("warmup_target"),
                             warmup_steps=s.get("warmup_steps", 0))
    if k == "piecewise":
        return S.PiecewiseConstantDecay(s["boundaries"], s["values"])
    if k == "exponential":
        return S.ExponentialDecay(LR, s["decay_steps"], s["decay_rate"],
                                  staircase=s.get("staircase", False))
    if k == "inverse_time":
        return S.InverseTimeDecay(LR, s["decay_steps"], s["decay_rate"],
                                  staircase=s.get("staircase", False))
    return S.PolynomialDecay(LR, s["decay_steps"], end_learning_rate=s["end_learning_rate"],
                             power=s["power"], cycle=s.get("cycle", False))


def keras_optimizer(cfg):
    kw = {"learning_rate": keras_schedule(cfg.get("schedule"))}
    for key in ("clipnorm", "global_clipnorm", "clipvalue", "weight_decay"):
        if cfg.get(key):
            kw[key] = cfg[key]
    if cfg.get("use_ema"):
        kw["use_ema"] = True
        kw["ema_momentum"] = cfg["ema_momentum"]
        if cfg.get("ema_overwrite_frequency"):
            kw["ema_overwrite_frequency"] = cfg["ema_overwrite_frequency"]
    if cfg.get("gradient_accumulation_steps", 1) > 1:
        kw["gradient_accumulation_steps"] = cfg["gradient_accumulation_steps"]
    name = cfg["name"]
    O = keras.optimizers
    if name == "adam":
        opt = O.Adam(**kw)
    elif name == "adamw":
        opt = O.AdamW(**kw)
    elif name == "sgd":
        opt = O.SGD(momentum=float(cfg.get("momentum", 0.0)),
                    nesterov=cfg.get("nesterov", False), **kw)
    elif name == "rmsprop":
        opt = O.RMSprop(rho=cfg.get("rho", 0.9), momentum=cfg.get("momentum", 0.0),
                        centered=cfg.get("centered", False), **kw)
    elif name == "adagrad":
        opt = O.Adagrad(initial_accumulator_value=cfg["initial_accumulator_value"], **kw)
    else:
        opt = O.Lion(beta_1=cfg["beta_1"], beta_2=cfg["beta_2"], **kw)
    if cfg.get("no_decay"):
        opt.exclude_from_weight_decay(var_names=cfg["no_decay"])
    return opt


def make_data(rng, k):
    init = [rng.standard_normal(s).astype(np.float32) for _, s in VARS]
    micro = []  # [update][micro][var]
    for _ in range(STEPS + MORE):
        scale = np.float32(rng.uniform(0.2, 3.0))
        micro.append([[(rng.standard_normal(s) * 0.3 * scale).astype(np.float32)
                       for _, s in VARS] for _ in range(k)])
    means = []
    for update in micro:
        per_var = []
        for v in range(len(VARS)):
            acc = update[0][v].copy()
            for m in update[1:]:
                acc = (acc + m[v]).astype(np.float32)
            per_var.append((acc / np.float32(k)).astype(np.float32))
        means.append(per_var)
    return init, micro, means


def run_keras(cfg, init, micro, restore_from=None):
    variables = [keras.Variable(w.copy(), name=n.split("/")[-1]) for (n, _), w in zip(VARS, init)]
    opt = keras_optimizer(cfg)
    opt.build(variables)
    updates = range(STEPS)
    if restore_from:
        tf.train.Checkpoint(optimizer=opt).restore(restore_from).assert_existing_objects_matched()
        updates = range(STEPS, STEPS + MORE)
    for u in updates:
        for m in micro[u]:
            opt.apply([tf.constant(g) for g in m], variables)
    return [v.numpy() for v in variables], [v.numpy() for v in opt.variables
                                            if v.dtype == "float32"], opt


def compare(what, troupe, keras_values, stats):
    ok = True
    for t, k in zip(troupe, keras_values):
        t = t.reshape(k.shape)
        scale = max(float(np.max(np.abs(k))), 1e-30)
        err = float(np.max(np.abs(t.astype(np.float64) - k))) if k.size else 0.0
        stats["tensors"] += 1
        stats["bit_equal"] += int(np.array_equal(t.view(np.uint32), k.view(np.uint32)))
        if not err <= 1e-6 * scale:
            ok = False
            print(f"    {what}: max |troupe - keras| = {err:.3g} (scale {scale:.3g})")
    return ok


def read_floats(path, shapes):
    flat = np.fromfile(path, dtype=np.float32)
    out, at = [], 0
    for s in shapes:
        n = int(np.prod(s)) if len(s) else 1
        out.append(flat[at:at + n].reshape(s))
        at += n
    assert at == flat.size, f"{path}: {flat.size} floats, expected {at}"
    return out


def cases():
    for (o, s, c, wd) in itertools.product(OPTIMIZERS, SCHEDULES, CLIPS, (False, True)):
        cfg = dict(OPTIMIZERS[o], learning_rate=LR, **CLIPS[c])
        if SCHEDULES[s]:
            cfg["schedule"] = SCHEDULES[s]
        if wd:
            cfg["weight_decay"] = 0.05
            cfg["no_decay"] = ["bias"]
        yield f"{o}/{s}/{c}/{'wd' if wd else 'no_wd'}", cfg
    # EMA, EMA overwrite, gradient accumulation (alone and with everything else).
    for o in OPTIMIZERS:
        base = dict(OPTIMIZERS[o], learning_rate=LR)
        yield f"{o}/ema", dict(base, use_ema=True, ema_momentum=0.9)
        yield f"{o}/ema_overwrite", dict(base, use_ema=True, ema_momentum=0.8,
                                         ema_overwrite_frequency=4)
        yield f"{o}/accum3", dict(base, gradient_accumulation_steps=3)
        yield f"{o}/accum2_all", dict(base, gradient_accumulation_steps=2,
                                      schedule=SCHEDULES["cosine_warmup"], global_clipnorm=1.3,
                                      weight_decay=0.05, no_decay=["bias"], use_ema=True,
                                      ema_momentum=0.9)
        yield f"{o}/accum2_ema_overwrite", dict(base, gradient_accumulation_steps=2,
                                                schedule=SCHEDULES["piecewise"],
                                                use_ema=True, ema_momentum=0.8,
                                                ema_overwrite_frequency=3)


def main():
    if not os.path.exists(BIN):
        sys.exit(f"optimizers_keras_test: {BIN} is missing; build the optimizer_driver target")
    only = sys.argv[1] if len(sys.argv) > 1 else None
    stats = {"tensors": 0, "bit_equal": 0}
    failures = []
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, cfg) in enumerate(cases()):
            if only and only not in name:
                continue
            n += 1
            k = cfg.get("gradient_accumulation_steps", 1)
            init, micro, means = make_data(np.random.default_rng(i), k)
            case_dir = os.path.join(tmp, str(i))
            os.makedirs(case_dir)
            data = os.path.join(case_dir, "data.bin")
            with open(data, "wb") as f:
                for w in init:
                    f.write(w.tobytes())
                for update in means:
                    for g in update:
                        f.write(g.tobytes())
            spec = {"config": cfg, "vars": [{"name": v, "shape": list(s)} for v, s in VARS],
                    "steps": STEPS, "more_steps": MORE, "data": data,
                    "out": os.path.join(case_dir, "out")}
            spec_path = os.path.join(case_dir, "spec.json")
            with open(spec_path, "w") as f:
                json.dump(spec, f)
            r = subprocess.run([BIN, spec_path], capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(name)
                print(f"FAIL {name}: driver: {r.stderr.strip()}")
                continue
            out = spec["out"]
            shapes = [s for _, s in VARS]
            try:
                k_weights, k_optvars, opt = run_keras(cfg, init, micro)
                t_weights = read_floats(os.path.join(out, "weights_a.bin"), shapes)
                t_optvars = read_floats(os.path.join(out, "optvars_a.bin"),
                                        [tuple(v.shape) for v in opt.variables
                                         if v.dtype == "float32"])
                ok = compare("weights", t_weights, k_weights, stats)
                ok = compare("optimizer variables", t_optvars, k_optvars, stats) and ok
                ckpt = tf.train.latest_checkpoint(os.path.join(out, "ckpt"))
                k_more, _, _ = run_keras(cfg, init, micro, restore_from=ckpt)
                t_more = read_floats(os.path.join(out, "weights_b.bin"), shapes)
                ok = compare("continuation after restore", t_more, k_more, stats) and ok
            except Exception as e:  # noqa: BLE001 - report and go on
                ok = False
                print(f"    {type(e).__name__}: {e}")
            if not ok:
                failures.append(name)
                print(f"FAIL {name}")
    print(f"{n} cases, {len(failures)} failed; {stats['bit_equal']} of {stats['tensors']} "
          f"compared tensors bit-equal to Keras")
    if failures:
        print("failed:", ", ".join(failures[:40]))
        sys.exit(1)


if __name__ == "__main__":
    main()
