// Helpers for the input tests: run a pipeline to the end and collect int64 ids.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "input/dataset.h"
#include "input/distribute.h"
#include "input/tf_compat/distributed_dataset.h"

namespace troupe::input::testing {

using tf_compat::DistributedDataset;
using tf_compat::DistributedIterator;

// The int64 values of component 0 of every element (a batch contributes a list).
inline std::vector<std::vector<int64_t>> Batches(const Dataset& ds, int64_t limit = 1 << 30) {
  std::vector<std::vector<int64_t>> out;
  auto it = ds.MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return out;
  for (int64_t i = 0; i < limit; ++i) {
    auto e = (*it)->Next();
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok() || !*e) break;
    const Tensor& t = (**e)[0];
    out.emplace_back(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
  }
  return out;
}

inline std::vector<int64_t> Flat(const Dataset& ds) {
  std::vector<int64_t> out;
  for (const auto& b : Batches(ds)) out.insert(out.end(), b.begin(), b.end());
  return out;
}

inline std::vector<int64_t> Iota(int64_t a, int64_t b) {
  std::vector<int64_t> v;
  for (int64_t i = a; i < b; ++i) v.push_back(i);
  return v;
}

using Steps = std::vector<std::vector<std::vector<int64_t>>>;  // step -> replica -> ids

// Runs a distributed iterator to the end; per step, per local replica, the ids.
inline Steps RunDistributed(DistributedIterator& it) {
  Steps out;
  while (true) {
    auto step = it.GetNext();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok() || !*step) break;
    std::vector<std::vector<int64_t>> replicas;
    for (const Element& e : **step) {
      replicas.emplace_back(e[0].data<int64_t>(), e[0].data<int64_t>() + e[0].num_elements());
    }
    out.push_back(std::move(replicas));
  }
  return out;
}

}  // namespace troupe::input::testing
