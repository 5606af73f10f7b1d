// Indexing along the first dimension with a tensor index — what `for x in tensor` and
// TensorArray read/write need inside a traced loop (kernels/ slices with static attributes).
//
// NOTE (graph/-local kernels): RowAt and RowUpdate copy bytes and are implemented here as
// graph ops until kernels/ has Gather / TensorScatterUpdate; they work for every dtype.
#pragma once

#include "graph/value.h"

namespace troupe::ops {

// x[index] for an int32/int64 scalar index; an index outside [0, dim 0) is an error.
Value RowAt(const Value& x, const Value& index);
// A copy of x with x[index] replaced by `row` (TensorArray.write's functional form).
Value RowUpdate(const Value& x, const Value& index, const Value& row);
// x.shape[axis] as an int32 scalar (a constant when the trace knows it).
Value Dim(const Value& x, int axis);

}  // namespace troupe::ops
