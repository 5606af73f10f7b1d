// Keras losses with the default reduction "sum_over_batch_size": divide_no_nan(sum of the
// per-example losses, batch size). Gradients therefore reach the logits scaled by f32(1/N),
// exactly as in Keras.
#pragma once

#include "graph/value.h"

namespace troupe::nn {

// Label smoothing for the sparse categorical cross-entropy traced on this thread while the
// scope lives (train.label_smoothing): labels become one-hot y, then y * (1 - ls) + ls / C, and
// the loss is Keras' CategoricalCrossentropy(label_smoothing=ls) of them: -sum(y_s * log_softmax)
// per example (Keras 3's SparseCategoricalCrossentropy has no label_smoothing argument). Scopes
// nest; 0 (the default) is the plain sparse loss.
class LabelSmoothingScope {
 public:
  explicit LabelSmoothingScope(double label_smoothing);
  ~LabelSmoothingScope();
  LabelSmoothingScope(const LabelSmoothingScope&) = delete;
  LabelSmoothingScope& operator=(const LabelSmoothingScope&) = delete;
  static double Current();

 private:
  double previous_;
};

// Integer labels [N] (or [N, 1]) and logits (from_logits) or probabilities [N, C].
Value SparseCategoricalCrossentropy(const Value& labels, const Value& predictions,
                                    bool from_logits = true);
// Per-example losses of the above, before the reduction.
Value SparseCategoricalCrossentropyPerExample(const Value& labels, const Value& predictions,
                                              bool from_logits = true);

// The same over one-hot rows of integer `labels` [N] (or [N, 1]) and `predictions` [N, C]:
// Keras' categorical_crossentropy of to_categorical(labels). From probabilities Keras first
// renormalizes the rows (p / sum(p)), then clips to [1e-7, 1 - 1e-7]. Label smoothing as above.
Value CategoricalCrossentropy(const Value& labels, const Value& predictions, bool from_logits);
Value CategoricalCrossentropyPerExample(const Value& labels, const Value& predictions,
                                        bool from_logits);

// Keras' binary_crossentropy: `labels` cast to the predictions' dtype and brought to their rank
// (Keras' squeeze_or_expand_to_same_rank), then the mean over the last axis of
// tf.nn.sigmoid_cross_entropy_with_logits (from_logits) or of -(y log p + (1 - y) log(1 - p))
// with p clipped to [1e-7, 1 - 1e-7]. LabelSmoothingScope's ls makes y * (1 - ls) + ls / 2.
Value BinaryCrossentropy(const Value& labels, const Value& predictions, bool from_logits);
Value BinaryCrossentropyPerExample(const Value& labels, const Value& predictions, bool from_logits);

// Regression losses on `y_true` cast to y_pred's dtype and brought to its rank, each the mean
// over the last axis per example, then sum_over_batch_size (Keras' mean_squared_error,
// mean_absolute_error, huber with its delta: 0.5 e^2 where |e| <= delta, else
// delta |e| - 0.5 delta^2).
Value MeanSquaredError(const Value& y_true, const Value& y_pred);
Value MeanAbsoluteError(const Value& y_true, const Value& y_pred);
Value Huber(const Value& y_true, const Value& y_pred, double delta = 1.0);

// Keras' SparseCategoricalAccuracy of one batch: mean of (argmax(pred) == label).
Value SparseCategoricalAccuracy(const Value& labels, const Value& predictions);

// tf.math.in_top_k(labels, predictions, k) as float32 [N] (1: hit): label y of a row is in the
// top k when fewer than k classes score strictly more than class y, so ties at the boundary
// all count as in (tf.math.in_top_k's rule, which Keras 3's SparseTopKCategoricalAccuracy and
// sparse_top_k_categorical_accuracy call). A row holding a NaN or an infinity, or a label
// outside [0, C), is a miss. Predictions [N, C] with a static C; labels [N] (or [N, 1]).
Value InTopK(const Value& labels, const Value& predictions, int64_t k);

}  // namespace troupe::nn
