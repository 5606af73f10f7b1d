// Keras recurrent layers (SimpleRNN, LSTM, GRU) with Keras 3's TF-backend numerics.
//
// Design: the layer is unrolled over the static time dimension with existing ops (MatMul, Add,
// Slice, Sigmoid/Tanh, Mul, Unpack, Pack), so its gradient comes from autodiff and every op is
// one of the deterministic kernels. The input projection x @ kernel is one [batch*time, in]
// matmul for all steps (the same dot products as Keras' per-step matmul); each step then
// follows Keras' cell op for op:
//   SimpleRNN: h = act((x W + b) + h U)
//   LSTM:      z = (x W + h U) + b, split i, f, c, o;  c = f c + i act(z_c);  h = o act(c)
//   GRU:       x W + b_in; reset_after: (h U + b_rec), h~ = act(x_h + r (h U_h + b_h));
//              else h~ = act(x_h + (r h) U_h);  h = z h + (1 - z) h~
// (recurrent activations: sigmoid by default). Step 0 starts from zero states, where Keras'
// h U and f c add exact zeros; they are skipped (the same bits).
// Variables: a child module named like Keras' cell ("lstm_cell") holds "kernel",
// "recurrent_kernel" and "bias" (GRU reset_after: bias [2, 3 units]).
// Masks ([batch, time], bool or float; nonzero = keep) follow keras/src/backend/tensorflow/
// rnn.py: a masked step keeps the previous states and outputs the previous output (zeros when
// zero_output_for_mask).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/nn/activations.h"
#include "graph/nn/initializers.h"
#include "graph/nn/module.h"

namespace troupe::nn {

enum class RecurrentKind { kSimpleRNN, kLSTM, kGRU };

struct RecurrentOptions {
  RecurrentKind kind = RecurrentKind::kLSTM;
  int64_t units = 0;
  ActivationFn activation;            // default tanh
  ActivationFn recurrent_activation;  // default sigmoid (LSTM, GRU)
  bool use_bias = true;
  Initializer kernel_initializer;     // default GlorotUniform(NextDefaultSeed())
  Initializer recurrent_initializer;  // default Orthogonal(1, NextDefaultSeed())
  Initializer bias_initializer;       // default zeros
  bool unit_forget_bias = true;       // LSTM: the forget gate's bias starts at 1
  bool reset_after = true;            // GRU
  bool return_sequences = false;
  bool go_backwards = false;  // steps run last to first; sequences come out in that order
  bool zero_output_for_mask = false;
  bool trainable = true;
  // Keras' DropoutRNNCell: one mask per call, drawn from the layer's SeedGenerator
  // ("seed_generator_state") on every call (inference too, as Keras), applied when training:
  // x * mask before x W; SimpleRNN also h * recurrent mask before h U. (LSTM and GRU switch to
  // their split-kernel implementation with recurrent_dropout; the Keras factory refuses that.)
  double dropout = 0;
  double recurrent_dropout = 0;
  std::optional<int64_t> seed;  // default NextDefaultSeed()
};

// The cell: holds the variables (Keras' LSTMCell etc.).
class RecurrentCell : public Module {
 public:
  using Module::Module;
  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  friend class Recurrent;
  Variable kernel_, recurrent_kernel_, bias_;
};

class Recurrent : public Layer {
 public:
  Recurrent(std::string name, RecurrentOptions options);
  const RecurrentCell& cell() const { return cell_; }
  const RecurrentOptions& options() const { return options_; }
  // "lstm_cell", "gru_cell", "simple_rnn_cell".
  static std::string CellName(RecurrentKind kind);
  // Runs on x [batch, time, features] with an optional mask [batch, time] (undefined: none);
  // builds on the first call.
  Value CallMasked(const Value& x, const Value& mask, bool training);

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  int64_t gates() const;
  // tf.nn.experimental.stateless_dropout(ones(shape), rate, seed=next seed); `dims`: the
  // static shape (-1 unknown).
  Value DropoutMask(const Value& shape, const std::vector<int64_t>& dims, double rate);
  RecurrentOptions options_;
  RecurrentCell cell_;
  Variable seed_state_;
};

}  // namespace troupe::nn
