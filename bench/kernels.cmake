# Kernel benchmarks: Conv2D fwd/bwd and MatMul at LeNet sizes, a big SGEMM for the machine's
# Eigen peak, and Eigen::Tensor conv as the alternative to im2col + GEMM.
# Side-by-side with TensorFlow: python3 bench/kernels_compare.py (needs this binary built).
add_executable(kernels_bench ${CMAKE_CURRENT_SOURCE_DIR}/kernels_bench.cc)
target_link_libraries(kernels_bench PRIVATE troupe_kernels benchmark::benchmark)

# Register-only FMA peak of one core (AVX2 and AVX-512): the ceiling GEMM speeds are quoted against.
add_library(troupe_fma_peak STATIC ${CMAKE_CURRENT_SOURCE_DIR}/fma_peak_loops.cc)
target_include_directories(troupe_fma_peak PUBLIC ${PROJECT_SOURCE_DIR})
add_executable(fma_peak ${CMAKE_CURRENT_SOURCE_DIR}/fma_peak.cc)
target_link_libraries(fma_peak PRIVATE troupe_fma_peak)

# Single-thread SGEMM: the packed GEMM's AVX2 and AVX-512 paths against Eigen and the FMA peak,
# at square and ResNet im2col shapes.
add_executable(gemm_bench ${CMAKE_CURRENT_SOURCE_DIR}/gemm_bench.cc)
target_link_libraries(gemm_bench PRIVATE troupe_kernels troupe_fma_peak Eigen3::Eigen)
