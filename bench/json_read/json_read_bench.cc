// The cost of the depth limit (common/json_read.h: a parser callback that sees every value) on a
// real document: parse_json against nlohmann's plain parse of the same text, alternated run by
// run because this machine is noisy; prints the medians and the median of the per-run ratios.
//
//   fabkit-json-read-bench FILE [--jsonl] [--sorted] [--runs N]
//   (--jsonl: one parse per line, as fabtrain reads its data; --sorted: nlohmann::json, as the
//   HF tokenizer reader uses, whose objects are maps: ordered_json's member lookup is linear)
//
// The plain parse is the reference this bench measures against, so this file is the one place
// besides the helper allowed to call it (tests/integration/source/check_json_reads.py).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "common/json_read.h"

using fabkit::bench::median;
using fabkit::bench::ms;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [--jsonl] [--sorted] [--runs N]\n", argv[0]);
    return 2;
  }
  bool jsonl = false, sorted = false;
  int runs = 11;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--jsonl") jsonl = true;
    if (a == "--sorted") sorted = true;
    if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::vector<std::string> docs;
  if (jsonl) {
    std::istringstream lines(text);
    for (std::string l; std::getline(lines, l);)
      if (!l.empty()) docs.push_back(l);
  } else {
    docs.push_back(text);
  }
  size_t sink = 0;
  auto plain = [&] {
    for (const auto& d : docs)
      sink += sorted ? nlohmann::json::parse(d).size() : fabkit::Json::parse(d).size();
  };
  auto limited = [&] {
    for (const auto& d : docs)
      sink += sorted ? fabkit::parse_json_sorted(d, "bench").size()
                     : fabkit::parse_json(d, "bench").size();
  };
  plain();  // warm the allocator and the page cache
  limited();
  std::vector<double> t_plain, t_limited, ratio;
  for (int r = 0; r < runs; ++r) {
    double a = ms(plain), b = ms(limited);
    t_plain.push_back(a);
    t_limited.push_back(b);
    ratio.push_back(b / a);
  }
  std::printf("%s: %zu bytes, %zu document(s), %s, %d runs\n", argv[1], text.size(), docs.size(),
              sorted ? "nlohmann::json" : "ordered_json", runs);
  std::printf("  nlohmann parse      %9.1f ms (median)\n", median(t_plain));
  std::printf("  parse_json (limit)  %9.1f ms (median)\n", median(t_limited));
  std::printf("  ratio parse_json / parse: %.3f (median of per-run ratios)\n", median(ratio));
  return sink == 0 ? 1 : 0;
}
