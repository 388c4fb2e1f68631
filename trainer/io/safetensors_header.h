// The safetensors container (huggingface/safetensors format spec): 8-byte little-endian header
// length N, N bytes of UTF-8 JSON {name: {dtype, shape, data_offsets: [begin, end]}, optional
// "__metadata__": {str: str}}, then the byte buffer the offsets index (relative to its start).
// Header parsing is pure (no I/O, no torch) so it is unit-tested and fuzzed on bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fabkit::trainer {

// The safetensors reference implementation refuses headers above 100 MB; so do we, so a
// corrupted length cannot make us allocate gigabytes.
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull * 1000 * 1000;

struct SafetensorsEntry {
  std::string name;
  std::string dtype;           // "F32", "BF16", "F16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<int64_t> shape;
  uint64_t begin = 0;          // byte offsets within the data buffer
  uint64_t end = 0;
};

struct SafetensorsHeader {
  uint64_t header_bytes = 0;   // N
  uint64_t data_start = 0;     // 8 + N: file offset of the data buffer
  uint64_t data_bytes = 0;     // file size - data_start
  std::vector<SafetensorsEntry> tensors;  // in header order
  std::map<std::string, std::string> metadata;
  const SafetensorsEntry* find(const std::string& name) const;
};

// Bytes per element of a safetensors dtype; 0 when unknown.
uint64_t safetensors_dtype_bytes(const std::string& dtype);

// Reads N from the first 8 bytes (little-endian) and checks it against the file size.
uint64_t parse_safetensors_prefix(const unsigned char prefix[8], uint64_t file_size,
                                  const std::string& file);

// Validates everything the spec requires: JSON object; known dtypes; non-negative shapes;
// begin <= end within the buffer; (end - begin) = product(shape) x dtype size; no two tensors
// overlap and no byte of the buffer is left unindexed. Throws UsageError naming the file, the
// tensor and the byte offset.
SafetensorsHeader parse_safetensors_header(const std::string& json_text, uint64_t file_size,
                                           const std::string& file);

}  // namespace fabkit::trainer
