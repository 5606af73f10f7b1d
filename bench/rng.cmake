# RNG throughput: bench/rng_bench (Google Benchmark: 10^8 float32 normals/uniforms from a Philox
# Generator, the fills alone, memset/memcpy as the bandwidth yardstick). Side by side with
# TensorFlow: python3 bench/rng_compare.py [build dir].
if(TARGET troupe_graph)
  add_executable(rng_bench ${CMAKE_CURRENT_LIST_DIR}/rng_bench.cc)
  target_link_libraries(rng_bench PRIVATE troupe_graph benchmark::benchmark)
  set_target_properties(rng_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endif()
