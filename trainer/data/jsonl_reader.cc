#include "trainer/data/jsonl_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/errors.h"
#include "common/regular_file.h"
#include "common/json_read.h"

namespace fabkit::trainer {

std::string line_ref(const std::filesystem::path& file, size_t line) {
  return file.string() + ":" + std::to_string(line);
}

void reject_line(JsonlContents& c, bool skip, const std::string& reason) {
  if (!skip) throw UsageError(reason + " (fix the line, or pass --skip-bad-lines to skip such lines)");
  ++c.lines_skipped;
  if (c.skip_reasons.size() < 5) c.skip_reasons.push_back(reason);
}

namespace {

void add_line(JsonlContents& c, std::string& text, size_t line, const std::filesystem::path& file,
              bool skip_bad_lines) {
  if (!text.empty() && text.back() == '\r') text.pop_back();  // files written on Windows
  const std::string where = line_ref(file, line);
  if (text.find_first_not_of(" \t") == std::string::npos) {
    reject_line(c, skip_bad_lines, where + ": empty line");
    return;
  }
  Json v;
  try {
    v = parse_json(text, where);
  } catch (const JsonReadError& e) {
    reject_line(c, skip_bad_lines, e.what());
    return;
  }
  if (!v.is_object()) {
    reject_line(c, skip_bad_lines,
                where + ": expected a JSON object, found " + std::string(v.type_name()));
    return;
  }
  c.records.push_back({line, std::move(v)});
}

// The records are held in memory (as JSON, then as token ids): a file larger than the host's
// memory cannot be loaded, and reading one would only end in the OOM killer. 0: unknown.
uint64_t host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace

JsonlContents read_jsonl(const std::filesystem::path& file, bool skip_bad_lines) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw UsageError(file.string() + ": cannot open the data file");
  // A regular file only: a FIFO or /dev/zero has no end to read to.
  const UniqueFd fd = open_regular_file(file, file.string() + " (the data file)");
  const uint64_t memory = host_memory_bytes();
  const uint64_t limit = memory > 0 ? memory : UINT64_MAX;
  const std::string too_big =
      " more than this host's memory (" + std::to_string(memory) +
      " bytes), which must hold the dataset: split it or use a host with more memory";
  const uint64_t size = open_file_size(fd.get(), file.string());
  if (size > limit)
    throw UsageError(file.string() + ": " + std::to_string(size) + " bytes," + too_big);
  JsonlContents c;
  std::string pending, text;
  std::vector<char> chunk(1 << 20);
  uint64_t total = 0;
  size_t line = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw UsageError(file.string() + ": read failed at byte " + std::to_string(total) + " (" +
                       std::strerror(errno) + ")");
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > limit) throw UsageError(file.string() + ": grew while being read to" + too_big);
    // What pending held before holds no newline: only the new bytes are searched, so a line of
    // many chunks is scanned once.
    size_t search = pending.size(), from = 0;
    pending.append(chunk.data(), static_cast<size_t>(n));
    for (size_t nl; (nl = pending.find('\n', search)) != std::string::npos;
         from = search = nl + 1) {
      text.assign(pending, from, nl - from);
      add_line(c, text, ++line, file, skip_bad_lines);
    }
    pending.erase(0, from);
  }
  if (!pending.empty()) add_line(c, pending, ++line, file, skip_bad_lines);  // no final newline
  return c;
}

}  // namespace fabkit::trainer
