#!/usr/bin/env python3
"""Troupe's CPU kernels against real TensorFlow.

Makes inputs with a fixed NumPy seed, runs every forward and gradient kernel in TensorFlow
(tf.raw_ops) and in Troupe (tests/kernels/kernel_runner, driven through .npy files), and asserts
agreement: |troupe - tf| <= RTOL * |tf| + ATOL * max|tf| per output, with RTOL = 1e-5 and
ATOL = 1e-6 (i.e. values near zero, typically produced by cancellation in sums, are compared
against a millionth of the output's largest magnitude). Integer and bool outputs must match
exactly. Covers LeNet shapes (batch 8 and 64: 28x28x1 conv 5x5x6 SAME, 2x2/2 pooling, conv
5x5x16 VALID, dense 400->120->84->10) and odd shapes/strides. The comparison lives in
kernel_check.py.

Env: TROUPE_BINARY_DIR (build dir holding tests/kernels/kernel_runner).
"""
import sys

import numpy as np

try:
    import tensorflow as tf
except ImportError:
    sys.exit("kernels_tf_test: tensorflow is not installed for this Python; run scripts/setup "
             "(it installs tensorflow-cpu==2.21.0)")

import kernel_check  # noqa: E402  (after the check above: it imports tensorflow)

rng = np.random.default_rng(20240607)
cases = []
error_cases = set()  # names of cases where TF and Troupe must both fail with the same message


