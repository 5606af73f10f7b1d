#!/usr/bin/env python3
"""Troupe's Keras recurrent layers (graph/keras/layers_recurrent.cc, graph/nn/recurrent.h)
against Keras 3 (TF backend): SimpleRNN, LSTM, GRU (reset_after both ways), their options
(return_sequences, go_backwards, use_bias, activations, return_state, unroll, masks,
dropout),
Bidirectional (every merge mode Troupe supports) and TimeDistributed. Each case checks outputs,
input and weight gradients, weights after, variable names/order and 1-vs-8-thread bits
(layers_keras_test.run_case). Refusals (dropout, stateful, merge_mode=None) are checked to be
clear driver errors (recurrent_dropout of LSTM/GRU, stateful, merge_mode=None, ...).
Env: TROUPE_BINARY_DIR (build dir with tests/graph/keras/layer_driver).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import BIN, Case, run_case, run_cases, finish, L, keras, tf, np  # noqa: E402

# A [batch=3, time=6] mask: a fully kept row, a row masked at the end (padding) and one masked
# at the start and in the middle.
MASK = np.array([[1, 1, 1, 1, 1, 1],
                 [1, 1, 1, 1, 0, 0],
                 [0, 1, 0, 1, 1, 0]], dtype=np.float32)


def masked(mask=MASK):
    m = tf.constant(mask.astype(bool))
    return dict(call=lambda l, xs, t: l(xs[0], mask=m, training=t),
                driver_call={"mask": mask.tolist()})


def first_output(l, xs, t):
    return l(xs[0], training=t)[0]


def cases():
    X = [(3, 6, 5)]
    c = [
        Case("lstm_last", lambda: L.LSTM(4), X),
        Case("lstm_sequences", lambda: L.LSTM(4, return_sequences=True), X),
        Case("lstm_backwards_sequences",
             lambda: L.LSTM(4, return_sequences=True, go_backwards=True), X),
        Case("lstm_backwards_last", lambda: L.LSTM(3, go_backwards=True), X),
        Case("lstm_no_bias_relu_hard_sigmoid",
             lambda: L.LSTM(4, use_bias=False, activation="relu",
                            recurrent_activation="hard_sigmoid"), X),
        Case("lstm_no_unit_forget_bias_unroll",
             lambda: L.LSTM(4, unit_forget_bias=False, unroll=True, return_sequences=True), X),
        Case("lstm_return_state_first_output", lambda: L.LSTM(4, return_state=True), X,
             call=first_output),
        Case("lstm_single_step", lambda: L.LSTM(4, return_sequences=True), [(2, 1, 3)]),
        Case("gru_reset_after", lambda: L.GRU(4), X),
        Case("gru_reset_after_sequences", lambda: L.GRU(4, return_sequences=True), X),
        Case("gru_reset_before", lambda: L.GRU(4, reset_after=False, return_sequences=True), X),
        Case("gru_reset_before_backwards", lambda: L.GRU(3, reset_after=False, go_backwards=True),
             X),
        Case("gru_reset_after_no_bias", lambda: L.GRU(4, use_bias=False, return_sequences=True),
             X),
        Case("gru_reset_before_no_bias", lambda: L.GRU(4, reset_after=False, use_bias=False), X),
        Case("gru_backwards_sequences_unroll",
             lambda: L.GRU(4, return_sequences=True, go_backwards=True, unroll=True), X),
        Case("simple_rnn", lambda: L.SimpleRNN(4), X),
        Case("simple_rnn_sequences_backwards",
             lambda: L.SimpleRNN(4, return_sequences=True, go_backwards=True), X),
        Case("simple_rnn_relu_no_bias",
             lambda: L.SimpleRNN(5, activation="relu", use_bias=False, return_sequences=True), X),
        # Dropout: Keras' per-call masks from the layer's SeedGenerator (drawn in the build
        # call too), the same bits in training; no effect in inference.
        Case("lstm_dropout_training",
             lambda: L.LSTM(4, dropout=0.3, seed=5, return_sequences=True), X, training=True),
        Case("lstm_dropout_inference", lambda: L.LSTM(4, dropout=0.3, seed=5), X),
        Case("gru_dropout_training", lambda: L.GRU(4, dropout=0.4, seed=2), X, training=True),
        Case("gru_reset_before_dropout_training",
             lambda: L.GRU(3, reset_after=False, dropout=0.2, seed=8, return_sequences=True), X,
             training=True),
        # Keras' SimpleRNN.get_config drops `seed` (3.15): the envelope Troupe reads gets it
        # back, as a hand-written config would hold it.
        Case("simple_rnn_dropout_recurrent_dropout_training",
             lambda: L.SimpleRNN(4, dropout=0.3, recurrent_dropout=0.4, seed=9,
                                 return_sequences=True), X, training=True,
             config_edit=lambda env: env["config"].__setitem__("seed", 9)),
        Case("simple_rnn_recurrent_dropout_training",
             lambda: L.SimpleRNN(4, recurrent_dropout=0.5, seed=3), X, training=True,
             config_edit=lambda env: env["config"].__setitem__("seed", 3)),
        # Masks (Keras' rnn(): masked steps keep the states and repeat the previous output).
        Case("lstm_mask_last", lambda: L.LSTM(4), X, **masked()),
        Case("lstm_mask_sequences", lambda: L.LSTM(4, return_sequences=True), X, **masked()),
        Case("lstm_mask_backwards_sequences",
             lambda: L.LSTM(4, return_sequences=True, go_backwards=True), X, **masked()),
        Case("gru_mask_sequences", lambda: L.GRU(4, return_sequences=True), X, **masked()),
        Case("gru_reset_before_mask", lambda: L.GRU(4, reset_after=False), X, **masked()),
        Case("simple_rnn_mask_zero_output",
             lambda: L.SimpleRNN(4, return_sequences=True, zero_output_for_mask=True), X,
             **masked()),
        # The last step is masked in two rows: zero_output_for_mask gives zeros there.
        Case("lstm_mask_zero_output_last", lambda: L.LSTM(4, zero_output_for_mask=True), X,
             **masked()),
        Case("gru_mask_unroll_zero_output_last",
             lambda: L.GRU(3, unroll=True, zero_output_for_mask=True), X, **masked()),
        # Bidirectional.
        Case("bidi_lstm_concat", lambda: L.Bidirectional(L.LSTM(4)), X),
        Case("bidi_lstm_concat_sequences",
             lambda: L.Bidirectional(L.LSTM(4, return_sequences=True)), X),
        Case("bidi_gru_sum_sequences",
             lambda: L.Bidirectional(L.GRU(3, return_sequences=True), merge_mode="sum"), X),
        Case("bidi_gru_reset_before_mul",
             lambda: L.Bidirectional(L.GRU(3, reset_after=False), merge_mode="mul"), X),
        Case("bidi_simple_rnn_ave",
             lambda: L.Bidirectional(L.SimpleRNN(3, return_sequences=True), merge_mode="ave"),
             X),
        Case("bidi_explicit_backward_layer",
             lambda: L.Bidirectional(L.LSTM(3, return_sequences=True),
                                     backward_layer=L.GRU(2, return_sequences=True,
                                                          go_backwards=True)), X),
        Case("bidi_lstm_mask_sequences",
             lambda: L.Bidirectional(L.LSTM(3, return_sequences=True)), X, **masked()),
        Case("bidi_gru_mask_last", lambda: L.Bidirectional(L.GRU(3)), X, **masked()),
        Case("bidi_lstm_dropout_training_mask",
             lambda: L.Bidirectional(L.LSTM(3, dropout=0.3, seed=4, return_sequences=True)), X,
             training=True, **masked()),
        # TimeDistributed.
        Case("time_distributed_dense", lambda: L.TimeDistributed(L.Dense(3, activation="relu")),
             X),
        Case("time_distributed_conv2d",
             lambda: L.TimeDistributed(L.Conv2D(2, 3, padding="same")), [(2, 3, 5, 5, 2)]),
        # Recurrent layer inside TimeDistributed: [batch, outer, inner time, features].
        Case("time_distributed_lstm", lambda: L.TimeDistributed(L.LSTM(3)), [(2, 3, 4, 2)]),
    ]
    return c


def refused(layer, want):
    """The driver refuses `layer`'s envelope with an error naming `want`."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "layer.json"), "w") as f:
            json.dump(keras.layers.serialize(layer), f)
        with open(os.path.join(d, "call.json"), "w") as f:
            json.dump({"num_inputs": 1}, f)
        np.save(os.path.join(d, "in_0.npy"), np.zeros((2, 3, 4), np.float32))
        r = subprocess.run([BIN, d], capture_output=True, text=True)
        if r.returncode == 0:
            return f"accepted {layer.name}; expected a refusal naming {want!r}"
        if want not in r.stderr:
            return f"refusal of {layer.name} does not name {want!r}: {r.stderr.strip()}"
        return None


