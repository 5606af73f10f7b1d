# Writes small.weights.h5 (for tests/checkpoint/keras_weights_h5_test.cc and
# tests/train/keras_weights_init_test.cc) and the model's JSON small.json with Keras 3 (TF 2.21
# venv): a Functional model with Dense, BatchNormalization and MultiHeadAttention, every weight
# set to  w.flat[i] = layer_number * 100 + weight_number * 10 + i * 0.5  so the test can check
# values. Run: python make_testdata.py
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras
import numpy as np

inp = keras.Input((3, 4))
x = keras.layers.Dense(4, name="proj")(inp)
x = keras.layers.BatchNormalization(name="bn")(x)
x = keras.layers.MultiHeadAttention(num_heads=2, key_dim=2, name="att")(x, x)
model = keras.Model(inp, x)
for li, layer in enumerate(model.layers):
    values = []
    for wi, w in enumerate(layer.weights):
        n = int(np.prod(w.shape))
        values.append((li * 100 + wi * 10 + 0.5 * np.arange(n)).reshape(w.shape).astype("float32"))
    layer.set_weights(values)
model.save_weights("small.weights.h5")
with open("small.json", "w") as f:
    f.write(model.to_json())
print(keras.__version__, [(w.path, w.shape) for w in model.weights])
