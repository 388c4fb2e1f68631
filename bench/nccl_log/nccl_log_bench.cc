// The cost of reading a job's log: parse_nccl_log (prefixes, classifier, per-rank view) on a large
// log made of the real fixtures repeated, against a plain newline count of the same text (the
// floor any line-by-line reader pays). Runs alternate, because this machine is noisy; prints the
// medians, ms per MB, and the median of the per-run ratios. The goal is <= 50 ms per MB
// (docs/nccl-log.md).
//
//   fabkit-nccl-log-bench FIXTURE_DIR [--mb N] [--runs N]
//   (FIXTURE_DIR: tests/fixtures/nccl_log; every *.log under it, real/ included, is repeated in
//   a fixed order until the text reaches N MB, 50 by default)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "fabric/nccl_log/nccl_log.h"

namespace {

using fabkit::bench::median;
using fabkit::bench::ms;

size_t count_lines(const std::string& t) {
  size_t n = 0;
  for (const char* p = t.data();
       (p = static_cast<const char*>(std::memchr(p, '\n', t.data() + t.size() - p))); ++p)
    ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FIXTURE_DIR [--mb N] [--runs N]\n", argv[0]);
    return 2;
  }
  double mb = 50;
  int runs = 7;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mb" && i + 1 < argc) mb = std::max(1.0, std::atof(argv[++i]));
    if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
  }
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(argv[1], ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->path().extension() == ".log") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  std::string corpus;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    corpus += ss.str();
    if (!corpus.empty() && corpus.back() != '\n') corpus += '\n';
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "no .log file under %s\n", argv[1]);
    return 2;
  }
  const size_t want = static_cast<size_t>(mb * 1024 * 1024);
  std::string text;
  text.reserve(want + corpus.size());
  while (text.size() < want) text += corpus;
  const double size_mb = text.size() / (1024.0 * 1024.0);
  std::printf("log: %zu files repeated to %.1f MB, %zu lines\n", files.size(), size_mb,
              count_lines(text));
  std::vector<double> parse_ms, count_ms, ratio;
  size_t sink = 0;
  for (int r = 0; r < runs; ++r) {
    double c = ms([&] { sink += count_lines(text); });
    double p = ms([&] { sink += fabkit::nccl_log::parse_nccl_log(text).errors.size(); });
    count_ms.push_back(c);
    parse_ms.push_back(p);
    ratio.push_back(p / c);
  }
  std::printf("parse_nccl_log  median %8.1f ms  %6.2f ms/MB\n", median(parse_ms),
              median(parse_ms) / size_mb);
  std::printf("newline count   median %8.1f ms  %6.2f ms/MB\n", median(count_ms),
              median(count_ms) / size_mb);
  std::printf("ratio parse/count (median of %d runs): %.1fx   [sink %zu]\n", runs, median(ratio),
              sink % 10);
  return 0;
}
