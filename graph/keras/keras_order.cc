#include "graph/keras/keras_order.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>

namespace troupe::keras {
namespace {

using CallKey = std::pair<std::string, int64_t>;  // (layer, call index)

}  // namespace

Result<std::vector<std::string>> KerasLayerOrder(const std::string& input_layer,
                                                 const std::vector<LayerCall>& calls,
                                                 const TensorRef& output) {
  std::map<CallKey, const LayerCall*> by_key;
  for (const LayerCall& c : calls) by_key[{c.layer, c.index}] = &c;
  // _build_map: depth-first from the output.
  std::set<CallKey> finished, in_progress;
  std::vector<CallKey> decreasing_depth;  // inputs first
  std::map<std::string, int> visit_index;
  std::function<Status(const TensorRef&)> walk = [&](const TensorRef& t) -> Status {
    const CallKey key{t.layer, t.node};
    if (finished.count(key)) return Status::OK();
    if (in_progress.count(key)) {
      return InvalidArgumentError("layer '" + t.layer + "' is part of a cycle");
    }
    const bool is_input = t.layer == input_layer;
    auto call = by_key.find(key);
    if (!is_input && call == by_key.end()) {
      return InvalidArgumentError("tensor " + t.ToString() + " is produced by no layer call");
    }
    visit_index.emplace(t.layer, static_cast<int>(visit_index.size()));
    in_progress.insert(key);
    if (!is_input) {
      for (const TensorRef& in : call->second->inputs) TROUPE_RETURN_IF_ERROR(walk(in));
    }
    in_progress.erase(key);
    finished.insert(key);
    decreasing_depth.push_back(key);
    return Status::OK();
  };
  TROUPE_RETURN_IF_ERROR(walk(output));
  // map_graph: depths from the output back.
  std::map<CallKey, int> call_depth;
  std::map<std::string, int> layer_depth;
  for (auto it = decreasing_depth.rbegin(); it != decreasing_depth.rend(); ++it) {
    int depth = call_depth.emplace(*it, 0).first->second;
    depth = std::max(depth, layer_depth[it->first]);
    layer_depth[it->first] = depth;
    call_depth[*it] = depth;
    if (it->first == input_layer) continue;
    for (const TensorRef& in : by_key[*it]->inputs) {
      const CallKey parent{in.layer, in.node};
      if (!finished.count(parent)) continue;
      int& d = call_depth[parent];
      d = std::max(d, depth + 1);
    }
  }
  std::vector<std::string> order;
  for (const auto& [layer, depth] : layer_depth) order.push_back(layer);
  std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    if (layer_depth[a] != layer_depth[b]) return layer_depth[a] > layer_depth[b];
    return visit_index[a] < visit_index[b];
  });
  return order;
}

}  // namespace troupe::keras