def rand(*shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def add(op, inputs, attrs, expected_fn, tag=""):
    """attrs: {name: (kind, value)}; expected_fn(*tf_tensors) -> tensor or list of tensors."""
    name = f"{len(cases):03d}_{op}{tag}"
    cases.append((name, op, [np.asarray(x) for x in inputs], attrs, expected_fn))


# ---- elementwise -------------------------------------------------------------------------
BINARY = ["Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "DivNoNan", "Maximum", "Minimum",
          "Pow", "SquaredDifference"]
COMPARE = ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"]
SHAPES = [((8, 10), (10,)), ((4, 1, 3), (5, 1)), ((), (3, 4)), ((64, 120), (64, 120)),
          ((2, 1, 7), (2, 6, 1))]
for sa, sb in SHAPES:
    a, b = rand(*sa, lo=0.5, hi=2.0), rand(*sb, lo=0.5, hi=2.0)
    for op in BINARY:
        add(op, [a, b], {}, lambda x, y, op=op: getattr(tf.raw_ops, op)(x=x, y=y))
    ai = np.round(a * 2).astype(np.float32)
    bi = np.round(b * 2).astype(np.float32)  # ties make Equal/LessEqual meaningful
    for op in COMPARE:
        add(op, [ai, bi], {}, lambda x, y, op=op: getattr(tf.raw_ops, op)(x=x, y=y))
a64, b64 = rand(3, 4, dtype=np.float64), rand(4, dtype=np.float64)
for op in ["Add", "Mul", "Sub", "Div"]:
    add(op, [a64, b64], {}, lambda x, y, op=op: getattr(tf.raw_ops, op)(x=x, y=y), "_f64")
ia, ib = rng.integers(-5, 5, (6, 4)).astype(np.int32), rng.integers(-5, 5, (4,)).astype(np.int32)
for op in ["Add", "Sub", "Mul", "Maximum", "Minimum", "Equal", "Less"]:
    add(op, [ia, ib], {}, lambda x, y, op=op: getattr(tf.raw_ops, op)(x=x, y=y), "_i32")
add("DivNoNan", [rand(5), np.array([1, 0, 2, 0, -1], np.float32)], {},
    lambda x, y: tf.raw_ops.DivNoNan(x=x, y=y), "_zeros")

x = rand(8, 50, lo=-3, hi=3)
xpos = rand(8, 50, lo=0.1, hi=3)
for op in ["Neg", "Abs", "Sign", "Square", "Exp", "Relu", "Tanh", "Sigmoid"]:
    arg = "features" if op == "Relu" else "x"
    add(op, [x], {}, lambda t, op=op, arg=arg: getattr(tf.raw_ops, op)(**{arg: t}))
for op in ["Sqrt", "Rsqrt", "Reciprocal", "Log"]:
    add(op, [xpos], {}, lambda t, op=op: getattr(tf.raw_ops, op)(x=t))
dy = rand(8, 50)
for fwd, grad, inp in [("Sqrt", "SqrtGrad", xpos), ("Rsqrt", "RsqrtGrad", xpos),
                       ("Reciprocal", "ReciprocalGrad", xpos), ("Tanh", "TanhGrad", x),
                       ("Sigmoid", "SigmoidGrad", x)]:
    y = getattr(tf.raw_ops, fwd)(x=inp).numpy()
    add(grad, [y, dy], {}, lambda yy, d, grad=grad: getattr(tf.raw_ops, grad)(y=yy, dy=d))
add("ReluGrad", [dy, x], {}, lambda g, f: tf.raw_ops.ReluGrad(gradients=g, features=f))

# ---- matmul (LeNet dense layers; gradients are MatMuls with transposes) -------------------
for batch in (8, 64):
    for k, n in [(400, 120), (120, 84), (84, 10)]:
        xin, w, g = rand(batch, k), rand(k, n), rand(batch, n)
        for ta, tb, aa, bb in [(False, False, xin, w), (False, True, g, w), (True, False, xin, g)]:
            add("MatMul", [aa, bb], {"transpose_a": ("b", ta), "transpose_b": ("b", tb)},
                lambda p, q, ta=ta, tb=tb: tf.raw_ops.MatMul(a=p, b=q, transpose_a=ta,
                                                             transpose_b=tb))
add("MatMul", [rand(7, 5), rand(3, 7)], {"transpose_a": ("b", True), "transpose_b": ("b", True)},
    lambda p, q: tf.raw_ops.MatMul(a=p, b=q, transpose_a=True, transpose_b=True))
add("MatMul", [rand(33, 17, dtype=np.float64), rand(17, 9, dtype=np.float64)], {},
    lambda p, q: tf.raw_ops.MatMul(a=p, b=q), "_f64")

# ---- reductions ---------------------------------------------------------------------------
r = rand(6, 7, 8, lo=0.5, hi=1.5)
for op in ["Sum", "Mean", "Max", "Min", "Prod"]:
    for axis, keep in [([0], False), ([2], True), ([0, 2], False), ([1], False), ([0, 1, 2], True),
                       ([-1], False)]:
        add(op, [r], {"axis": ("li", axis), "keep_dims": ("b", keep)},
            lambda t, op=op, axis=axis, keep=keep: getattr(tf.raw_ops, op)(
                input=t, axis=axis, keep_dims=keep))
big = rand(64 * 28 * 28, 6)
add("Sum", [big], {"axis": ("li", [0])}, lambda t: tf.raw_ops.Sum(input=t, axis=[0]), "_big")
add("Mean", [rand(100000)], {"axis": ("li", [0])}, lambda t: tf.raw_ops.Mean(input=t, axis=[0]))
add("Sum", [rng.integers(-9, 9, (5, 4)).astype(np.int64)], {"axis": ("li", [1])},
    lambda t: tf.raw_ops.Sum(input=t, axis=[1]), "_i64")
for s0, s1 in [([4, 1, 3], [5, 1]), ([2, 3], [3]), ([8, 10], [8, 10]), ([], [2, 3])]:
    add("BroadcastGradientArgs", [np.array(s0, np.int32), np.array(s1, np.int32)], {},
        lambda p, q: tf.raw_ops.BroadcastGradientArgs(s0=p, s1=q))
for like_shape in [(10,), (5, 1), (4, 1, 3), ()]:
    g = rand(4, 5, 3) if like_shape != (10,) else rand(8, 10)
    like = np.zeros(like_shape, np.float32)

    def sum_to(gg, ll):
        rg, _ = tf.raw_ops.BroadcastGradientArgs(s0=tf.shape(ll), s1=tf.shape(gg))
        return tf.reshape(tf.reduce_sum(gg, rg), tf.shape(ll))
    add("SumToShapeOf", [g, like], {}, sum_to)

# ---- bias, softmax, losses ----------------------------------------------------------------
v = rand(8, 14, 14, 6)
add("BiasAdd", [v, rand(6)], {}, lambda p, q: tf.raw_ops.BiasAdd(value=p, bias=q))
add("BiasAddGrad", [v], {}, lambda p: tf.raw_ops.BiasAddGrad(out_backprop=p))
add("BiasAddGrad", [rand(64, 120)], {}, lambda p: tf.raw_ops.BiasAddGrad(out_backprop=p))
for batch in (8, 64):
    logits = rand(batch, 10, lo=-4, hi=4)
    add("Softmax", [logits], {}, lambda t: tf.raw_ops.Softmax(logits=t))
    add("LogSoftmax", [logits], {}, lambda t: tf.raw_ops.LogSoftmax(logits=t))
    for ltype in (np.int32, np.int64):
        labels = rng.integers(0, 10, batch).astype(ltype)
        add("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], {},
            lambda f, l: tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=f, labels=l))
    dense = tf.nn.softmax(rand(batch, 10)).numpy()
    add("SoftmaxCrossEntropyWithLogits", [logits, dense], {},
        lambda f, l: tf.raw_ops.SoftmaxCrossEntropyWithLogits(features=f, labels=l))
