// Config keys as a library declares them against its own spec struct (input::DataSourceSpec,
// nn::OptimizerConfig): a name relative to the TOML table the struct is bound to ("files",
// "schedule.alpha"), its type, range, choices, extra check and one line of meaning, and how to
// store and read it on the struct. The library that owns a key states it once, here; launch/
// places the struct under its table ("data.", "optimizer."), checks values against the key
// before storing them and lists the keys (launch/config_schema.h). A registered component whose
// key has no field of its own keeps it in the struct's `options` map (Option below), and reads
// it back with the key's `get`, which gives the declared default while the config leaves it out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::config {

// kIntList: a TOML array of integers (a shape, a size); [] is a valid value. kStringList and
// kFloatList likewise (a kFloatList accepts integers).
enum class ConfigType { kInt, kFloat, kBool, kString, kIntList, kStringList, kFloatList };

// One value as TOML gives it (integers stay integers; kFloat keys accept both).
using ConfigValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>,
                                 std::vector<std::string>, std::vector<double>>;

// Values of keys without a field of their own, by relative name.
using ConfigOptions = std::map<std::string, ConfigValue>;

// What a key is, whatever struct it sets.
struct KeyInfo {
  // Relative to the spec's table; a dot goes one table down ("schedule.alpha").
  std::string name;
  ConfigType type = ConfigType::kString;
  std::string meaning;  // one line, for `troupe config keys`
  // Numbers, and each entry of a list, must lie in [min, max), or (min, max) when
  // min_exclusive.
  double min = -std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  double max = std::numeric_limits<double>::infinity();
  // Strings: the accepted values (empty: any).
  std::vector<std::string> choices;
  // When set, the accepted values as they are when the key is checked (a registry that the
  // program may extend, like data.source's); replaces `choices`.
  std::function<std::vector<std::string>()> choices_from;
  // When set, a check beyond type, range and choices, run on a value of the right type: ""
  // when the value is fine, else what is wrong with it ("must be empty or [height, width], got
  // [1, 2, 3]"); the caller prefixes the key's name.
  std::function<std::string(const ConfigValue&)> extra_check;
  // A component's key (one data source's, one optimizer's): why the others do not take it
  // ("only the text source makes sequences"), for the error when another one is chosen.
  std::string why_only;
};

// A key of Spec: what it is, and how it sets and reads its value on a Spec.
template <class Spec>
struct SpecKey : KeyInfo {
  // Write and read the key on the spec; `store` checks nothing.
  std::function<void(const ConfigValue&, Spec&)> store;
  std::function<ConfigValue(const Spec&)> get;
  // Keys whose field is optional: whether it holds a value; `get` of an unset one gives NaN
  // (false for a bool). Empty for keys that always have a value.
  std::function<bool(const Spec&)> is_set;
};

// Where a key's value lives: a member of Spec, a member of one of its members, or one level
// deeper (&C::data, &D::image, &F::key).
template <class Spec, class T>
struct Field {
  Field(T Spec::*f)  // NOLINT: implicit, so that &S::seed is a Field
      : access([f](Spec& s) -> T& { return s.*f; }) {}
  template <class A>
  Field(A Spec::*a, T A::*m) : access([a, m](Spec& s) -> T& { return (s.*a).*m; }) {}
  template <class A, class B>
  Field(A Spec::*a, B A::*b, T B::*m)
      : access([a, b, m](Spec& s) -> T& { return ((s.*a).*b).*m; }) {}
  T& operator()(Spec& s) const { return access(s); }
  const T& operator()(const Spec& s) const { return access(const_cast<Spec&>(s)); }
  std::function<T&(Spec&)> access;
};

// The builders: Int<S>("epochs", &S::epochs, 1, "Passes over the training set.").
template <class Spec, class T>
SpecKey<Spec> Key(std::string name, ConfigType type, Field<Spec, T> field, std::string meaning) {
  SpecKey<Spec> k;
  k.name = std::move(name);
  k.type = type;
  k.meaning = std::move(meaning);
  k.store = [field](const ConfigValue& v, Spec& s) { field(s) = std::get<T>(v); };
  k.get = [field](const Spec& s) -> ConfigValue { return field(s); };
  return k;
}

// `k` with values (or list entries) >= min.
template <class Spec>
SpecKey<Spec> AtLeast(SpecKey<Spec> k, double min) {
  k.min = min;
  return k;
}

template <class Spec>
SpecKey<Spec> Int(std::string name, Field<Spec, int64_t> field, double min, std::string meaning) {
  return AtLeast(Key(std::move(name), ConfigType::kInt, std::move(field), std::move(meaning)), min);
}

// A list of integers, each >= min.
template <class Spec>
SpecKey<Spec> IntList(std::string name, Field<Spec, std::vector<int64_t>> field, double min,
                      std::string meaning) {
  return AtLeast(Key(std::move(name), ConfigType::kIntList, std::move(field), std::move(meaning)),
                 min);
}

template <class Spec>
SpecKey<Spec> StringList(std::string name, Field<Spec, std::vector<std::string>> field,
                         std::string meaning) {
  return Key(std::move(name), ConfigType::kStringList, std::move(field), std::move(meaning));
}

// A list of numbers, each in [min, max).
template <class Spec>
SpecKey<Spec> FloatList(std::string name, Field<Spec, std::vector<double>> field, double min,
                        std::string meaning) {
  return AtLeast(Key(std::move(name), ConfigType::kFloatList, std::move(field), std::move(meaning)),
                 min);
}

