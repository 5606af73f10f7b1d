#include "state_file.h"

#include <cstring>

#include "input/file_io.h"

namespace troupe::input::testing {
namespace {
constexpr char kMagic[] = "TROUPE-ITERSTATE-1";

void PutU64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), 8); }
bool GetU64(std::string_view* s, uint64_t* v) {
  if (s->size() < 8) return false;
  std::memcpy(v, s->data(), 8);
  s->remove_prefix(8);
  return true;
}
void PutStr(std::string* s, std::string_view v) {
  PutU64(s, v.size());
  s->append(v);
}
bool GetStr(std::string_view* s, std::string* v) {
  uint64_t n;
  if (!GetU64(s, &n) || s->size() < n) return false;
  v->assign(s->data(), n);
  s->remove_prefix(n);
  return true;
}
}  // namespace

Status WriteStateFile(const std::string& path, const IteratorState& state) {
  std::string out = kMagic;
  PutU64(&out, state.size());
  for (const auto& [name, t] : state) {
    PutStr(&out, name);
    PutU64(&out, static_cast<uint64_t>(t.dtype()));
    PutU64(&out, static_cast<uint64_t>(t.rank()));
    for (int i = 0; i < t.rank(); ++i) PutU64(&out, static_cast<uint64_t>(t.dim(i)));
    if (t.dtype() == DType::kString) {
      for (const auto& s : t.flat<std::string>()) PutStr(&out, s);
    } else {
      out.append(static_cast<const char*>(t.raw_data()), t.byte_size());
    }
  }
  return WriteStringToFile(path, out);
}

Result<IteratorState> ReadStateFile(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(std::string data, ReadFileToString(path));
  std::string_view s = data;
  auto bad = [&] { return DataLossError("malformed iterator state file " + path); };
  if (s.substr(0, sizeof(kMagic) - 1) != kMagic) return bad();
  s.remove_prefix(sizeof(kMagic) - 1);
  uint64_t n;
  if (!GetU64(&s, &n)) return bad();
  IteratorState state;
  for (uint64_t i = 0; i < n; ++i) {
    std::string name;
    uint64_t dtype, rank;
    if (!GetStr(&s, &name) || !GetU64(&s, &dtype) || !GetU64(&s, &rank)) return bad();
    std::vector<int64_t> dims(rank);
    for (auto& d : dims) {
      uint64_t v;
      if (!GetU64(&s, &v)) return bad();
      d = static_cast<int64_t>(v);
    }
    TROUPE_ASSIGN_OR_RETURN(DType dt, DTypeFromNumber(static_cast<int64_t>(dtype)));
    TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dt, TensorShape(dims)));
    if (dt == DType::kString) {
      for (auto& str : t.flat<std::string>()) {
        if (!GetStr(&s, &str)) return bad();
      }
    } else {
      if (s.size() < t.byte_size()) return bad();
      std::memcpy(t.raw_data(), s.data(), t.byte_size());
      s.remove_prefix(t.byte_size());
    }
    state.emplace_back(std::move(name), std::move(t));
  }
  return state;
}

}  // namespace troupe::input::testing