def refusals():
    checks = [
        (L.LSTM(4, recurrent_dropout=0.2), "recurrent_dropout"),
        (L.GRU(4, recurrent_dropout=0.1), "recurrent_dropout"),
        (L.SimpleRNN(4, stateful=True), "stateful"),
        (L.Bidirectional(L.LSTM(4), merge_mode=None), "merge_mode"),
        (L.TimeDistributed(L.BatchNormalization()), "BatchNormalization"),
    ]
    failures = []
    for layer, want in checks:
        msg = refused(layer, want)
        print(f"  {'ok' if msg is None else 'FAIL':4} refuses {type(layer).__name__} ({want})")
        if msg:
            failures.append(msg)
    return failures


TROUPE = os.path.join(os.environ.get("TROUPE_BINARY_DIR", "build"), "troupe")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def text_models():
    """Whole models: (name, keras model, example shape)."""
    def text_classifier():
        inp = keras.Input((20,), dtype="int32")
        x = L.Embedding(1000, 32)(inp)
        x = L.LSTM(64)(x)
        return keras.Model(inp, L.Dense(4, activation="softmax")(x))
    def masked_bigru():
        return keras.Sequential([
            keras.Input((20,), dtype="int32"), L.Embedding(1000, 32, mask_zero=True),
            L.Bidirectional(L.GRU(16, return_sequences=True)), L.LSTM(8),
            L.Dense(3, activation="softmax")])
    def sequence_tagger():
        return keras.Sequential([
            keras.Input((20, 8)), L.Bidirectional(L.GRU(8, return_sequences=True)),
            L.TimeDistributed(L.Dense(4)), L.SimpleRNN(5, return_sequences=True), L.LSTM(6),
            L.Dense(10)])
    return [("text_classifier_lstm", text_classifier()), ("masked_bigru", masked_bigru()),
            ("sequence_tagger", sequence_tagger())]


