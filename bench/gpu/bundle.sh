#!/usr/bin/env bash
# Packs built binaries and the shared libraries they need that a CUDA machine without Debian's
# packages lacks (CAF, protobuf, LevelDB, snappy, ...) into DIR, for running GPU tests and
# benchmarks on another x86-64 machine. CUDA, cuDNN, NCCL, MPI and the C/C++ runtimes are
# left out: the GPU machine brings its own. Usage: bench/gpu/bundle.sh DIR BINARY...
set -euo pipefail
dir=$1; shift
mkdir -p "$dir/bin" "$dir/lib"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.so|librt\.so|libmpi|libopen-|libhwloc|libevent|libpmix|libz\.so|libcudnn|libnccl|libcuda|libcublas|libcudart|libnvrtc|libudev|libltdl|libfabric|libucx|libuc[pmst]|libibverbs|librdmacm|libpsm|libnl-|libefa|libmunge)'
for bin in "$@"; do
  cp -f "$bin" "$dir/bin/" && strip "$dir/bin/$(basename "$bin")"
  ldd "$bin" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    if [[ ! $name =~ $skip ]] && [[ ! -e $dir/lib/$name ]]; then cp -fL "$path" "$dir/lib/$name"; fi
  done
done
du -sh "$dir"
