// ckpt_tool: drives Troupe's checkpoint library from the Python interop tests and the crash
// test. Tensors travel as a manifest (one "key<TAB>dtype<TAB>d0,d1,..<TAB>file" line per
// tensor, dims empty for a scalar) plus raw little-endian element bytes per file; string
// elements are stored as u64 length + bytes.
//
//   ckpt_tool write PREFIX MANIFEST [--shards N] [--snappy-index] [--block-size B]
//                                                   bundle with exactly these keys
//   ckpt_tool dump PREFIX OUTDIR                    every tensor -> OUTDIR/manifest.tsv + files
//   ckpt_tool keras-write PREFIX MANIFEST           object graph laid out like Keras 3
//   ckpt_tool keras-read PREFIX MANIFEST OUTDIR     restore a Keras checkpoint by object graph
//   ckpt_tool tree-write PREFIX MANIFEST            object graph from object paths (see below)
//   ckpt_tool tree-read PREFIX MANIFEST OUTDIR      restore such a graph by structure
//   ckpt_tool crash-writer DIR SAVES MB             CheckpointManager saves for the crash test
//   ckpt_tool verify-latest DIR                     latest checkpoint complete and as written
//
// keras-* manifests use role keys: model/<layer>/<weight>, optimizer/iterations,
// optimizer/learning_rate, optimizer/<slot list>/<i>, gen/state, save_counter.
// tree-* manifests use object paths ("opt/beta1_power": variable beta1_power of object opt)
// and slot paths "<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>".
#include <iostream>
#include <string>

#include "tests/checkpoint/ckpt_tool.h"

int main(int argc, char** argv) {
  using namespace troupe::ckpt::tool;
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "write") return Write(argc, argv);
  if (cmd == "dump") return Dump(argc, argv);
  if (cmd == "keras-write") return KerasWrite(argc, argv);
  if (cmd == "keras-read") return KerasRead(argc, argv);
  if (cmd == "tree-write") return TreeWrite(argc, argv);
  if (cmd == "tree-read") return TreeRead(argc, argv);
  if (cmd == "crash-writer") return CrashWriter(argc, argv);
  if (cmd == "verify-latest") return VerifyLatest(argc, argv);
  std::cerr << "usage: ckpt_tool write|dump|keras-write|keras-read|tree-write|tree-read|"
               "crash-writer|verify-latest ...\n";
  return 2;
}