def model_checks():
    """`troupe model show --keras` loads each model with Keras' parameter count; the sequence
    tagger also trains from Keras' tf.train.Checkpoint (model.init_from), which restores every
    weight by its checkpoint path (cell/..., forward_layer/..., layer/...): after one SGD step
    at learning rate 1e-30 Troupe's weights equal Keras' (biases within 1e-30 * gradient)."""
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for name, m in text_models():
            path = os.path.join(d, name + ".json")
            with open(path, "w") as f:
                f.write(m.to_json())
            r = subprocess.run([TROUPE, "model", "show", "--keras", path], capture_output=True,
                               text=True)
            want = f"Total params: {m.count_params():,}"
            ok = r.returncode == 0 and want in r.stdout
            print(f"  {'ok' if ok else 'FAIL':4} model show {name}: {want}")
            if not ok:
                failures.append(f"model show {name}: want '{want}': {r.stdout[-800:]}"
                                f"{r.stderr[-800:]}")
        # Checkpoint layout: Keras' checkpoint -> Troupe's run -> the same weights.
        m = text_models()[2][1]
        for v in m.weights:
            v.assign(np.random.default_rng(len(v.path)).normal(0, 0.3, v.shape))
        ck = tf.train.Checkpoint(model=m).save(os.path.join(d, "keras", "ckpt"))
        problems = weights_after_one_step(d, "sequence_tagger", m, [20, 8], ck, 1e-20)
        print(f"  {'ok' if not problems else 'FAIL':4} init_from Keras checkpoint restores "
              f"{len(m.weights)} weights by path")
        failures += problems
        # Seeded initializers: Troupe's initial weights are Keras' (GlorotUniform bit for bit,
        # Orthogonal to float32 QR rounding, LSTM's unit_forget_bias ones).
        I = keras.initializers
        m = keras.Sequential([
            keras.Input((6, 4)),
            L.LSTM(12, return_sequences=True, kernel_initializer=I.GlorotUniform(seed=1),
                   recurrent_initializer=I.Orthogonal(seed=2)),
            L.GRU(3, reset_after=False, kernel_initializer=I.GlorotUniform(seed=3),
                  recurrent_initializer=I.Orthogonal(gain=0.5, seed=4), return_sequences=True),
            L.SimpleRNN(12, kernel_initializer=I.GlorotUniform(seed=5),
                        recurrent_initializer=I.Orthogonal(seed=6)),
            L.Dense(10, kernel_initializer=I.Orthogonal(seed=7))])
        with open(os.path.join(d, "seeded.json"), "w") as f:
            f.write(m.to_json())
        problems = weights_after_one_step(d, "seeded", m, [6, 4], None, 2e-6)
        print(f"  {'ok' if not problems else 'FAIL':4} seeded GlorotUniform/Orthogonal/"
              f"unit_forget_bias initial weights equal Keras' ({len(m.weights)} weights)")
        failures += problems
    return failures


