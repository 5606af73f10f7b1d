// Test helper: writes DIR/events.out.tfevents.* with scalars loss=1/(step+1) and
// accuracy=step/10 for steps 0..9, plus a NaN, a -0 and a denormal at step 10 (values that
// CAF would garble, written here without crossing CAF), and prints the file's path.
// `event_writer_tool DIR resume S` writes a resumed run's file instead: a restart at S, then
// loss=2/(step+1) for steps S..9.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "train/event_writer.h"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) return 2;
  auto w = troupe::train::EventWriter::Create(argv[1]);
  if (!w.ok()) {
    std::fprintf(stderr, "%s\n", w.status().ToString().c_str());
    return 1;
  }
  if (argc == 4) {
    const int start = std::atoi(argv[3]);
    if (!(*w)->AddSessionStart(start).ok()) return 1;
    for (int step = start; step < 10; ++step) {
      if (!(*w)->AddScalar("loss", 2.0 / (step + 1), step).ok()) return 1;
    }
    if (!(*w)->Flush().ok()) return 1;
    std::printf("%s\n", (*w)->path().c_str());
    return 0;
  }
  for (int step = 0; step < 10; ++step) {
    if (!(*w)->AddScalar("loss", 1.0 / (step + 1), step).ok()) return 1;
    if (!(*w)->AddScalar("accuracy", step / 10.0, step).ok()) return 1;
  }
  (void)(*w)->AddScalar("nan", std::numeric_limits<double>::quiet_NaN(), 10);
  (void)(*w)->AddScalar("negzero", -0.0, 10);
  (void)(*w)->AddScalar("denormal", 1e-40, 10);
  if (!(*w)->Flush().ok()) return 1;
  std::printf("%s\n", (*w)->path().c_str());
  return 0;
}