add("Softmax", [rand(3, 4, 5, lo=-30, hi=30)], {}, lambda t: tf.raw_ops.Softmax(logits=t), "_3d")

# ---- conv2d and its gradients ---------------------------------------------------------------
CONVS = [  # (input, filter, strides, padding)
    ((8, 28, 28, 1), (5, 5, 1, 6), (1, 1), "SAME"),     # LeNet conv1
    ((8, 14, 14, 6), (5, 5, 6, 16), (1, 1), "VALID"),   # LeNet conv2
    ((64, 28, 28, 1), (5, 5, 1, 6), (1, 1), "SAME"),
    ((64, 14, 14, 6), (5, 5, 6, 16), (1, 1), "VALID"),
    ((3, 7, 9, 3), (3, 2, 3, 4), (2, 3), "SAME"),
    ((2, 11, 8, 2), (3, 3, 2, 5), (2, 2), "VALID"),
    ((2, 6, 6, 3), (1, 1, 3, 2), (1, 1), "SAME"),
    ((1, 10, 10, 2), (4, 4, 2, 3), (3, 3), "SAME"),
    # The im2col + GEMM path at ResNet-like shapes: a 3x3 over several filter-gradient row blocks,
    # a 1x1 expansion (input read in place, transposed filter gradient, several row blocks).
    ((16, 14, 14, 32), (3, 3, 32, 24), (1, 1), "SAME"),
    ((48, 14, 14, 24), (1, 1, 24, 96), (1, 1), "SAME"),
    # ResNet-20's 16-, 32- and 64-channel 3x3s (16: direct kernels, whose unit-stride input
    # gradient runs as the forward of the rotated filter; 32 and 64: Winograd), and that input
    # gradient under VALID padding and an even 2x2 SAME filter (padded 0 on top, 1 below).
    ((4, 28, 28, 16), (3, 3, 16, 16), (1, 1), "SAME"),
    ((4, 14, 14, 32), (3, 3, 32, 32), (1, 1), "SAME"),
    ((8, 7, 7, 64), (3, 3, 64, 64), (1, 1), "SAME"),
    ((2, 10, 9, 16), (3, 3, 16, 16), (1, 1), "VALID"),
    ((2, 9, 9, 32), (2, 2, 32, 32), (1, 1), "SAME"),
    # Winograd F(2x2, 3x3) (32+ channels, unit stride; the input gradient on the rotated
    # filter): ResNet-50's 28x28x128 and 7x7x512 3x3s, odd sizes under VALID padding, and
    # 64 -> 64 on a 32x32 image.
    ((2, 28, 28, 128), (3, 3, 128, 128), (1, 1), "SAME"),
    ((2, 7, 7, 512), (3, 3, 512, 512), (1, 1), "SAME"),
    ((2, 9, 7, 64), (3, 3, 64, 80), (1, 1), "VALID"),
    ((1, 32, 32, 64), (3, 3, 64, 64), (1, 1), "SAME"),
]
for xs, fs, (sh, sw), pad in CONVS:
    xin, f = rand(*xs), rand(*fs)
    strides = [1, sh, sw, 1]
    attrs = {"strides": ("li", strides), "padding": ("s", pad)}
    yout = tf.raw_ops.Conv2D(input=xin, filter=f, strides=strides, padding=pad).numpy()
    add("Conv2D", [xin, f], attrs,
        lambda p, q, s=strides, pd=pad: tf.raw_ops.Conv2D(input=p, filter=q, strides=s, padding=pd))
    g = rand(*yout.shape)
    add("Conv2DBackpropInput", [f, g], {**attrs, "input_sizes": ("li", xs)},
        lambda q, d, s=strides, pd=pad, xs=xs: tf.raw_ops.Conv2DBackpropInput(
            input_sizes=list(xs), filter=q, out_backprop=d, strides=s, padding=pd))
    add("Conv2DBackpropFilter", [xin, g], {**attrs, "filter_sizes": ("li", fs)},
        lambda p, d, s=strides, pd=pad, fs=fs: tf.raw_ops.Conv2DBackpropFilter(
            input=p, filter_sizes=list(fs), out_backprop=d, strides=s, padding=pd))