def masked_model_checks():
    """End to end with masks: a Keras Sequential model whose mask comes from
    Embedding(mask_zero=True) or Masking goes through Bidirectional(GRU), a backwards LSTM and
    a SimpleRNN. Troupe starts from Keras' .weights.h5 and evaluates the same TFRecord examples
    (padded at the end, some masked at the start): its test loss equals Keras' within 1e-5
    relative, and the same model without the mask has a clearly different loss (control)."""
    failures = []
    T, F, N = 12, 3, 64
    for kind in ("embedding_mask_zero", "masking"):
        rng = np.random.default_rng(0)
        if kind == "masking":
            x = rng.normal(0, 1, (N, T, F)).astype(np.float32)
        else:
            x = rng.integers(1, 50, (N, T)).astype(np.int64)
        for i, n in enumerate(rng.integers(1, T + 1, N)):
            x[i, n:] = 0
        x[::5, 0] = 0
        y = rng.integers(0, 3, N)

        def body():
            return [L.Bidirectional(L.GRU(6, return_sequences=True)),
                    L.LSTM(5, go_backwards=True, return_sequences=True), L.SimpleRNN(4),
                    L.Dense(3, activation="softmax")]
        if kind == "masking":
            head = [keras.Input((T, F)), L.Masking(0.0)]
            nomask = [keras.Input((T, F)), L.Activation("linear")]
        else:
            head = [keras.Input((T,), dtype="int32"), L.Embedding(50, 8, mask_zero=True)]
            nomask = [keras.Input((T,), dtype="int32"), L.Embedding(50, 8)]
        m = keras.Sequential(head + body())
        for v in m.weights:
            v.assign(rng.normal(0, 0.5, v.shape))
        c = keras.Sequential(nomask + body())
        c.set_weights(m.get_weights())
        xin = x if kind == "masking" else x.astype(np.int32)
        ce = keras.losses.SparseCategoricalCrossentropy()
        want = float(ce(y, m(xin)))
        unmasked = float(ce(y, c(xin)))
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "d.tfrecord")
            with tf.io.TFRecordWriter(data) as w:
                for a, b in zip(x, y):
                    fx = (tf.train.Feature(float_list=tf.train.FloatList(value=a.reshape(-1)))
                          if kind == "masking" else
                          tf.train.Feature(int64_list=tf.train.Int64List(value=a)))
                    ex = tf.train.Example(features=tf.train.Features(feature={
                        "x": fx,
                        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[b]))}))
                    w.write(ex.SerializeToString())
            with open(os.path.join(d, kind + ".json"), "w") as f:
                f.write(m.to_json())
            weights = os.path.join(d, "w.weights.h5")
            m.save_weights(weights)
            sets = ["model.init_from=" + weights, "data.source=tfrecord", "data.files=" + data,
                    "data.eval_files=" + data, "data.features.image.key=x",
                    "data.features.image.decode=" + ("float" if kind == "masking" else "int64"),
                    "data.features.image.shape=" + json.dumps([T, F] if kind == "masking"
                                                              else [T]),
                    "data.num_classes=3", "train.max_steps=1", "train.global_batch_size=16",
                    "optimizer.name=sgd", "optimizer.learning_rate=1e-30",
                    "checkpoint.every_steps=0", "model.from_logits=false",
                    "train.replicas_per_process=1"]
            run = os.path.join(d, "run")
            r = troupe_train(d, kind, run, sets)
            problems = []
            if r.returncode != 0:
                problems.append(f"{kind}: troupe train failed: {r.stderr[-1500:]}")
            else:
                with open(os.path.join(run, "metrics.jsonl")) as f:
                    tests = [json.loads(ln) for ln in f if '"test"' in ln]
                got = tests[-1]["loss"]
                if abs(got - want) > 1e-5 * abs(want):
                    problems.append(f"{kind}: Troupe test loss {got:.8f} != Keras {want:.8f}")
            if abs(unmasked - want) < 1e-3:
                problems.append(f"{kind}: control: the unmasked model's loss {unmasked:.6f} is "
                                f"too close to the masked one's {want:.6f}")
        print(f"  {'ok' if not problems else 'FAIL':4} masked model ({kind}) test loss "
              f"{want:.6f} (unmasked {unmasked:.6f}) equals Keras'")
        failures += problems
    return failures


