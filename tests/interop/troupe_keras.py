"""Troupe's own Keras layers, registered so keras.models.model_from_json reads the JSON of
models that use them (transformer_lm): import this module before loading such a model.

PositionEmbedding(sequence_length): inputs [batch, time, width] plus a learned table of
`sequence_length` rows (rows 0..time-1), initialized like keras.layers.Embedding ("uniform").
Its weight is `embeddings` [sequence_length, width], as Troupe's layer holds it.
"""
import keras


@keras.saving.register_keras_serializable(package="troupe")
class PositionEmbedding(keras.layers.Layer):
    def __init__(self, sequence_length, embeddings_initializer="uniform", **kwargs):
        super().__init__(**kwargs)
        self.sequence_length = int(sequence_length)
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            name="embeddings", shape=(self.sequence_length, input_shape[-1]),
            initializer=self.embeddings_initializer)

    def call(self, inputs):
        length = inputs.shape[1]
        table = self.embeddings if length == self.sequence_length else self.embeddings[:length]
        return inputs + table

    def get_config(self):
        config = super().get_config()
        config.update(sequence_length=self.sequence_length,
                      embeddings_initializer=keras.initializers.serialize(
                          self.embeddings_initializer))
        return config