xin, f = rand(2, 9, 9, 2, dtype=np.float64), rand(3, 3, 2, 4, dtype=np.float64)
add("Conv2D", [xin, f], {"strides": ("li", [1, 2, 2, 1]), "padding": ("s", "SAME")},
    lambda p, q: tf.raw_ops.Conv2D(input=p, filter=q, strides=[1, 2, 2, 1], padding="SAME"),
    "_f64")

# ---- pooling ---------------------------------------------------------------------------------
POOLS = [  # (input, ksize, strides, padding)
    ((8, 28, 28, 6), (2, 2), (2, 2), "VALID"),   # LeNet pool1
    ((64, 10, 10, 16), (2, 2), (2, 2), "VALID"),  # LeNet pool2
    ((3, 7, 9, 4), (3, 3), (2, 2), "SAME"),
    ((2, 8, 5, 3), (2, 3), (1, 2), "SAME"),
    ((2, 9, 9, 2), (3, 2), (3, 1), "VALID"),
]
for xs, (kh, kw), (sh, sw), pad in POOLS:
    # ReLU-like inputs: many exact zeros, so MaxPoolGrad's tie rule is exercised.
    xin = np.maximum(rand(*xs), 0).astype(np.float32)
    ks, st = [1, kh, kw, 1], [1, sh, sw, 1]
    attrs = {"ksize": ("li", ks), "strides": ("li", st), "padding": ("s", pad)}
    for op in ("MaxPool", "AvgPool"):
        add(op, [xin], attrs, lambda p, op=op, ks=ks, st=st, pd=pad: getattr(tf.raw_ops, op)(
            **{"input" if op == "MaxPool" else "value": p}, ksize=ks, strides=st, padding=pd))
    yout = tf.raw_ops.MaxPool(input=xin, ksize=ks, strides=st, padding=pad).numpy()
    g = rand(*yout.shape)
    add("MaxPoolGrad", [xin, yout, g], attrs,
        lambda p, q, d, ks=ks, st=st, pd=pad: tf.raw_ops.MaxPoolGrad(
            orig_input=p, orig_output=q, grad=d, ksize=ks, strides=st, padding=pd))
    add("AvgPoolGrad", [g], {**attrs, "orig_input_shape": ("li", xs)},
        lambda d, ks=ks, st=st, pd=pad, xs=xs: tf.raw_ops.AvgPoolGrad(
            orig_input_shape=list(xs), grad=d, ksize=ks, strides=st, padding=pd))

# ---- cast, argmax, array ops ------------------------------------------------------------------
c = rand(4, 5, lo=-3, hi=3)
for dst in ("int32", "int64", "bool", "float64"):
    add("Cast", [c], {"DstT": ("t", dst)},
        lambda t, dst=dst: tf.raw_ops.Cast(x=t, DstT=tf.as_dtype(dst)), "_" + dst)
add("Cast", [ia], {"DstT": ("t", "float32")}, lambda t: tf.raw_ops.Cast(x=t, DstT=tf.float32),
    "_i2f")
for axis in (0, 1, -1):
    add("ArgMax", [c], {"axis": ("i", axis)},
        lambda t, axis=axis: tf.raw_ops.ArgMax(input=t, dimension=axis))
add("ArgMax", [rand(64, 10)], {"axis": ("i", 1), "output_type": ("t", "int32")},
    lambda t: tf.raw_ops.ArgMax(input=t, dimension=1, output_type=tf.int32))
t4 = rand(2, 3, 4, 5)
add("Reshape", [t4], {"shape": ("li", [-1, 20])}, lambda t: tf.raw_ops.Reshape(tensor=t, shape=[-1, 20]))
add("ExpandDims", [t4], {"axis": ("i", -2)}, lambda t: tf.raw_ops.ExpandDims(input=t, axis=-2))
add("Squeeze", [rand(1, 3, 1, 2)], {"squeeze_dims": ("li", [2])},
    lambda t: tf.raw_ops.Squeeze(input=t, axis=[2]))
