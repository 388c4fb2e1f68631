#include "trainer/monitor/event_proto.h"

#include <cstring>

#include "trainer/monitor/crc32c.h"

namespace fabkit::trainer::monitor {
namespace {

// Protobuf wire types (encoding.md): 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, uint32_t field, WireType type) {
  put_varint(out, (field << 3) | type);
}

// Byte by byte: the format is little-endian whatever the host is.
void put_le(std::string& out, uint64_t bits, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void put_double(std::string& out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, kFixed64);
  put_le(out, bits, 8);
}

void put_float(std::string& out, uint32_t field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, kFixed32);
  put_le(out, bits, 4);
}

void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

// tensorflow.Event and tensorflow.Summary field numbers.
constexpr uint32_t kFieldWallTime = 1, kFieldStep = 2, kFieldFileVersion = 3, kFieldSummary = 5;
constexpr uint32_t kFieldSummaryValue = 1;
constexpr uint32_t kFieldValueTag = 1, kFieldSimpleValue = 2;

// Event{wall_time=1, step=2, summary=5: the encoded Summary}.
std::string summary_event(double wall_time_s, int64_t step, const std::string& summary) {
  std::string out;
  put_double(out, kFieldWallTime, wall_time_s);
  // int64 is a plain varint of the two's complement (a negative step takes 10 bytes).
  put_key(out, kFieldStep, kVarint);
  put_varint(out, static_cast<uint64_t>(step));
  put_bytes(out, kFieldSummary, summary);
  return out;
}

}  // namespace

std::string encode_file_version_event(double wall_time_s) {
  std::string out;
  put_double(out, kFieldWallTime, wall_time_s);
  put_bytes(out, kFieldFileVersion, kEventFileVersion);
  return out;
}

std::string encode_scalars_event(double wall_time_s, int64_t step,
                                 const std::vector<Scalar>& values) {
  std::string summary;
  for (const Scalar& s : values) {
    std::string value;
    put_bytes(value, kFieldValueTag, s.tag);
    put_float(value, kFieldSimpleValue, s.value);
    put_bytes(summary, kFieldSummaryValue, value);
  }
  return summary_event(wall_time_s, step, summary);
}

std::string encode_text_event(double wall_time_s, int64_t step, const std::string& tag,
                              const std::string& text) {
  // SummaryMetadata.plugin_data=1 {plugin_name=1}; TensorProto dtype=1, tensor_shape=2,
  // string_val=8; Summary.Value metadata=9, tensor=8 (tensorboard/compat/proto/summary.proto,
  // tensor.proto, types.proto: DT_STRING = 7).
  constexpr uint32_t kFieldValueMetadata = 9, kFieldValueTensor = 8;
  constexpr uint32_t kFieldPluginData = 1, kFieldPluginName = 1;
  constexpr uint32_t kFieldDtype = 1, kFieldTensorShape = 2, kFieldStringVal = 8;
  constexpr uint64_t kDtString = 7;
  std::string plugin;
  put_bytes(plugin, kFieldPluginName, "text");
  std::string metadata;
  put_bytes(metadata, kFieldPluginData, plugin);
  std::string tensor;
  put_key(tensor, kFieldDtype, kVarint);
  put_varint(tensor, kDtString);
  put_bytes(tensor, kFieldTensorShape, "");  // no dimensions: a scalar
  put_bytes(tensor, kFieldStringVal, text);
  std::string value;
  put_bytes(value, kFieldValueTag, tag);
  put_bytes(value, kFieldValueMetadata, metadata);
  put_bytes(value, kFieldValueTensor, tensor);
  std::string summary;
  put_bytes(summary, kFieldSummaryValue, value);
  return summary_event(wall_time_s, step, summary);
}

std::string frame_tfrecord(const std::string& data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  const uint32_t length_crc = masked_crc32c(out.data(), 8);
  put_le(out, length_crc, 4);
  out += data;
  put_le(out, masked_crc32c(data.data(), data.size()), 4);
  return out;
}

}  // namespace fabkit::trainer::monitor
