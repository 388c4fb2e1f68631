// The JSON documents fabkit already writes, read back for rendering (HTML, Prometheus, baselines).
// The kind is decided from each document's own fields, never from its file name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"

namespace fabkit::reports {

// The largest document `fabcheck report` and `fabcheck profile` read (a cluster report of
// thousands of nodes is a few MiB; a metrics.jsonl of 200k steps fits). Memory is several times
// the text once parsed, so the cap keeps that bounded too.
inline constexpr uint64_t kMaxReportBytes = 64ull << 20;

enum class InputKind {
  kNodeReport,     // fabcheck node --json (kind "node")
  kPairReport,     // fabcheck pair --json (kind "pair")
  kClusterReport,  // fabcheck cluster --json (kind "cluster", section "cluster")
  kOtherReport,    // any other report envelope (topo, nccl-log, validate): findings only
  kProfile,        // cluster.json (kind "fabkit-profile")
  kMetrics,        // fabtrain's metrics.jsonl: one JSON object per line with "step"
};
const char* to_string(InputKind k);

struct InputDocument {
  std::string path;
  InputKind kind = InputKind::kOtherReport;
  Json doc;                   // the document (reports and profiles)
  std::vector<Json> records;  // metrics.jsonl records, in file order
};

// Decides the kind of an already parsed document or JSONL record list; throws
// std::invalid_argument saying what was expected when it is none of the kinds above.
InputKind detect_kind(const Json& doc);
// Reads and classifies a file (common/input_file.h: a file or a pipe, at most kMaxReportBytes).
// Throws UsageError naming the file (unreadable, over the cap, not JSON, unknown kind, a JSONL
// line that is not an object) and what fabcheck report accepts.
InputDocument load_input(const std::string& path);
// A JSONL text as records: empty lines skipped; throws std::invalid_argument naming the line.
std::vector<Json> parse_jsonl(const std::string& text);

}  // namespace fabkit::reports