add("Shape", [t4], {}, lambda t: tf.raw_ops.Shape(input=t))
add("ZerosLike", [t4], {}, lambda t: tf.raw_ops.ZerosLike(x=t))
add("OnesLike", [ia], {}, lambda t: tf.raw_ops.OnesLike(x=t))
add("Fill", [np.array(2.5, np.float32)], {"dims": ("li", [3, 2])},
    lambda val: tf.raw_ops.Fill(dims=[3, 2], value=val))
add("AddN", [rand(4, 3), rand(4, 3), rand(4, 3)], {}, lambda *xs: tf.raw_ops.AddN(inputs=list(xs)))
for perm in ([0, 3, 1, 2], [3, 2, 1, 0], [1, 0, 2, 3]):
    add("Transpose", [t4], {"perm": ("li", perm)},
        lambda t, perm=perm: tf.raw_ops.Transpose(x=t, perm=perm))
for axis in (0, 1, -1):
    parts = [rand(2, 3, 4), rand(2, 3, 4)] if axis != 1 else [rand(2, 1, 4), rand(2, 5, 4)]
    add("ConcatV2", parts, {"axis": ("i", axis)},
        lambda *xs, axis=axis: tf.raw_ops.ConcatV2(values=list(xs), axis=axis))
    add("Pack", [rand(2, 3), rand(2, 3), rand(2, 3)], {"axis": ("i", axis)},
        lambda *xs, axis=axis: tf.raw_ops.Pack(values=list(xs), axis=axis))
add("Unpack", [t4], {"axis": ("i", 1)}, lambda t: tf.raw_ops.Unpack(value=t, num=3, axis=1))
add("Slice", [t4], {"begin": ("li", [1, 0, 2, 1]), "size": ("li", [1, -1, 2, 3])},
    lambda t: tf.raw_ops.Slice(input=t, begin=[1, 0, 2, 1], size=[1, -1, 2, 3]))
add("Pad", [rand(2, 3)], {"paddings": ("li", [1, 0, 2, 3])},
    lambda t: tf.raw_ops.Pad(input=t, paddings=[[1, 0], [2, 3]]))
SS = [  # (begin, end, strides, begin_mask, end_mask, shrink_axis_mask)
    ([0, 1, 0, 0], [2, 3, 4, 5], [1, 1, 2, 2], 0, 0, 0),
    ([1, -1, 0, 0], [2, 0, 4, 5], [1, -1, 1, 3], 0, 2, 1),
    ([0, 0, 3], [0, 0, 0], [1, 2, -1], 3, 4, 0),
    ([-1, 2], [0, 0], [1, 1], 0, 0, 3),
    ([0, 0, 1, 4], [1, 3, 4, 0], [1, 1, 1, -2], 0, 8, 1),
]
for begin, end, strides, bm, em, sm in SS:
    attrs = {"begin": ("li", begin), "end": ("li", end), "strides": ("li", strides),
             "begin_mask": ("i", bm), "end_mask": ("i", em), "shrink_axis_mask": ("i", sm)}
    kw = dict(begin=begin, end=end, strides=strides, begin_mask=bm, end_mask=em,
              shrink_axis_mask=sm)
    sliced = tf.raw_ops.StridedSlice(input=t4, **kw).numpy()
    add("StridedSlice", [t4], attrs, lambda t, kw=kw: tf.raw_ops.StridedSlice(input=t, **kw))
    add("StridedSliceGrad", [rand(*sliced.shape)], {**attrs, "shape": ("li", t4.shape)},
        lambda d, kw=kw: tf.raw_ops.StridedSliceGrad(shape=list(t4.shape), dy=d, **kw))

# ---- ops of Keras' modern layers: activations, gather/segment sums, batched matmul, dilated and
# depthwise convolutions, and Troupe's graph gradients of them against tf.GradientTape ---------
# (cases named "grad:OP:i,j" run Troupe's registered gradient of OP w.r.t. inputs i, j; their last
# input is the output gradient).
EXACT_OPS = {"GatherV2", "UnsortedSegmentSum", "grad:GatherV2:0", "grad:UnsortedSegmentSum:0",
             "BroadcastTo", "grad:Sum:0", "grad:Mean:0"}


