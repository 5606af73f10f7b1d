# Kernel benchmarks: Conv2D fwd/bwd and MatMul at LeNet sizes, a big SGEMM for the machine's
# Eigen peak, and Eigen::Tensor conv as the alternative to im2col + GEMM.
# Side-by-side with TensorFlow: python3 bench/kernels_compare.py (needs this binary built).
add_executable(kernels_bench ${CMAKE_CURRENT_SOURCE_DIR}/kernels_bench.cc)
target_link_libraries(kernels_bench PRIVATE troupe_kernels benchmark::benchmark)
