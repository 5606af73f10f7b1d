// Keras losses with the default reduction "sum_over_batch_size": divide_no_nan(sum of the
// per-example losses, batch size). Gradients therefore reach the logits scaled by f32(1/N),
// exactly as in Keras.
#pragma once

#include "graph/value.h"

namespace troupe::nn {

// Integer labels [N] (or [N, 1]) and logits (from_logits) or probabilities [N, C].
Value SparseCategoricalCrossentropy(const Value& labels, const Value& predictions,
                                    bool from_logits = true);
// Per-example losses of the above, before the reduction.
Value SparseCategoricalCrossentropyPerExample(const Value& labels, const Value& predictions,
                                              bool from_logits = true);
Value MeanSquaredError(const Value& y_true, const Value& y_pred);

// Keras' SparseCategoricalAccuracy of one batch: mean of (argmax(pred) == label).
Value SparseCategoricalAccuracy(const Value& labels, const Value& predictions);

}  // namespace troupe::nn
