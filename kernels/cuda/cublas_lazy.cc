// cuBLAS, loaded when the first GPU matrix product needs it rather than when the process starts.
// Linking libcublas maps libcublasLt, whose load alone costs ~150 MB of resident memory (its
// tables are touched at load), in every process, CPU-only runs included. So troupe_kernels does
// not link cuBLAS: this file defines the cuBLAS entry points the GPU kernels call, and each one
// resolves the real function from libcublas.so.<major> with dlopen/dlsym on its first call.
// The definitions are checked against cublas_api.h's declarations, so a signature mismatch does
// not compile, and a cuBLAS function used without a stub here fails to link.
// If the library cannot be loaded every call returns CUBLAS_STATUS_NOT_INITIALIZED, and
// cublasGetStatusString says which library was missing and why (dlerror).
#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

namespace {

struct Library {
  void* handle = nullptr;
  std::string error;  // "could not load libcublas.so.13: <dlerror>"
};

const Library& Cublas() {
  static const Library library = [] {
    Library lib;
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    lib.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib.handle == nullptr) {
      const char* why = dlerror();
      lib.error = "could not load " + name + " (cuBLAS, for GPU matrix products): " +
                  (why != nullptr ? why : "unknown error") +
                  "; put CUDA's library folder on LD_LIBRARY_PATH";
    }
    return lib;
  }();
  return library;
}

template <typename Fn>
Fn* Resolve(const char* symbol) {
  const Library& lib = Cublas();
  return lib.handle == nullptr ? nullptr : reinterpret_cast<Fn*>(dlsym(lib.handle, symbol));
}

}  // namespace

// Calls the real `symbol` (of type `type`) with the arguments, or reports cuBLAS as not
// initialized when the library or the symbol is missing.
#define TROUPE_CUBLAS_FORWARD(type, symbol, ...)             \
  static type* const real = Resolve<type>(#symbol);          \
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED; \
  return real(__VA_ARGS__)

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  TROUPE_CUBLAS_FORWARD(decltype(cublasCreate_v2), cublasCreate_v2, handle);
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  TROUPE_CUBLAS_FORWARD(decltype(cublasDestroy_v2), cublasDestroy_v2, handle);
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                                  size_t workspaceSizeInBytes) {
  TROUPE_CUBLAS_FORWARD(decltype(cublasSetWorkspace_v2), cublasSetWorkspace_v2, handle, workspace,
                        workspaceSizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  TROUPE_CUBLAS_FORWARD(decltype(cublasSetStream_v2), cublasSetStream_v2, handle, streamId);
}

cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  TROUPE_CUBLAS_FORWARD(decltype(cublasSetMathMode), cublasSetMathMode, handle, mode);
}

using GemmExFn = cublasStatus_t(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                const void*, const void*, cudaDataType, int, const void*,
                                cudaDataType, int, const void*, void*, cudaDataType, int,
                                cublasComputeType_t, cublasGemmAlgo_t);

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const void* alpha, const void* A, cudaDataType Atype,
                                         int lda, const void* B, cudaDataType Btype, int ldb,
                                         const void* beta, void* C, cudaDataType Ctype, int ldc,
                                         cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  TROUPE_CUBLAS_FORWARD(GemmExFn, cublasGemmEx, handle, transa, transb, m, n, k, alpha, A, Atype,
                        lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo);
}

using GemmStridedBatchedExFn = cublasStatus_t(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                              int, int, int, const void*, const void*, cudaDataType,
                                              int, long long int, const void*, cudaDataType, int,
                                              long long int, const void*, void*, cudaDataType, int,
                                              long long int, int, cublasComputeType_t,
                                              cublasGemmAlgo_t);

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
    const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  TROUPE_CUBLAS_FORWARD(GemmStridedBatchedExFn, cublasGemmStridedBatchedEx, handle, transa, transb,
                        m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                        Ctype, ldc, strideC, batchCount, computeType, algo);
}

// The status texts come from the library too; without it, the reason it could not be loaded.
const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  static decltype(cublasGetStatusName)* const real =
      Resolve<decltype(cublasGetStatusName)>("cublasGetStatusName");
  return real != nullptr ? real(status) : "CUBLAS_STATUS_NOT_INITIALIZED";
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static decltype(cublasGetStatusString)* const real =
      Resolve<decltype(cublasGetStatusString)>("cublasGetStatusString");
  return real != nullptr ? real(status) : Cublas().error.c_str();
}
