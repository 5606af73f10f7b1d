#include "checkpoint/keras_weights_h5.h"

#include <hdf5.h>

#include <cstring>
#include <vector>

#include "core/env.h"

namespace troupe::ckpt {
namespace {

// Closes an HDF5 identifier with its own close function when it goes out of scope.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5 prints its error stack to stderr by default; the reader reports errors as Status.
class QuietErrors {
 public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// The element type a dataset is read as: Troupe's dtype and HDF5's native memory type.
struct ElementType {
  DType dtype = DType::kInvalid;
  hid_t memory = -1;
};

ElementType ElementTypeOf(hid_t file_type) {
  const H5T_class_t cls = H5Tget_class(file_type);
  const size_t size = H5Tget_size(file_type);
  if (cls == H5T_FLOAT) {
    if (size == 4) return {DType::kFloat32, H5T_NATIVE_FLOAT};
    if (size == 8) return {DType::kFloat64, H5T_NATIVE_DOUBLE};
    return {};
  }
  if (cls != H5T_INTEGER) return {};
  const bool is_signed = H5Tget_sign(file_type) == H5T_SGN_2;
  switch (size) {
    case 1:
      return is_signed ? ElementType{DType::kInt8, H5T_NATIVE_INT8}
                       : ElementType{DType::kUInt8, H5T_NATIVE_UINT8};
    case 2:
      return is_signed ? ElementType{DType::kInt16, H5T_NATIVE_INT16}
                       : ElementType{DType::kUInt16, H5T_NATIVE_UINT16};
    case 4:
      return is_signed ? ElementType{DType::kInt32, H5T_NATIVE_INT32}
                       : ElementType{DType::kUInt32, H5T_NATIVE_UINT32};
    case 8:
      return is_signed ? ElementType{DType::kInt64, H5T_NATIVE_INT64}
                       : ElementType{DType::kUInt64, H5T_NATIVE_UINT64};
    default:
      return {};
  }
}

std::string TypeText(hid_t file_type) {
  const H5T_class_t cls = H5Tget_class(file_type);
  const char* kind = cls == H5T_FLOAT     ? "float"
                     : cls == H5T_INTEGER ? "integer"
                     : cls == H5T_STRING  ? "string"
                     : cls == H5T_ENUM    ? "enum"
                                          : "non-numeric";
  return std::string(kind) + " of " + std::to_string(H5Tget_size(file_type)) + " bytes";
}

Result<Tensor> ReadDataset(hid_t file, const std::string& path, const std::string& label) {
  Handle dataset(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) return DataLossError(label + ": cannot open dataset '" + path + "'");
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  if (!type.ok() || !space.ok()) {
    return DataLossError(label + ": dataset '" + path + "' has no readable type or shape");
  }
  const ElementType element = ElementTypeOf(type.get());
  if (element.dtype == DType::kInvalid) {
    return UnimplementedError(label + ": dataset '" + path + "' holds " + TypeText(type.get()) +
                              " elements; Keras weights are read as float32/float64 or integers");
  }
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) return DataLossError(label + ": dataset '" + path + "' has no simple shape");
  std::vector<hsize_t> extent(static_cast<size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), extent.data(), nullptr);
  std::vector<int64_t> dims(extent.begin(), extent.end());
  TROUPE_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(dims));
  TROUPE_ASSIGN_OR_RETURN(Tensor value, Tensor::Allocate(element.dtype, shape));
  if (shape.num_elements() > 0 &&
      H5Dread(dataset.get(), element.memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, value.raw_data()) < 0) {
    return DataLossError(label + ": cannot read dataset '" + path + "' (damaged file?)");
  }
  return value;
}

// The `name` attribute Keras writes on a `vars` group (a variable- or fixed-length string);
// empty when there is none.
std::string NameAttribute(hid_t file, const std::string& group_path) {
  if (H5Aexists_by_name(file, group_path.c_str(), "name", H5P_DEFAULT) <= 0) return "";
  Handle attribute(H5Aopen_by_name(file, group_path.c_str(), "name", H5P_DEFAULT, H5P_DEFAULT),
                   H5Aclose);
  if (!attribute.ok()) return "";
  Handle type(H5Aget_type(attribute.get()), H5Tclose);
  if (!type.ok() || H5Tget_class(type.get()) != H5T_STRING) return "";
  Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
  if (H5Tis_variable_str(type.get()) > 0) {
    H5Tset_size(memory.get(), H5T_VARIABLE);
    H5Tset_cset(memory.get(), H5Tget_cset(type.get()));
    char* text = nullptr;
    if (H5Aread(attribute.get(), memory.get(), &text) < 0 || text == nullptr) return "";
    std::string out(text);
    H5free_memory(text);
    return out;
  }
  const size_t size = H5Tget_size(type.get());
  std::string out(size + 1, '\0');
  H5Tset_size(memory.get(), size + 1);
  H5Tset_strpad(memory.get(), H5T_STR_NULLTERM);
  if (H5Aread(attribute.get(), memory.get(), out.data()) < 0) return "";
  out.resize(std::strlen(out.c_str()));
  return out;
}

