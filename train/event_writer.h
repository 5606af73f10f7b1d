// EventWriter: TensorBoard event files (`events.out.tfevents.<time>.<host>`), TFRecord-framed
// tf.Event protos with scalar summaries, readable by TensorBoard and by
// tf.compat.v1.train.summary_iterator. The first record is the file_version event, as TF
// writes it. A resumed run appends a new file, marks the restart (AddSessionStart) and
// continues after the checkpointed step.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"

namespace troupe::input {
class TFRecordWriter;
}

namespace troupe::train {

class EventWriter {
 public:
  // Creates the directory if needed and a new event file in it; a `run_name` (job.name) ends
  // the file name, as tf.summary's filename_suffix does.
  static Result<std::unique_ptr<EventWriter>> Create(const std::string& dir,
                                                     const std::string& run_name = "");
  ~EventWriter();

  Status AddScalar(const std::string& tag, double value, int64_t step);
  // Marks a restart at `step` (tf.SessionLog START): TensorBoard drops what earlier files
  // logged at `step` and later, so a run resumed from an older checkpoint leaves no
  // duplicate steps.
  Status AddSessionStart(int64_t step);
  Status Flush();
  const std::string& path() const { return path_; }

  // The serialized tf.Event for a scalar (exposed for tests).
  static std::string EncodeScalarEvent(double wall_time, int64_t step, const std::string& tag,
                                       float value);
  static std::string EncodeFileVersionEvent(double wall_time);
  static std::string EncodeSessionStartEvent(double wall_time, int64_t step);

 private:
  EventWriter(std::string path, std::unique_ptr<input::TFRecordWriter> writer);
  std::string path_;
  std::unique_ptr<input::TFRecordWriter> writer_;
};

}  // namespace troupe::train
