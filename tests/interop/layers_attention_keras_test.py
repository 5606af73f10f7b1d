#!/usr/bin/env python3
"""Keras attention layers against Keras 3 (TF): Attention (score_mode dot / concat, use_scale,
causal mask, key given or not, dropout in inference and training), AdditiveAttention (with and
without scale, causal), and MultiHeadAttention with attention_axes (rank-4 inputs: attention
over one axis or over two axes, dropout, causal)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers_keras_test import refusal as shared_refusal  # noqa: E402
from layers_keras_test import BIN, Case, L, finish, np, run_case, run_cases, tf  # noqa: E402

# A Keras [batch, time] query mask for (2, 4, ...) queries (the driver takes input 0's mask).
QMASK = [[1, 1, 0, 1], [0, 1, 1, 1]]


def as_list(causal=False):
    if causal:
        return lambda layer, xs, t: layer(list(xs), training=t, use_causal_mask=True)
    return lambda layer, xs, t: layer(list(xs), training=t)


def with_query_mask(causal=False):
    def call(layer, xs, t):
        m = [tf.constant(QMASK) > 0, None]
        return layer(list(xs), mask=m, training=t, use_causal_mask=causal)
    return call


def mha_query_mask(causal=False):
    def call(layer, xs, t):
        q = xs[0]
        q._keras_mask = tf.constant(QMASK) > 0  # what Embedding(mask_zero=True) would attach
        return layer(*xs, training=t, use_causal_mask=causal)
    return call


def mha(causal=False):
    if causal:
        return lambda layer, xs, t: layer(*xs, training=t, use_causal_mask=True)
    return lambda layer, xs, t: layer(*xs, training=t)


def scale_weights(var, rng):
    import numpy as np  # noqa: F401
    return rng.normal(1.0, 0.3, var.shape)


KEY_BIAS = {"grad_w_3": "grad_w_2"}


def cases():
    qv = [(2, 4, 3), (2, 5, 3)]
    qvk = [(2, 4, 3), (2, 5, 6), (2, 5, 3)]
    return [
        Case("attention_dot", lambda: L.Attention(), qv, call=as_list()),
        Case("attention_dot_key", lambda: L.Attention(), qvk, call=as_list()),
        Case("attention_dot_scale", lambda: L.Attention(use_scale=True), qv, call=as_list(),
             weight_fn=scale_weights),
        Case("attention_dot_causal", lambda: L.Attention(use_scale=True),
             [(2, 5, 3), (2, 5, 3)], causal=True, call=as_list(True), weight_fn=scale_weights),
        Case("attention_concat", lambda: L.Attention(score_mode="concat"), qv, call=as_list(),
             weight_fn=scale_weights),
        Case("attention_concat_scale_key",
             lambda: L.Attention(score_mode="concat", use_scale=True), qvk, call=as_list(),
             weight_fn=scale_weights),
        Case("attention_concat_causal", lambda: L.Attention(score_mode="concat"),
             [(2, 4, 3), (2, 6, 3)], causal=True, call=as_list(True), weight_fn=scale_weights),
        Case("attention_dropout_inference", lambda: L.Attention(dropout=0.4, seed=3), qv,
             call=as_list()),
        Case("attention_dropout_training", lambda: L.Attention(dropout=0.4, seed=3), qv,
             training=True, call=as_list()),
        Case("attention_query_mask", lambda: L.Attention(use_scale=True), qv,
             call=with_query_mask(), driver_call={"mask": QMASK}, weight_fn=scale_weights),
        Case("additive_query_mask_causal", lambda: L.AdditiveAttention(),
             [(2, 4, 3), (2, 4, 3)], causal=True, call=with_query_mask(True),
             driver_call={"mask": QMASK}),
        Case("attention_rank4_causal", lambda: L.Attention(), [(2, 3, 4, 5), (2, 3, 4, 5)],
             causal=True, call=as_list(True)),
        Case("attention_concat_rank4", lambda: L.Attention(score_mode="concat", use_scale=True),
             [(2, 3, 4, 5), (2, 3, 6, 5)], call=as_list(), weight_fn=scale_weights),
        Case("additive_rank4_key", lambda: L.AdditiveAttention(),
             [(2, 3, 4, 5), (2, 3, 6, 2), (2, 3, 6, 5)], call=as_list()),
        Case("additive", lambda: L.AdditiveAttention(), qv, call=as_list()),
        Case("additive_noscale_key", lambda: L.AdditiveAttention(use_scale=False), qvk,
             call=as_list()),
        Case("additive_causal", lambda: L.AdditiveAttention(), [(2, 5, 3), (2, 5, 3)],
             causal=True, call=as_list(True)),
        # MultiHeadAttention with a Keras mask on the query (fused and einsum paths).
        Case("mha_query_mask", lambda: L.MultiHeadAttention(2, 3),
             [(2, 4, 5), (2, 6, 5)], call=mha_query_mask(), driver_call={"mask": QMASK},
             zero_grads=KEY_BIAS),
        Case("mha_query_mask_causal_dropout", lambda: L.MultiHeadAttention(2, 3, dropout=0.2),
             [(2, 4, 5), (2, 4, 5)], causal=True, call=mha_query_mask(True),
             driver_call={"mask": QMASK}, zero_grads=KEY_BIAS),
        # MultiHeadAttention with attention_axes on rank-4 inputs (B, X, Y, D).
        Case("mha_axes_default_rank4", lambda: L.MultiHeadAttention(2, 3),
             [(2, 3, 4, 5), (2, 3, 4, 5)], call=mha(), zero_grads=KEY_BIAS),
        Case("mha_axes_1", lambda: L.MultiHeadAttention(2, 3, attention_axes=1),
             [(2, 3, 4, 5), (2, 3, 4, 5)], call=mha(), zero_grads=KEY_BIAS),
        Case("mha_axes_2_cross", lambda: L.MultiHeadAttention(2, 3, attention_axes=[2],
                                                              value_dim=4, output_shape=6),
             [(2, 3, 4, 5), (2, 3, 6, 7), (2, 3, 6, 5)], call=mha(), zero_grads=KEY_BIAS),
        Case("mha_axes_m2", lambda: L.MultiHeadAttention(2, 3, attention_axes=-2),
             [(2, 3, 4, 5), (2, 3, 4, 5)], call=mha(), zero_grads=KEY_BIAS),
        Case("mha_axes_12_cross", lambda: L.MultiHeadAttention(2, 3, attention_axes=(1, 2)),
             [(2, 3, 4, 5), (2, 2, 5, 5)], call=mha(), zero_grads=KEY_BIAS),
        Case("mha_axes_13_rank5", lambda: L.MultiHeadAttention(2, 2, attention_axes=(1, 3)),
             [(2, 3, 2, 4, 3), (2, 3, 2, 4, 3)], call=mha(), zero_grads=KEY_BIAS),
        Case("mha_axes_1_causal", lambda: L.MultiHeadAttention(2, 3, attention_axes=1),
             [(2, 4, 3, 5), (2, 4, 3, 5)], causal=True, call=mha(True), zero_grads=KEY_BIAS),
        Case("mha_axes_2_dropout_training",
             lambda: L.MultiHeadAttention(2, 3, attention_axes=2, dropout=0.3, seed=4),
             [(2, 3, 4, 5), (2, 3, 4, 5)], training=True, call=mha(), zero_grads=KEY_BIAS),
        Case("mha_axis1_rank3_explicit", lambda: L.MultiHeadAttention(2, 4, attention_axes=1),
             [(2, 5, 6), (2, 5, 6)], call=mha(), zero_grads=KEY_BIAS),
    ]


def refusal(name, layer, shapes, want, causal=False):
    layer(*[tf.zeros(s) for s in shapes])  # build as Keras would (attention_axes, shapes)
    return shared_refusal(name, layer, shapes, want, call={"use_causal_mask": causal})


def refusals():
    f = []
    f += refusal("mha_causal_axis2", L.MultiHeadAttention(2, 3, attention_axes=2),
                 [(2, 3, 4, 5), (2, 3, 4, 5)], "use_causal_mask with attention over axes",
                 causal=True)
    f += refusal("mha_gate", L.MultiHeadAttention(2, 3, use_gate=True),
                 [(2, 4, 5), (2, 4, 5)], "use_gate")
    return f


if __name__ == "__main__":
    failures = run_cases(cases(), sys.argv[1:])
    if not sys.argv[1:]:
        failures += refusals()
        # Negative control: concat scores where Keras computes dot scores must not match.
        def edit(env):
            env["config"]["score_mode"] = "concat"
        problems = run_case(Case("control", lambda: L.Attention(score_mode="dot"),
                                 [(2, 4, 3), (2, 5, 3)], call=as_list(), config_edit=edit), 99)
        print(f"  {'ok' if problems else 'FAIL':4} negative control (concat for dot differs)")
        if not problems:
            failures.append("negative control: concat attention matched dot")
    finish(failures)
