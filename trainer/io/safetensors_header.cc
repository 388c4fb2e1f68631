#include "trainer/io/safetensors_header.h"

#include <algorithm>
#include <limits>

#include "common/errors.h"
#include "common/json.h"
#include "common/json_read.h"

namespace fabkit::trainer {

const SafetensorsEntry* SafetensorsHeader::find(const std::string& name) const {
  for (const auto& e : tensors)
    if (e.name == name) return &e;
  return nullptr;
}

uint64_t safetensors_dtype_bytes(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

uint64_t parse_safetensors_prefix(const unsigned char prefix[8], uint64_t file_size,
                                  const std::string& file) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];
  if (n < 2)
    throw UsageError(file + ": safetensors header length at offset 0 is " + std::to_string(n) +
                     "; a header is at least \"{}\" (2 bytes) — not a safetensors file");
  if (n > kMaxSafetensorsHeaderBytes)
    throw UsageError(file + ": safetensors header length at offset 0 is " + std::to_string(n) +
                     " bytes, above the 100 MB the format allows — corrupt or not safetensors");
  if (n > file_size - 8)
    throw UsageError(file + ": safetensors header length at offset 0 is " + std::to_string(n) +
                     " bytes but only " + std::to_string(file_size - 8) +
                     " bytes follow — the file is truncated");
  return n;
}

SafetensorsHeader parse_safetensors_header(const std::string& json_text, uint64_t file_size,
                                           const std::string& file) {
  SafetensorsHeader h;
  h.header_bytes = json_text.size();
  h.data_start = 8 + h.header_bytes;
  if (file_size < h.data_start)
    throw UsageError(file + ": file (" + std::to_string(file_size) +
                     " bytes) ends inside the safetensors header");
  h.data_bytes = file_size - h.data_start;
  Json doc;
  try {
    doc =
        parse_json(json_text, "safetensors header (bytes 8.." + std::to_string(h.data_start) + ")");
  } catch (const JsonReadError& e) {
    throw UsageError(file + ": " + e.what());
  }
  if (!doc.is_object())
    throw UsageError(file + ": safetensors header must be a JSON object, found " +
                     std::string(doc.type_name()));
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& name = it.key();
    const Json& v = it.value();
    auto bad = [&](const std::string& what) {
      return UsageError(file + ": tensor \"" + name + "\": " + what);
    };
    if (name == "__metadata__") {
      if (!v.is_object()) throw bad("__metadata__ must be an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) throw bad("__metadata__ value for \"" + m.key() + "\" is not a string");
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      throw bad("entry must be an object with dtype, shape and data_offsets");
    SafetensorsEntry e;
    e.name = name;
    if (!v.at("dtype").is_string()) throw bad("dtype must be a string");
    e.dtype = v.at("dtype").get<std::string>();
    uint64_t elem = safetensors_dtype_bytes(e.dtype);
    if (elem == 0) throw bad("unknown dtype \"" + e.dtype + "\"");
    const Json& shape = v.at("shape");
    if (!shape.is_array()) throw bad("shape must be an array");
    uint64_t numel = 1;
    for (const Json& d : shape) {
      if (!d.is_number_unsigned()) throw bad("shape entry " + d.dump() + " is not a non-negative integer");
      uint64_t x = d.get<uint64_t>();
      if (x != 0 && numel > std::numeric_limits<uint64_t>::max() / x / elem)
        throw bad("shape " + shape.dump() + " overflows");
      numel *= x;
      e.shape.push_back(static_cast<int64_t>(x));
    }
    const Json& off = v.at("data_offsets");
    if (!off.is_array() || off.size() != 2 || !off.at(0).is_number_unsigned() ||
        !off.at(1).is_number_unsigned())
      throw bad("data_offsets must be [begin, end] non-negative integers, found " + off.dump());
    e.begin = off.at(0).get<uint64_t>();
    e.end = off.at(1).get<uint64_t>();
    if (e.begin > e.end) throw bad("data_offsets " + off.dump() + " has begin > end");
    if (e.end > h.data_bytes)
      throw bad("data_offsets end " + std::to_string(e.end) + " (file offset " +
                std::to_string(h.data_start + e.end) + ") is beyond the end of the file (" +
                std::to_string(file_size) + " bytes) — truncated or corrupt");
    if (e.end - e.begin != numel * elem)
      throw bad("shape " + shape.dump() + " x " + e.dtype + " needs " + std::to_string(numel * elem) +
                " bytes but data_offsets " + off.dump() + " span " + std::to_string(e.end - e.begin));
    h.tensors.push_back(std::move(e));
  }
  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& e : h.tensors) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  for (const auto* e : by_offset) {
    if (e->begin < covered)
      throw UsageError(file + ": tensor \"" + e->name + "\" at data offset " + std::to_string(e->begin) +
                       " overlaps the previous tensor (which ends at " + std::to_string(covered) + ")");
    if (e->begin > covered)
      throw UsageError(file + ": data bytes " + std::to_string(covered) + ".." + std::to_string(e->begin) +
                       " before tensor \"" + e->name + "\" belong to no tensor — corrupt file");
    covered = e->end;
  }
  if (covered != h.data_bytes)
    throw UsageError(file + ": " + std::to_string(h.data_bytes - covered) +
                     " bytes after data offset " + std::to_string(covered) +
                     " belong to no tensor — corrupt or concatenated file");
  return h;
}

}  // namespace fabkit::trainer
