"""The Python twin of channel_scale.cc: import it before building or loading a Keras model
that uses ChannelScale (keras.models.model_from_json, tf.train.Checkpoint restores)."""
import keras


@keras.saving.register_keras_serializable(package="custom_model")
class ChannelScale(keras.layers.Layer):
    """y = x * scale, one trainable scale per channel (the last dimension), ones at first."""

    def build(self, input_shape):
        self.scale = self.add_weight(name="scale", shape=(input_shape[-1],),
                                     initializer="ones")

    def call(self, x):
        return x * self.scale
