// keras.layers.Embedding: a trainable [input_dim, output_dim] table ("embeddings") looked up by
// integer ids; non-integer ids are cast to int32 and negative ids wrap (i + input_dim), as
// Keras' TF backend take() does. The lookup is GatherV2 (an out-of-range id is an error), whose
// gradient sums the rows of repeated ids (what Keras' densified IndexedSlices hold).
#pragma once

#include <string>

#include "graph/nn/initializers.h"
#include "graph/nn/module.h"

namespace troupe::nn {

struct EmbeddingOptions {
  Initializer embeddings_initializer;  // default RandomUniform(-0.05, 0.05, NextDefaultSeed())
  bool trainable = true;
};

class Embedding : public Layer {
 public:
  Embedding(std::string name, int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
  const Variable& embeddings() const { return embeddings_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& ids, bool training) override;

 private:
  int64_t input_dim_, output_dim_;
  EmbeddingOptions options_;
  Variable embeddings_;
};

// troupe>PositionEmbedding (tests/interop/troupe_keras.py defines it for Keras): inputs
// [batch, time, width] plus rows 0..time-1 of a learned [sequence_length, width] table
// "embeddings" (initialized like Embedding).
class PositionEmbedding : public Layer {
 public:
  PositionEmbedding(std::string name, int64_t sequence_length, EmbeddingOptions options = {});
  const Variable& embeddings() const { return embeddings_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  int64_t sequence_length_;
  EmbeddingOptions options_;
  Variable embeddings_;
};

}  // namespace troupe::nn
