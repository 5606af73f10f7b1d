"""Writes fashion_unet.json: a small U-Net-style classifier for 28x28x1 Fashion-MNIST, for
examples/fashion_unet.toml.

    ~/.cache/troupe/venv/bin/python examples/make_fashion_unet.py

Encoder: two Conv2D + MaxPooling2D stages (28 -> 14 -> 7), a bottleneck Conv2D at 7x7, then a
decoder of Conv2DTranspose(strides=2) upsamplings, each concatenated with the encoder feature map
of the same size (skip connections) and refined by a Conv2D, back to 28x28; then
GlobalAveragePooling2D and Dense(10, softmax).
"""
import argparse
import os

import keras

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--filters", type=int, default=16, help="filters of the first stage")
parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "fashion_unet.json"))
args = parser.parse_args()

L = keras.layers
f = args.filters
inputs = keras.Input((28, 28, 1), name="image")
e1 = L.Conv2D(f, 3, padding="same", activation="relu", name="enc1_conv")(inputs)  # 28x28xf
x = L.MaxPooling2D(2, name="enc1_pool")(e1)  # 14x14
e2 = L.Conv2D(2 * f, 3, padding="same", activation="relu", name="enc2_conv")(x)  # 14x14x2f
x = L.MaxPooling2D(2, name="enc2_pool")(e2)  # 7x7
x = L.Conv2D(4 * f, 3, padding="same", activation="relu", name="bottleneck")(x)  # 7x7x4f
x = L.Conv2DTranspose(2 * f, 2, strides=2, padding="same", name="dec2_up")(x)  # 14x14
x = L.Concatenate(name="dec2_skip")([x, e2])
x = L.Conv2D(2 * f, 3, padding="same", activation="relu", name="dec2_conv")(x)
x = L.Conv2DTranspose(f, 2, strides=2, padding="same", name="dec1_up")(x)  # 28x28
x = L.Concatenate(name="dec1_skip")([x, e1])
x = L.Conv2D(f, 3, padding="same", activation="relu", name="dec1_conv")(x)
x = L.GlobalAveragePooling2D(name="pool")(x)
outputs = L.Dense(10, activation="softmax", name="classes")(x)
model = keras.Model(inputs, outputs, name="fashion_unet")
with open(args.out, "w") as fh:
    fh.write(model.to_json())
print(f"{args.out}: {model.count_params()} parameters")