struct Visit {
  std::vector<std::string> datasets;
  std::vector<std::string> vars_groups;  // paths ending in "vars"
};

herr_t VisitLink(hid_t group, const char* name, const H5L_info_t* /*info*/, void* data) {
  auto* visit = static_cast<Visit*>(data);
  hid_t object = H5Oopen(group, name, H5P_DEFAULT);
  if (object < 0) return 0;  // a dangling link: nothing to read
  const H5I_type_t type = H5Iget_type(object);
  H5Oclose(object);
  const std::string path = name;
  if (type == H5I_DATASET) {
    visit->datasets.push_back(path);
  } else if (type == H5I_GROUP &&
             (path == "vars" ||
              (path.size() > 5 && path.compare(path.size() - 5, 5, "/vars") == 0))) {
    visit->vars_groups.push_back(path);
  }
  return 0;
}

Result<KerasWeightsH5> ReadOpenFile(hid_t file, const std::string& label) {
  Visit visit;
  if (H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, VisitLink, &visit) < 0) {
    return DataLossError(label + ": cannot list the HDF5 file's groups (damaged file?)");
  }
  KerasWeightsH5 out;
  for (const std::string& path : visit.datasets) {
    TROUPE_ASSIGN_OR_RETURN(out.tensors[path], ReadDataset(file, path, label));
  }
  for (const std::string& vars : visit.vars_groups) {
    std::string name = NameAttribute(file, vars);
    if (name.empty()) continue;
    const std::string owner = vars == "vars" ? "" : vars.substr(0, vars.size() - 5);
    out.names[owner] = std::move(name);
  }
  return out;
}

constexpr char kSignature[] = "\x89HDF\r\n\x1a\n";

Status NotHdf5(const std::string& label) {
  return DataLossError(label +
                       " is not an HDF5 file (Keras writes weights with "
                       "model.save_weights('m.weights.h5') or inside model.save('m.keras'))");
}

}  // namespace

Result<KerasWeightsH5> ReadKerasWeightsH5(const std::string& path) {
  auto in = Env::Default()->NewSequentialFile(path, sizeof(kSignature));
  if (!in.ok()) {
    return NotFoundError("weights file '" + path + "' does not exist or cannot be read (" +
                         in.status().message() + ")");
  }
  char head[8] = {};
  Result<size_t> got = (*in)->Read(head, sizeof(head));
  if (!got.ok() || *got != 8 || std::memcmp(head, kSignature, 8) != 0) return NotHdf5(path);
  QuietErrors quiet;
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) return DataLossError(path + ": HDF5 cannot open it (damaged or truncated?)");
  return ReadOpenFile(file.get(), path);
}

Result<KerasWeightsH5> ReadKerasWeightsH5Image(std::string_view image, const std::string& label) {
  if (image.size() < 8 || std::memcmp(image.data(), kSignature, 8) != 0) return NotHdf5(label);
  QuietErrors quiet;
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.ok()) return InternalError("HDF5: cannot create a file access property list");
  // The core driver keeps the file in memory; without a backing store nothing touches disk.
  // H5Pset_file_image copies the image, so `image` need not outlive the call.
  if (H5Pset_fapl_core(fapl.get(), 1 << 20, /*backing_store=*/0) < 0 ||
      H5Pset_file_image(fapl.get(), const_cast<char*>(image.data()), image.size()) < 0) {
    return InternalError("HDF5: cannot set up an in-memory file image for " + label);
  }
  Handle file(H5Fopen(label.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!file.ok()) return DataLossError(label + ": HDF5 cannot open it (damaged or truncated?)");
  return ReadOpenFile(file.get(), label);
}

}  // namespace troupe::ckpt
