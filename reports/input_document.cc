#include "reports/input_document.h"

#include <sstream>
#include <stdexcept>

#include "common/errors.h"
#include "common/input_file.h"
#include "common/json_read.h"

namespace fabkit::reports {
namespace {

constexpr const char* kAccepted =
    "fabcheck report reads a fabcheck --json report (kind node, pair, cluster, topo, nccl-log, "
    "validate), a profile (cluster.json, kind fabkit-profile) or fabtrain's metrics.jsonl (one "
    "JSON object per line with \"step\")";

bool is_metrics_record(const Json& j) {
  return j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
         !j.contains("kind");
}

}  // namespace

const char* to_string(InputKind k) {
  switch (k) {
    case InputKind::kNodeReport:
      return "node report";
    case InputKind::kPairReport:
      return "pair report";
    case InputKind::kClusterReport:
      return "cluster report";
    case InputKind::kOtherReport:
      return "report";
    case InputKind::kProfile:
      return "profile";
    case InputKind::kMetrics:
      return "metrics.jsonl";
  }
  return "unknown";
}

InputKind detect_kind(const Json& doc) {
  if (is_metrics_record(doc)) return InputKind::kMetrics;
  if (!doc.is_object()) throw std::invalid_argument("the top level is not a JSON object");
  if (doc.contains("error") && doc.contains("kind")) {
    // The message is quoted when it has the documented shape (error.message, a string); any
    // other shape is still an error document, not an internal error.
    const Json& e = doc["error"];
    const Json message = e.is_object() ? e.value("message", Json()) : e;
    throw std::invalid_argument(
        "this is an error document (a failed run), not a report: " +
        (message.is_string() ? message.get<std::string>() : message.dump().substr(0, 200)));
  }
  if (!doc.contains("kind") || !doc["kind"].is_string())
    throw std::invalid_argument("no string field 'kind' and no integer 'step'");
  std::string kind = doc["kind"].get<std::string>();
  if (kind == "fabkit-profile") return InputKind::kProfile;
  if (!doc.contains("findings") || !doc["findings"].is_array())
    throw std::invalid_argument("kind '" + kind +
                                "' but no 'findings' array (not a fabcheck report)");
  if (kind == "node") return InputKind::kNodeReport;
  if (kind == "pair") {
    if (!doc.contains("pair") || !doc["pair"].is_object())
      throw std::invalid_argument("kind 'pair' without a 'pair' section");
    return InputKind::kPairReport;
  }
  // `fabcheck cluster --plan-only` is kind cluster too, with a "plan" section and no matrix.
  if (kind == "cluster" && doc.contains("cluster") && doc["cluster"].is_object())
    return InputKind::kClusterReport;
  return InputKind::kOtherReport;
}

std::vector<Json> parse_jsonl(const std::string& text) {
  std::vector<Json> out;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "line " + std::to_string(n);
    Json j;
    try {
      j = parse_json(line, where);
    } catch (const JsonReadError& e) {
      throw std::invalid_argument(e.too_deep() ? e.what() : where + " is not a JSON object");
    }
    if (!j.is_object()) throw std::invalid_argument(where + " is not a JSON object");
    out.push_back(std::move(j));
  }
  return out;
}

InputDocument load_input(const std::string& path) {
  const std::string text =
      read_input(path, {"", kMaxReportBytes,
                        std::string(kAccepted) + " (of a longer metrics.jsonl, give its tail: "
                                                 "tail -n 100000 metrics.jsonl > part.jsonl)"});
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw UsageError(path + ": empty file; " + kAccepted);
  InputDocument d;
  d.path = path;
  Json j;
  bool one_document = true;
  try {
    j = parse_json(text, path);
  } catch (const JsonReadError& e) {
    if (e.too_deep()) throw UsageError(std::string(e.what()) + "; " + kAccepted);
    one_document = false;
  }
  try {
    if (one_document) {
      d.kind = detect_kind(j);
      if (d.kind == InputKind::kMetrics)
        d.records.push_back(std::move(j));
      else
        d.doc = std::move(j);
      return d;
    }
    // Not one document: maybe JSONL (metrics.jsonl has one record per line).
    std::vector<Json> records;
    try {
      records = parse_jsonl(text);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("not JSON, and not JSONL either: ") + e.what());
    }
    for (size_t i = 0; i < records.size(); ++i)
      if (!is_metrics_record(records[i]))
        throw std::invalid_argument("JSONL record " + std::to_string(i + 1) +
                                    " has no integer 'step' (not a fabtrain metrics record)");
    d.kind = InputKind::kMetrics;
    d.records = std::move(records);
    return d;
  } catch (const std::invalid_argument& e) {
    throw UsageError(path + ": unknown input: " + e.what() + "; " + kAccepted);
  }
}

}  // namespace fabkit::reports
