# Prints the Keras reference values that tests/graph/nn_test.cc (LabelSmoothingMatchesKeras,
# InTopKMatchesKeras) hard-codes. Run with the venv python that has TensorFlow and Keras 3.
import os; os.environ["TF_CPP_MIN_LOG_LEVEL"]="3"
import numpy as np, tensorflow as tf, keras
rng = np.random.default_rng(7)
logits = rng.normal(size=(4, 6)).astype(np.float32) * 3
labels = np.array([2, 0, 5, 3], np.int32)
print("logits", ", ".join(f"{v:.9g}f" for v in logits.ravel()))
for ls in (0.1, 0.35):
    x = tf.Variable(logits)
    with tf.GradientTape() as t:
        l = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=ls)(tf.one_hot(labels, 6), x)
    g = t.gradient(l, x).numpy()
    print(ls, "loss %.9g" % l.numpy(), "grad", ", ".join(f"{v:.9g}f" for v in g.ravel()))
# top-k with ties at the boundary and a non-finite row
p = np.array([[1, 2, 3, 4, 5, 6, 7], [5, 5, 5, 5, 5, 5, 5], [7, 6, 5, 4, 3, 3, 3], [1, 1, 1, 1, 1, 1, np.inf], [0, 9, 8, 7, 6, 5, 4]], np.float32)
y = np.array([1, 3, 5, 0, 0], np.int32)
print("top5", keras.metrics.sparse_top_k_categorical_accuracy(y, p, k=5).numpy())
m = keras.metrics.SparseTopKCategoricalAccuracy(k=5); m.update_state(y, p); print("metric", m.result().numpy())
print("in_top_k", tf.math.in_top_k(y, p, 5).numpy())