def troupe_train(d, name, run, sets):
    with open(os.path.join(ROOT, "examples", "fashion_lenet.toml")) as f:
        toml = f.read().replace('name = "lenet5"',
                                'keras = "%s"' % os.path.join(d, name + ".json"))
    with open(os.path.join(d, name + ".toml"), "w") as f:
        f.write(toml)
    cmd = [TROUPE, "train", os.path.join(d, name + ".toml"), "--set", "job.run_dir=" + run]
    for x in sets:
        cmd += ["--set", x]
    return subprocess.run(cmd, capture_output=True, text=True)


def weights_after_one_step(d, name, m, shape, init_from, tol):
    """Trains Troupe one SGD step at learning rate 1e-30 on models/<name>.json (starting from
    `init_from` when given) and returns the Keras weights of `m` no Troupe weight equals."""
    with open(os.path.join(ROOT, "examples", "fashion_lenet.toml")) as f:
        toml = f.read().replace('name = "lenet5"',
                                'keras = "%s"' % os.path.join(d, name + ".json"))
    with open(os.path.join(d, name + ".toml"), "w") as f:
        f.write(toml)
    run = os.path.join(d, "run_" + name)
    sets = ["job.run_dir=" + run, "train.replicas_per_process=1",
            "data.source=synthetic", "data.features.image.shape=" + json.dumps(shape),
            "data.num_classes=10", "data.synthetic_examples=32", "train.max_steps=1",
            "train.global_batch_size=16", "optimizer.name=sgd",
            "optimizer.learning_rate=1e-30", "checkpoint.every_steps=1"]
    if init_from:
        sets.append("model.init_from=" + init_from)
    cmd = [TROUPE, "train", os.path.join(d, name + ".toml")]
    for x in sets:
        cmd += ["--set", x]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return [f"{name}: troupe train failed: {r.stderr[-1500:]}"]
    t = tf.train.load_checkpoint(os.path.join(run, "checkpoints"))
    got = [t.get_tensor(n) for n in t.get_variable_to_shape_map()
           if n.startswith("optimizer/_trainable_variables/")]
    problems = []
    for v in m.weights:
        want = v.numpy()
        diffs = [np.max(np.abs(g - want)) for g in got if g.shape == want.shape]
        if not diffs or min(diffs) > tol:
            problems.append(f"{name}: {v.path}: no Troupe weight within {tol:g} of Keras' "
                            f"(closest {min(diffs) if diffs else None})")
    return problems


def controls():
    """Negative controls: Troupe on a perturbed config (or without the mask) must not match
    Keras, so the comparison can tell these variants apart."""
    def flip(key):
        def edit(env):
            env["config"][key] = not env["config"][key]
        return edit
    m = masked()
    checks = [
        Case("control_gru_reset_after_flipped",
             lambda: L.GRU(4, use_bias=False, return_sequences=True),
             [(3, 6, 5)], config_edit=flip("reset_after")),
        Case("control_lstm_go_backwards_flipped", lambda: L.LSTM(4), [(3, 6, 5)],
             config_edit=flip("go_backwards")),
        Case("control_lstm_mask_dropped", lambda: L.LSTM(4, return_sequences=True),
             [(3, 6, 5)], call=m["call"]),
    ]
    failures = []
    for seed, case in enumerate(checks, start=101):
        problems = run_case(case, seed)
        print(f"  {'ok' if problems else 'FAIL':4} {case.name} differs: {problems[:1]}")
        if not problems:
            failures.append(f"{case.name}: matched Keras; the comparison cannot see the change")
    return failures


if __name__ == "__main__":
    only = sys.argv[1:]
    failures = run_cases(cases(), only)
    if not only:
        failures += refusals()
        failures += controls()
        failures += model_checks()
        failures += masked_model_checks()
    finish(failures)