def add_grad(op, inputs, attrs, tf_fn, wrt, tag=""):
    """Troupe's gradient of op (inputs[wrt]) vs tf.GradientTape over tf_fn, seeded by a random
    output gradient."""
    y = tf_fn(*[tf.constant(x) for x in inputs])
    seed = rand(*y.shape, dtype=inputs[0].dtype if inputs[0].dtype.kind == "f" else np.float32)

    def expected(*ts):
        xs, w = list(ts[:-1]), ts[-1]
        with tf.GradientTape() as tape:
            for i in wrt:
                tape.watch(xs[i])
            out = tf_fn(*xs)
        grads = tape.gradient(out, [xs[i] for i in wrt], output_gradients=w)
        return [tf.convert_to_tensor(g) for g in grads]  # IndexedSlices -> dense (Gather)
    add("grad:%s:%s" % (op, ",".join(str(i) for i in wrt)), list(inputs) + [seed], attrs,
        expected, tag)


xa = rand(8, 50, lo=-4, hi=4)
x6 = rand(8, 50, lo=-3, hi=9)
dya = rand(8, 50)
add("Erf", [xa], {}, lambda t: tf.raw_ops.Erf(x=t))
add("Erf", [rand(6, 7, lo=-5, hi=5, dtype=np.float64)], {}, lambda t: tf.raw_ops.Erf(x=t), "_f64")
add("Elu", [xa], {}, lambda t: tf.raw_ops.Elu(features=t))
add("Relu6", [x6], {}, lambda t: tf.raw_ops.Relu6(features=t))
add("EluGrad", [dya, tf.raw_ops.Elu(features=xa).numpy()], {},
    lambda g, o: tf.raw_ops.EluGrad(gradients=g, outputs=o))
add("Relu6Grad", [dya, x6], {}, lambda g, f: tf.raw_ops.Relu6Grad(gradients=g, features=f))
for alpha in (0.2, 0.01, 1.5):
    add("LeakyRelu", [xa], {"alpha": ("f", alpha)},
        lambda t, a=alpha: tf.raw_ops.LeakyRelu(features=t, alpha=a))
    add("LeakyReluGrad", [dya, xa], {"alpha": ("f", alpha)},
        lambda g, f, a=alpha: tf.raw_ops.LeakyReluGrad(gradients=g, features=f, alpha=a))
add("LeakyRelu", [rand(4, 5, dtype=np.float64)], {"alpha": ("f", 0.3)},
    lambda t: tf.raw_ops.LeakyRelu(features=t, alpha=0.3), "_f64")
add_grad("Erf", [xa], {}, lambda t: tf.math.erf(t), [0])
# BroadcastTo (a copy) and the reduction gradients built on it (Mean divides, then copies): the
# same bits as TF's tile-and-divide.
for src, dst in [((6,), (4, 5, 6)), ((4, 1, 6), (4, 5, 6)), ((), (3, 2)), ((1, 1, 1, 16), (8, 7, 7, 16))]:
    add("BroadcastTo", [rand(*src)], {"shape": ("li", list(dst))},
        lambda t, dst=dst: tf.raw_ops.BroadcastTo(input=t, shape=list(dst)))
rb = rand(8, 7, 7, 16)
for op, fn in [("Sum", tf.reduce_sum), ("Mean", tf.reduce_mean)]:
    for axis, keep in [([0, 1, 2], True), ([0, 1, 2], False), ([3], False)]:
        add_grad(op, [rb], {"axis": ("li", axis), "keep_dims": ("b", keep)},
                 lambda t, fn=fn, axis=axis, keep=keep: fn(t, axis=axis, keepdims=keep), [0],
                 "_%s_%d" % ("".join(map(str, axis)), keep))
add_grad("Elu", [xa], {}, lambda t: tf.nn.elu(t), [0])
add_grad("Relu6", [x6], {}, lambda t: tf.nn.relu6(t), [0])
add_grad("LeakyRelu", [xa], {"alpha": ("f", 0.1)}, lambda t: tf.nn.leaky_relu(t, alpha=0.1), [0])
# Exact GELU as Keras writes it: 0.5 * x * (1 + erf(x / sqrt(2))), through Erf's gradient.
add_grad("Erf", [xa / np.float32(np.sqrt(2))], {}, lambda t: tf.math.erf(t), [0], "_gelu")

params = rand(10, 4, 3)
for idx in (np.array([[3, 0, 9, 3, 3], [1, 1, 0, 8, 2]], np.int32),
            np.array([7, 7, 2, 0, 9, 7, 1], np.int64), np.array(4, np.int32)):
    attrs = {"axis": ("i", 0), "batch_dims": ("i", 0)}
    add("GatherV2", [params, idx], attrs,
        lambda p, i: tf.raw_ops.GatherV2(params=p, indices=i, axis=0))
    add_grad("GatherV2", [params, idx], attrs, lambda p, i: tf.gather(p, i), [0])
