// Test helpers shared by the collectives unit tests and the mpirun worker: deterministic inputs
// per (dtype, replica, element) with a wide exponent range (so a different summation order
// gives different bits), and serial references computed the obvious way, in replica-id order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/reduce.h"
#include "core/tensor.h"

namespace troupe::testing {

// The dtypes every collective supports.
const std::vector<DType>& CollectiveDTypes();
// Replica `replica`'s input: a tensor of `shape` whose values depend on (seed, replica, index).
Tensor MakeReplicaInput(DType dtype, const TensorShape& shape, int replica, uint64_t seed);
// The inputs of replicas 0..n-1 (generate once, then fold for every op).
std::vector<Tensor> ReplicaInputs(DType dtype, const TensorShape& shape, int n, uint64_t seed);
// ((x0 op x1) op x2 ...) over `inputs` in order, element by element (mean = sum / n).
Tensor FoldReference(const std::vector<Tensor>& inputs, ReduceOp op);
// Concatenation along dim 0 (a scalar input gives a vector).
Tensor ConcatReference(const std::vector<Tensor>& inputs);
// For reductions whose order is free (fast mode): empty when every element of `got` is within
// (n+1) * epsilon(dtype) * sum|x_i| of the exact (double) reduction of `inputs`.
std::string ApproxDiff(const Tensor& got, const std::vector<Tensor>& inputs, ReduceOp op);
// ((x0 op x1) op x2 ...) over replicas 0..n-1, element by element (mean = sum / n).
Tensor ReferenceAllReduce(DType dtype, const TensorShape& shape, int n, ReduceOp op, uint64_t seed);
// Replica g's rows of the reference reduction (shape [d0/n, ...]).
Tensor ReferenceReduceScatter(DType dtype, const TensorShape& shape, int n, int g, ReduceOp op,
                              uint64_t seed);
// Concatenation of every replica's input along dim 0.
Tensor ReferenceAllGather(DType dtype, const TensorShape& shape, int n, uint64_t seed);
// Empty when equal bit for bit, else a description of the first difference.
std::string BitDiff(const Tensor& got, const Tensor& want);

}  // namespace troupe::testing
