"""The zoo's LeNet-5 (graph/models) written in Keras 3, for the tests that restore Troupe's
LeNet checkpoints into Keras or train the two side by side. Under a mixed dtype policy set
before the call, its layers take that policy (as Keras builds under a global policy)."""
import keras


def keras_lenet():
    layers = keras.layers
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        layers.Conv2D(6, 5, padding="same", activation="relu"),
        layers.AveragePooling2D(2),
        layers.Conv2D(16, 5, padding="valid", activation="relu"),
        layers.AveragePooling2D(2),
        layers.Flatten(),
        layers.Dense(120, activation="relu"),
        layers.Dense(84, activation="relu"),
        layers.Dense(10),
    ])