add("GatherV2", [rng.integers(-9, 9, (6, 2)).astype(np.int32), np.array([5, 0, 5], np.int32)],
    {"axis": ("i", 0)}, lambda p, i: tf.raw_ops.GatherV2(params=p, indices=i, axis=0), "_i32")
seg_data = rand(12, 5, lo=-100, hi=100)
for ids, num in ((np.array([2, 0, 2, -1, 0, 5, 5, 5, 1, 2, 0, 3], np.int32), 6),
                 (np.array([3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3], np.int64), 4)):
    add("UnsortedSegmentSum", [seg_data, ids], {"num_segments": ("i", num)},
        lambda d, i, num=num: tf.raw_ops.UnsortedSegmentSum(data=d, segment_ids=i,
                                                            num_segments=num))
    add_grad("UnsortedSegmentSum", [seg_data, ids], {"num_segments": ("i", num)},
             lambda d, i, num=num: tf.math.unsorted_segment_sum(d, i, num), [0])
add("UnsortedSegmentSum", [rand(3, 4, 2), rng.integers(0, 5, (3, 4)).astype(np.int32)],
    {"num_segments": ("i", 5)},
    lambda d, i: tf.raw_ops.UnsortedSegmentSum(data=d, segment_ids=i, num_segments=5), "_2d")

BMM = [  # (x, y, adj_x, adj_y)
    ((48, 64, 32), (48, 32, 64), False, False),  # 12 batches x 4 heads of attention
    ((2, 4, 16, 8), (2, 4, 16, 8), False, True),  # q k^T
    ((2, 4, 8, 16), (2, 4, 8, 5), True, False),
    ((3, 6, 5), (3, 7, 6), True, True),
    ((2, 1, 5, 6), (3, 6, 4), False, False),  # batch broadcast both ways
    ((5, 6), (2, 3, 6, 4), False, False),  # unbatched x
    ((70, 9), (9, 3), False, False),
]
for xs, ys, ax, ay in BMM:
    attrs = {"adj_x": ("b", ax), "adj_y": ("b", ay)}
    xin, yin = rand(*xs), rand(*ys)
    add("BatchMatMulV2", [xin, yin], attrs,
        lambda p, q, ax=ax, ay=ay: tf.raw_ops.BatchMatMulV2(x=p, y=q, adj_x=ax, adj_y=ay))
    add_grad("BatchMatMulV2", [xin, yin], attrs,
             lambda p, q, ax=ax, ay=ay: tf.linalg.matmul(p, q, adjoint_a=ax, adjoint_b=ay), [0, 1])
add("BatchMatMulV2", [rand(2, 3, 4, dtype=np.float64), rand(4, 5, dtype=np.float64)], {},
    lambda p, q: tf.raw_ops.BatchMatMulV2(x=p, y=q), "_f64")


def inflate(f, dh, dw):
    """A [kh, kw, ...] filter with dilation (dh, dw) as the equivalent undilated filter (zeros
    between the taps), differentiable, so dilated references need only TF's undilated kernels
    (TF's own CPU backprops refuse dilations without oneDNN)."""
    kh, kw = f.shape[0], f.shape[1]
    rest = list(f.shape[2:])
    g = tf.reshape(f, [kh, 1, kw, 1] + rest)
    g = tf.pad(g, [[0, 0], [0, dh - 1], [0, 0], [0, dw - 1]] + [[0, 0]] * len(rest))
    g = tf.reshape(g, [kh * dh, kw * dw] + rest)
    return g[:(kh - 1) * dh + 1, :(kw - 1) * dw + 1]


def conv_ref(op, x, f, s, pad, d):
    if op == "Conv2D":
        return tf.nn.conv2d(x, inflate(f, d[1], d[2]), s, pad)
    return tf.nn.depthwise_conv2d(x, inflate(f, d[1], d[2]), s, pad)


