#include "train/event_writer.h"

#include <unistd.h>

#include <cctype>
#include <chrono>

#include "core/env.h"
#include "core/proto_wire.h"
#include "input/tfrecord.h"

namespace troupe::train {
namespace {

// Protobuf wire format, just what tf.Event / tf.Summary need:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
//             SessionLog session_log = 7; }   SessionLog { SessionStatus status = 1; START = 1 }
//   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
using proto::PutLengthDelimited;

std::string EventHeader(double wall_time, int64_t step) {
  std::string event;
  proto::PutDoubleField(&event, 1, wall_time);
  if (step != 0) proto::PutVarintField(&event, 2, static_cast<uint64_t>(step));
  return event;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string EventWriter::EncodeScalarEvent(double wall_time, int64_t step, const std::string& tag,
                                           float value) {
  std::string v;
  PutLengthDelimited(&v, 1, tag);
  proto::PutFloatField(&v, 2, value);
  std::string summary;
  PutLengthDelimited(&summary, 1, v);
  std::string event = EventHeader(wall_time, step);
  PutLengthDelimited(&event, 5, summary);
  return event;
}

std::string EventWriter::EncodeFileVersionEvent(double wall_time) {
  std::string event = EventHeader(wall_time, 0);
  PutLengthDelimited(&event, 3, "brain.Event:2");
  return event;
}

std::string EventWriter::EncodeSessionStartEvent(double wall_time, int64_t step) {
  std::string event = EventHeader(wall_time, step);
  std::string log;
  proto::PutVarintField(&log, 1, 1);  // SessionLog.START
  PutLengthDelimited(&event, 7, log);
  return event;
}

EventWriter::EventWriter(std::string path, std::unique_ptr<input::TFRecordWriter> writer)
    : path_(std::move(path)), writer_(std::move(writer)) {}

EventWriter::~EventWriter() {
  if (writer_) (void)writer_->Close();
}

Result<std::unique_ptr<EventWriter>> EventWriter::Create(const std::string& dir,
                                                         const std::string& run_name) {
  TROUPE_RETURN_IF_ERROR(
      Env::Default()->CreateDirectories(dir).WithContext("TensorBoard directory"));
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  double now = Now();
  // TF's naming; the pid keeps two files of one second apart.
  std::string suffix;
  for (char c : run_name) suffix += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  std::string path = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) +
                     "." + host + "." + std::to_string(::getpid()) +
                     (suffix.empty() ? "" : "." + suffix) + ".v2";
  TROUPE_ASSIGN_OR_RETURN(auto writer, input::TFRecordWriter::Open(path));
  TROUPE_RETURN_IF_ERROR(writer->WriteRecord(EncodeFileVersionEvent(now)));
  TROUPE_RETURN_IF_ERROR(writer->Flush());
  return std::unique_ptr<EventWriter>(new EventWriter(path, std::move(writer)));
}

Status EventWriter::AddScalar(const std::string& tag, double value, int64_t step) {
  return writer_->WriteRecord(EncodeScalarEvent(Now(), step, tag, static_cast<float>(value)));
}

Status EventWriter::AddSessionStart(int64_t step) {
  return writer_->WriteRecord(EncodeSessionStartEvent(Now(), step));
}

Status EventWriter::Flush() { return writer_->Flush(); }

}  // namespace troupe::train
