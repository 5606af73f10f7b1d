"""Writes scaled_mlp.json: a Keras MLP for Fashion-MNIST with the example's own layer
(ChannelScale) between its dense layers.   python3 make_scaled_mlp.py"""
import os

import keras

from channel_scale import ChannelScale

L = keras.layers
inputs = keras.Input((28, 28, 1))
x = L.Dense(128, activation="relu")(L.Flatten()(inputs))
x = ChannelScale(name="channel_scale")(x)
model = keras.Model(inputs, L.Dense(10)(x), name="scaled_mlp")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "scaled_mlp.json"), "w") as f:
    f.write(model.to_json())
