"""Writes fashion_mobilenetv3.json: keras.applications.MobileNetV3Small (untrained, 10 classes,
32x32x3 input) as a nested model inside a Functional wrapper that adapts 28x28x1 Fashion-MNIST
images to it, for examples/fashion_mobilenetv3.toml.

    ~/.cache/troupe/venv/bin/python examples/make_fashion_mobilenetv3.py

The wrapper is Input(28, 28, 1) -> ZeroPadding2D(2) -> Conv2D(3, 1) (a learned gray-to-RGB
mapping) -> MobileNetV3Small (its own Dense softmax over the 10 classes). The Functional
MobileNetV3Small sits inside a one-layer Sequential ("backbone"), so the model nests two deep
(calling the backbone directly, `backbone(x)`, loads as well).
--minimalistic (the default; --no-minimalistic for the full model) selects the minimalistic variant:
no squeeze-and-excite, ReLU instead of hard-swish, 3x3 kernels only, fewer parameters and faster.
"""
import argparse
import os

import keras

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--minimalistic", action=argparse.BooleanOptionalAction, default=True)
parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "fashion_mobilenetv3.json"))
args = parser.parse_args()

L = keras.layers
backbone = keras.applications.MobileNetV3Small(
    input_shape=(32, 32, 3), weights=None, classes=10, include_preprocessing=False,
    minimalistic=args.minimalistic)
inputs = keras.Input((28, 28, 1), name="image")
x = L.ZeroPadding2D(2, name="pad")(inputs)  # 32x32x1
x = L.Conv2D(3, 1, name="to_rgb")(x)  # 32x32x3
outputs = keras.Sequential([backbone], name="backbone")(x)
model = keras.Model(inputs, outputs, name="fashion_mobilenetv3")
with open(args.out, "w") as fh:
    fh.write(model.to_json())
print(f"{args.out}: minimalistic={args.minimalistic}, {model.count_params()} parameters")