def add_conv_family(op, xs, fs, s, pad, d, tag=""):
    """Forward, both backprops (raw Troupe kernels) and Troupe's graph gradient of op, against
    TF with the dilation folded into an inflated filter."""
    xin, f = rand(*xs), rand(*fs)
    attrs = {"strides": ("li", s), "padding": ("s", pad), "dilations": ("li", d)}
    add(op, [xin, f], attrs, lambda p, q: conv_ref(op, p, q, s, pad, d), tag)
    g = rand(*conv_ref(op, xin, f, s, pad, d).shape)

    def grads(p, q, dd):
        with tf.GradientTape() as tape:
            tape.watch([p, q])
            out = conv_ref(op, p, q, s, pad, d)
        return tape.gradient(out, [p, q], output_gradients=dd)
    back = "Conv2DBackprop" if op == "Conv2D" else "DepthwiseConv2dNativeBackprop"
    add(back + "Input", [f, g], {**attrs, "input_sizes": ("li", xs)},
        lambda q, dd: grads(tf.constant(xin, q.dtype), q, dd)[0], tag)
    add(back + "Filter", [xin, g], {**attrs, "filter_sizes": ("li", fs)},
        lambda p, dd: grads(p, tf.constant(f, p.dtype), dd)[1], tag)
    add_grad(op, [xin, f], attrs, lambda p, q: conv_ref(op, p, q, s, pad, d), [0, 1], tag)


for xs, fs, s, pad, d in [
        ((2, 9, 9, 3), (3, 3, 3, 4), [1, 1, 1, 1], "SAME", [1, 2, 2, 1]),
        ((2, 11, 10, 4), (3, 2, 4, 8), [1, 2, 1, 1], "VALID", [1, 2, 3, 1]),
        ((1, 12, 12, 2), (3, 3, 2, 16), [1, 2, 2, 1], "SAME", [1, 3, 3, 1]),
        ((2, 8, 8, 1), (3, 3, 1, 6), [1, 1, 1, 1], "SAME", [1, 2, 2, 1])]:
    add_conv_family("Conv2D", xs, fs, s, pad, d, "_dilated")
for xs, fs, s, pad, d in [
        ((4, 16, 16, 32), (3, 3, 32, 1), [1, 1, 1, 1], "SAME", [1, 1, 1, 1]),
        ((2, 9, 9, 3), (3, 3, 3, 2), [1, 2, 2, 1], "SAME", [1, 1, 1, 1]),
        ((2, 8, 7, 5), (2, 3, 5, 3), [1, 1, 1, 1], "VALID", [1, 1, 1, 1]),
        ((2, 10, 10, 37), (3, 3, 37, 1), [1, 2, 2, 1], "VALID", [1, 1, 1, 1]),
        ((2, 10, 9, 8), (3, 3, 8, 2), [1, 1, 1, 1], "SAME", [1, 2, 2, 1]),
        ((1, 11, 11, 4), (3, 2, 4, 1), [1, 2, 2, 1], "VALID", [1, 2, 3, 1])]:
    add_conv_family("DepthwiseConv2dNative", xs, fs, s, pad, d)
xin, f = rand(2, 7, 7, 3, dtype=np.float64), rand(3, 3, 3, 2, dtype=np.float64)
add("DepthwiseConv2dNative", [xin, f], {"strides": ("li", [1, 1, 1, 1]), "padding": ("s", "SAME")},
    lambda p, q: tf.raw_ops.DepthwiseConv2dNative(input=p, filter=q, strides=[1, 1, 1, 1],
                                                  padding="SAME"), "_f64")
# Bad indices: both fail, and Troupe's InvalidArgument carries TF's message.
add("GatherV2", [rand(5, 2), np.array([[0, 4], [5, 1]], np.int32)], {"axis": ("i", 0)},
    lambda p, i: tf.raw_ops.GatherV2(params=p, indices=i, axis=0), "_bad_index")
error_cases.add(cases[-1][0])
add("UnsortedSegmentSum", [rand(4, 3), np.array([0, 1, 3, 2], np.int32)],
    {"num_segments": ("i", 3)},
    lambda d, i: tf.raw_ops.UnsortedSegmentSum(data=d, segment_ids=i, num_segments=3), "_bad_id")
error_cases.add(cases[-1][0])
# The raw TF op itself (undilated), not only the tf.nn reference.
xin, f = rand(2, 8, 8, 6), rand(3, 3, 6, 2)
add("DepthwiseConv2dNative", [xin, f], {"strides": ("li", [1, 1, 1, 1]), "padding": ("s", "SAME")},
    lambda p, q: tf.raw_ops.DepthwiseConv2dNative(input=p, filter=q, strides=[1, 1, 1, 1],
                                                  padding="SAME"), "_raw")


if __name__ == "__main__":
    kernel_check.main("kernels_tf_test", cases, error_cases, EXACT_OPS)
