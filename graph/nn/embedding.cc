#include "graph/nn/embedding.h"

#include <vector>

#include "graph/nn/layer_util.h"
#include "graph/ops.h"
#include "graph/precision.h"

namespace troupe::nn {

Embedding::Embedding(std::string name, int64_t input_dim, int64_t output_dim,
                     EmbeddingOptions options)
    : Layer(std::move(name)),
      input_dim_(input_dim),
      output_dim_(output_dim),
      options_(std::move(options)) {
  if (!options_.embeddings_initializer) {
    options_.embeddings_initializer = RandomUniform(-0.05, 0.05, NextDefaultSeed());
  }
}

Status Embedding::BuildImpl(const TensorShape&) {
  if (input_dim_ <= 0 || output_dim_ <= 0) {
    return InvalidArgumentError("Embedding '" + name() +
                                "' needs positive input_dim and "
                                "output_dim, got " +
                                std::to_string(input_dim_) + ", " + std::to_string(output_dim_));
  }
  TROUPE_ASSIGN_OR_RETURN(embeddings_,
                          AddVariable("embeddings",
                                      internal::InitValue(options_.embeddings_initializer,
                                                          TensorShape{input_dim_, output_dim_}),
                                      options_.trainable));
  return Status::OK();
}

Value Embedding::Call(const Value& input, bool) {
  // Keras keeps the Embedding gather in float32.
  return KeepFloat32([&]() -> Value {
    Value ids = input;
    if (ids.dtype() != DType::kInt32 && ids.dtype() != DType::kInt64) {
      ids = ops::Cast(ids, DType::kInt32);
    }
    // Keras: where(i < 0, i + input_dim, i).
    Value zero = ops::ScalarOf(0, ids.dtype());
    ids = ops::Add(ids, ops::Mul(ops::Cast(ops::Less(ids, zero), ids.dtype()),
                                 ops::ScalarOf(input_dim_, ids.dtype())));
    // tf.gather; an id outside [-input_dim, input_dim) is an InvalidArgument error.
    return ops::Gather(embeddings_, ids);
  });
}

PositionEmbedding::PositionEmbedding(std::string name, int64_t sequence_length,
                                     EmbeddingOptions options)
    : Layer(std::move(name)), sequence_length_(sequence_length), options_(std::move(options)) {
  if (!options_.embeddings_initializer) {
    options_.embeddings_initializer = RandomUniform(-0.05, 0.05, NextDefaultSeed());
  }
}

Status PositionEmbedding::BuildImpl(const TensorShape& input_shape) {
  if (input_shape.rank() != 3 || input_shape.dim(2) < 0) {
    return InvalidArgumentError("PositionEmbedding '" + name() +
                                "' expects [batch, time, width] inputs with a known width, got " +
                                input_shape.ToString());
  }
  if (sequence_length_ <= 0) {
    return InvalidArgumentError("PositionEmbedding '" + name() +
                                "' needs a positive sequence_length");
  }
  TROUPE_ASSIGN_OR_RETURN(
      embeddings_,
      AddVariable("embeddings",
                  internal::InitValue(options_.embeddings_initializer,
                                      TensorShape{sequence_length_, input_shape.dim(2)}),
                  options_.trainable));
  return Status::OK();
}

Value PositionEmbedding::Call(const Value& x, bool) {
  const int64_t time = x.shape().dim(1);
  if (time < 0 || time > sequence_length_) {
    return Value::Error(InvalidArgumentError(
        "PositionEmbedding '" + name() + "' holds " + std::to_string(sequence_length_) +
        " positions; inputs need a known time dim of at most that, got " + x.shape().ToString()));
  }
  Value table = embeddings_;
  if (time != sequence_length_) {
    table = ops::Slice(table, {0, 0}, {time, embeddings_.shape().dim(1)});
  }
  return ops::Add(x, table);
}

}  // namespace troupe::nn