// A number in [min, max), or in (min, max) with min_exclusive.
template <class Spec>
SpecKey<Spec> Float(std::string name, Field<Spec, double> field, double min, bool min_exclusive,
                    double max, std::string meaning) {
  SpecKey<Spec> k = Key(std::move(name), ConfigType::kFloat, std::move(field), std::move(meaning));
  k.min = min;
  k.min_exclusive = min_exclusive;
  k.max = max;
  return k;
}

template <class Spec>
SpecKey<Spec> Positive(std::string name, Field<Spec, double> field, std::string meaning) {
  return Float<Spec>(std::move(name), std::move(field), 0, true,
                     std::numeric_limits<double>::infinity(), std::move(meaning));
}

template <class Spec>
SpecKey<Spec> NonNegative(std::string name, Field<Spec, double> field, std::string meaning) {
  return Float<Spec>(std::move(name), std::move(field), 0, false,
                     std::numeric_limits<double>::infinity(), std::move(meaning));
}

template <class Spec>
SpecKey<Spec> AnyNumber(std::string name, Field<Spec, double> field, std::string meaning) {
  return Float<Spec>(std::move(name), std::move(field), -std::numeric_limits<double>::infinity(),
                     false, std::numeric_limits<double>::infinity(), std::move(meaning));
}

// A number in [min, max) whose field is optional: unset until a config gives it.
template <class Spec>
SpecKey<Spec> OptionalFloat(std::string name, Field<Spec, std::optional<double>> field, double min,
                            double max, std::string meaning) {
  SpecKey<Spec> k;
  k.name = std::move(name);
  k.type = ConfigType::kFloat;
  k.meaning = std::move(meaning);
  k.min = min;
  k.max = max;
  k.store = [field](const ConfigValue& v, Spec& s) { field(s) = std::get<double>(v); };
  k.get = [field](const Spec& s) -> ConfigValue {
    return field(s).value_or(std::numeric_limits<double>::quiet_NaN());
  };
  k.is_set = [field](const Spec& s) { return field(s).has_value(); };
  return k;
}

// A number >= 0 whose field is optional.
template <class Spec>
SpecKey<Spec> OptionalNonNegative(std::string name, Field<Spec, std::optional<double>> field,
                                  std::string meaning) {
  return OptionalFloat<Spec>(std::move(name), std::move(field), 0,
                             std::numeric_limits<double>::infinity(), std::move(meaning));
}

template <class Spec>
SpecKey<Spec> Bool(std::string name, Field<Spec, bool> field, std::string meaning) {
  return Key(std::move(name), ConfigType::kBool, std::move(field), std::move(meaning));
}

// A true/false whose field is optional: unset until a config gives it.
template <class Spec>
SpecKey<Spec> OptionalBool(std::string name, Field<Spec, std::optional<bool>> field,
                           std::string meaning) {
  SpecKey<Spec> k;
  k.name = std::move(name);
  k.type = ConfigType::kBool;
  k.meaning = std::move(meaning);
  k.store = [field](const ConfigValue& v, Spec& s) { field(s) = std::get<bool>(v); };
  k.get = [field](const Spec& s) -> ConfigValue { return field(s).value_or(false); };
  k.is_set = [field](const Spec& s) { return field(s).has_value(); };
  return k;
}

template <class Spec>
SpecKey<Spec> String(std::string name, Field<Spec, std::string> field,
                     std::vector<std::string> choices, std::string meaning) {
  SpecKey<Spec> k = Key(std::move(name), ConfigType::kString, std::move(field), std::move(meaning));
  k.choices = std::move(choices);
  return k;
}

template <class Spec>
SpecKey<Spec> WithCheck(SpecKey<Spec> k, std::function<std::string(const ConfigValue&)> check) {
  k.extra_check = std::move(check);
  return k;
}

// A component's key: only the components declaring it take it (`why` says why the others do
// not).
template <class Spec>
SpecKey<Spec> Only(SpecKey<Spec> k, std::string why) {
  k.why_only = std::move(why);
  return k;
}

// A key without a field of its own, kept in Spec's `options` map (ConfigOptions) under its
// name; `get` gives `default_value` while the map holds none. A range or choices are set on the
// returned key as on any other.
template <class Spec>
SpecKey<Spec> Option(std::string name, ConfigType type, ConfigValue default_value,
                     std::string meaning) {
  SpecKey<Spec> k;
  k.name = name;
  k.type = type;
  k.meaning = std::move(meaning);
  k.store = [name](const ConfigValue& v, Spec& s) { s.options[name] = v; };
  k.get = [name, default_value = std::move(default_value)](const Spec& s) -> ConfigValue {
    auto it = s.options.find(name);
    return it == s.options.end() ? default_value : it->second;
  };
  return k;
}

// The name of the first of `keys` that `have` declares with another type; "" when none (keys of
// one name that several components declare are one key and must agree on it).
template <class Spec>
std::string TypeConflict(const std::vector<SpecKey<Spec>>& have,
                         const std::vector<SpecKey<Spec>>& keys) {
  for (const SpecKey<Spec>& key : keys) {
    for (const SpecKey<Spec>& other : have) {
      if (other.name == key.name && other.type != key.type) return key.name;
    }
  }
  return "";
}

// The value `key` holds on `spec`, as T (the key's type's alternative: int64_t, double, ...).
template <class T, class Spec>
T ValueOf(const SpecKey<Spec>& key, const Spec& spec) {
  return std::get<T>(key.get(spec));
}

}  // namespace troupe::config
