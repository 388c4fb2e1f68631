// The bytes of a TensorBoard event file: TFRecord frames around tensorflow.Event protobufs.
//
// The four Event fields and the Summary.Value fields we write are encoded by hand instead of with
// generated protobuf code: protoc output plus libprotobuf (whose versions must match each other
// and must not clash with the protobuf copies other libraries in this process carry: see
// trainer/tokenizer/sentencepiece_shim.h) would be a large dependency for six fields of three
// wire types. The field numbers are TensorBoard's (tensorboard/compat/proto/event.proto,
// summary.proto); tests/unit/trainer_monitor reads the output back with the `tensorboard` package.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabkit::trainer::monitor {

// What TensorBoard expects in the first record of every event file.
inline constexpr const char* kEventFileVersion = "brain.Event:2";

struct Scalar {
  std::string tag;  // "train/loss"
  float value = 0;  // Summary.Value.simple_value is a float in the proto
};

// Event{wall_time=1: double, file_version=3: string}.
std::string encode_file_version_event(double wall_time_s);
// Event{wall_time=1, step=2: int64, summary=5: Summary{value=1: repeated Value{tag=1: string,
// simple_value=2: float}}}.
std::string encode_scalars_event(double wall_time_s, int64_t step,
                                 const std::vector<Scalar>& values);

// A text summary (TensorBoard's text dashboard renders it as Markdown): Event{wall_time=1, step=2,
// summary=5: Summary{value=1: Value{tag=1, metadata=9: SummaryMetadata{plugin_data=1:
// PluginData{plugin_name=1: "text"}}, tensor=8: TensorProto{dtype=1: DT_STRING (7),
// tensor_shape=2: {} (a scalar), string_val=8: text}}}}.
std::string encode_text_event(double wall_time_s, int64_t step, const std::string& tag,
                              const std::string& text);

// TFRecord framing: uint64 length (little-endian), masked CRC-32C of those 8 bytes, the data,
// masked CRC-32C of the data.
std::string frame_tfrecord(const std::string& data);

}  // namespace fabkit::trainer::monitor
