#include "checkpoint/keras_weights_h5.h"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/checkpoint/test_util.h"

namespace troupe::ckpt {
namespace {

using testing::ScratchDir;

// Written by Keras 3.15 (testdata/keras_weights/make_testdata.py): Dense "proj", BatchNormalization
// "bn", MultiHeadAttention "att"; weight w of model.layers[l] holds l*100 + w*10 + 0.5*i.
std::string Fixture() {
  const char* src = std::getenv("TROUPE_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/checkpoint/testdata/keras_weights/small.weights.h5";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void ExpectValues(const KerasWeightsH5& w, const std::string& path, const TensorShape& shape,
                  float start) {
  auto it = w.tensors.find(path);
  ASSERT_NE(it, w.tensors.end()) << path;
  const Tensor& t = it->second;
  ASSERT_EQ(t.dtype(), DType::kFloat32) << path;
  ASSERT_EQ(t.shape(), shape) << path;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    ASSERT_EQ(t.data<float>()[i], start + 0.5f * static_cast<float>(i)) << path << "[" << i << "]";
  }
}

void ExpectKerasLayout(const KerasWeightsH5& w) {
  // Layers keyed by class (dense, batch_normalization, ...), not by name.
  EXPECT_EQ(w.tensors.size(), 14u);
  ExpectValues(w, "layers/dense/vars/0", {4, 4}, 100);
  ExpectValues(w, "layers/dense/vars/1", {4}, 110);
  // BatchNormalization: gamma, beta, moving_mean, moving_variance.
  ExpectValues(w, "layers/batch_normalization/vars/0", {4}, 200);
  ExpectValues(w, "layers/batch_normalization/vars/2", {4}, 220);
  ExpectValues(w, "layers/batch_normalization/vars/3", {4}, 230);
  // MultiHeadAttention's projections under their attributes, without the underscore.
  ExpectValues(w, "layers/multi_head_attention/query_dense/vars/0", {4, 2, 2}, 300);
  ExpectValues(w, "layers/multi_head_attention/key_dense/vars/1", {2, 2}, 330);
  ExpectValues(w, "layers/multi_head_attention/output_dense/vars/1", {4}, 370);
  EXPECT_EQ(w.names.at("layers/dense"), "proj");
  EXPECT_EQ(w.names.at("layers/batch_normalization"), "bn");
  EXPECT_EQ(w.names.at("layers/multi_head_attention"), "att");
  EXPECT_EQ(w.names.at("layers/multi_head_attention/query_dense"), "query");
  EXPECT_EQ(w.names.count(""), 1u);  // the model's own (empty) vars group
}

TEST(KerasWeightsH5Test, ReadsKerasLayoutFromFile) {
  Result<KerasWeightsH5> w = ReadKerasWeightsH5(Fixture());
  ASSERT_TRUE(w.ok()) << w.status();
  ExpectKerasLayout(*w);
}

TEST(KerasWeightsH5Test, ReadsTheSameFromAnImageInMemory) {
  const std::string image = ReadAll(Fixture());
  ASSERT_GT(image.size(), 1000u);
  Result<KerasWeightsH5> w = ReadKerasWeightsH5Image(image, "m.keras:model.weights.h5");
  ASSERT_TRUE(w.ok()) << w.status();
  ExpectKerasLayout(*w);
}

TEST(KerasWeightsH5Test, MissingFileIsNotFound) {
  Result<KerasWeightsH5> w = ReadKerasWeightsH5("/nonexistent/m.weights.h5");
  ASSERT_EQ(w.status().code(), StatusCode::kNotFound);
  EXPECT_NE(w.status().message().find("/nonexistent/m.weights.h5"), std::string::npos);
}

TEST(KerasWeightsH5Test, OtherBytesAreNamedAsNotHdf5) {
  ScratchDir dir;
  std::ofstream(dir / "x.weights.h5") << "not an hdf5 file at all";
  Result<KerasWeightsH5> w = ReadKerasWeightsH5(dir / "x.weights.h5");
  ASSERT_EQ(w.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(w.status().message().find("is not an HDF5 file"), std::string::npos) << w.status();
  Result<KerasWeightsH5> img = ReadKerasWeightsH5Image("PK\x03\x04zip", "m.keras:x");
  ASSERT_EQ(img.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(img.status().message().find("m.keras:x"), std::string::npos) << img.status();
}

TEST(KerasWeightsH5Test, TruncatedFileIsDataLoss) {
  const std::string image = ReadAll(Fixture());
  const std::string half = image.substr(0, image.size() / 2);
  Result<KerasWeightsH5> w = ReadKerasWeightsH5Image(half, "half.weights.h5");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kDataLoss) << w.status();
  EXPECT_NE(w.status().message().find("half.weights.h5"), std::string::npos) << w.status();
}

// Writes `path` with the HDF5 library: optimizer/vars/0 an int64 scalar (Keras' iteration
// count), layers/d/vars/0 float64 [2, 3]; with `with_string`, layers/d/vars/1 a string.
void WriteFile(const std::string& path, bool with_string) {
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t scalar = H5Screate(H5S_SCALAR);
  int64_t iterations = 42;
  hid_t d =
      H5Dcreate2(f, "optimizer/vars/0", H5T_STD_I64LE, scalar, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &iterations);
  H5Dclose(d);
  hsize_t dims[2] = {2, 3};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  double values[6] = {1, 2, 3, 4, 5, 6.5};
  d = H5Dcreate2(f, "layers/d/vars/0", H5T_IEEE_F64BE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
  H5Dclose(d);
  if (with_string) {
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 4);
    d = H5Dcreate2(f, "layers/d/vars/1", str, scalar, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, str, H5S_ALL, H5S_ALL, H5P_DEFAULT, "abc");
    H5Dclose(d);
    H5Tclose(str);
  }
  H5Sclose(space);
  H5Sclose(scalar);
  H5Pclose(lcpl);
  H5Fclose(f);
}

TEST(KerasWeightsH5Test, ReadsIntegersAndDoublesInHostOrder) {
  ScratchDir dir;
  WriteFile(dir / "t.weights.h5", false);
  Result<KerasWeightsH5> w = ReadKerasWeightsH5(dir / "t.weights.h5");
  ASSERT_TRUE(w.ok()) << w.status();
  const Tensor& it = w->tensors.at("optimizer/vars/0");
  EXPECT_EQ(it.dtype(), DType::kInt64);
  EXPECT_EQ(it.shape().rank(), 0);
  EXPECT_EQ(it.scalar<int64_t>(), 42);
  const Tensor& d = w->tensors.at("layers/d/vars/0");
  EXPECT_EQ(d.dtype(), DType::kFloat64);
  EXPECT_EQ(d.shape(), TensorShape({2, 3}));
  EXPECT_EQ(d.data<double>()[5], 6.5);  // stored big-endian, read in host order
  EXPECT_TRUE(w->names.empty());        // written without Keras' name attributes
}

TEST(KerasWeightsH5Test, NonNumericDatasetIsNamed) {
  ScratchDir dir;
  WriteFile(dir / "s.weights.h5", true);
  Result<KerasWeightsH5> w = ReadKerasWeightsH5(dir / "s.weights.h5");
  ASSERT_EQ(w.status().code(), StatusCode::kUnimplemented) << w.status();
  EXPECT_NE(w.status().message().find("layers/d/vars/1"), std::string::npos) << w.status();
  EXPECT_NE(w.status().message().find("string"), std::string::npos) << w.status();
}

}  // namespace
}  // namespace troupe::ckpt
