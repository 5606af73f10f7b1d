// NamedRegistry<Fn>: a thread-safe map from names to factories (the model zoo, data sources),
// with the errors a user should see: AlreadyExists for a taken name, NotFound listing what is
// registered for an unknown one.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace troupe {

template <typename Fn>
class NamedRegistry {
 public:
  // `what` names an entry in errors ("model"); `key` is the config key that picks one.
  NamedRegistry(std::string what, std::string key) : what_(std::move(what)), key_(std::move(key)) {}

  Status Register(const std::string& name, Fn fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!entries_.emplace(name, std::move(fn)).second) {
      return AlreadyExistsError(what_ + " '" + name + "' is already registered");
    }
    order_.push_back(name);
    return Status::OK();
  }

  // A copy of the entry, so the caller runs it without holding the lock.
  Result<Fn> Find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    std::string names;
    for (const auto& [n, fn] : entries_) names += (names.empty() ? "" : ", ") + n;
    return NotFoundError(key_ + ": unknown " + what_ + " '" + name + "'; registered: " + names);
  }

  // Sorted.
  std::vector<std::string> Names() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> names;
    for (const auto& [n, fn] : entries_) names.push_back(n);
    return names;
  }

  // In registration order.
  std::vector<std::string> NamesInOrder() const {
    std::lock_guard<std::mutex> lock(mu_);
    return order_;
  }

  // Every entry, in registration order.
  std::vector<std::pair<std::string, Fn>> Entries() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<std::string, Fn>> entries;
    for (const std::string& n : order_) entries.emplace_back(n, entries_.at(n));
    return entries;
  }

 private:
  std::string what_, key_;
  mutable std::mutex mu_;
  std::map<std::string, Fn> entries_;
  std::vector<std::string> order_;  // registration order
};

}  // namespace troupe
