// NcclLogReader: a log read in pieces (as `fabcheck nccl-log` reads a file or a pipe) gives the
// summary the whole text gives, and every list the parser keeps stays bounded however many
// lines of one shape the log holds (issue #36: 512 MiB of log took 4.6 GB).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "fabric/nccl_log/nccl_log.h"
#include "tests/support/ttar.h"

namespace fabkit::nccl_log {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::filesystem::path> fixture_logs() {
  std::vector<std::filesystem::path> logs;
  const auto dir = fabkit::testing::project_fixtures() / "nccl_log";
  for (const auto& sub : {dir, dir / "real"})
    for (const auto& e : std::filesystem::directory_iterator(sub))
      if (e.path().extension() == ".log") logs.push_back(e.path());
  std::sort(logs.begin(), logs.end());
  return logs;
}

Json read_in_pieces(const std::vector<NcclLogInput>& inputs, size_t piece) {
  NcclLogReader r;
  for (const auto& in : inputs) {
    r.begin(in.name);
    for (size_t at = 0; at < in.text.size(); at += piece)
      r.feed(std::string_view(in.text).substr(at, piece));
  }
  return to_json(r.finish());
}

TEST(NcclLogReader, PiecesGiveTheSummaryOfTheWholeTextForEveryFixture) {
  const auto logs = fixture_logs();
  ASSERT_GT(logs.size(), 300u);
  for (const auto& path : logs) {
    const std::string text = read_file(path);
    const Json whole = to_json(parse_nccl_log(text));
    // 1 byte: every line cut everywhere; 4093: lines cut at odd places; one piece.
    for (size_t piece : {size_t{1}, size_t{4093}, text.size() + 1}) {
      if (piece == 1 && text.size() > (256 << 10)) continue;  // time, not coverage
      EXPECT_EQ(read_in_pieces({{"", text}}, piece), whole)
          << path.filename() << " in pieces of " << piece;
    }
  }
}

TEST(NcclLogReader, SeveralInputsAsParseNcclLogsReadsThem) {
  const auto dir = fabkit::testing::project_fixtures() / "nccl_log";
  // The second has no final newline: its last line still ends with its input.
  std::vector<NcclLogInput> in{{"a.log", read_file(dir / "nccl_2.18_errors.log")},
                               {"b.log", read_file(dir / "nccl_2.21_roce.log")},
                               {"c.log", "host:7:7 [0] NCCL WARN NET/IB : Got completion"}};
  EXPECT_EQ(read_in_pieces(in, 777), to_json(parse_nccl_logs(in)));
}

TEST(NcclLogReader, ALineWithoutEndIsCountedNotKept) {
  NcclLogReader r;
  r.begin("");
  const std::string piece(1 << 20, 'x');
  for (int i = 0; i < 64; ++i) r.feed(piece);  // 64 MiB, no newline
  r.feed("\nhost:1:1 [0] NCCL INFO Using network IB\n");
  const NcclLogSummary s = r.finish();
  EXPECT_EQ(s.lines, 2);
  EXPECT_EQ(s.network, "IB");
}

std::string repeated(int n, const std::function<std::string(int)>& line) {
  std::string text;
  for (int i = 0; i < n; ++i) text += line(i) + "\n";
  return text;
}

TEST(NcclLogParser, NetworksSeenKeepsTheFirst64AndCountsTheRest) {
  const NcclLogSummary s = parse_nccl_log(repeated(100, [](int i) {
    return "host:" + std::to_string(i % 3) + ":1 [0] NCCL INFO Using network IB";
  }));
  EXPECT_EQ(s.networks_seen.size(), 64u);
  EXPECT_EQ(s.networks_seen_dropped, 36);
  EXPECT_EQ(to_json(s)["dropped"]["networks_seen"], 36);
}

TEST(NcclLogParser, ProcessesPastTheCapAreReadWithoutPerProcessState) {
  const int n = 70000;
  const NcclLogSummary s = parse_nccl_log(repeated(n, [](int i) {
    return "host:" + std::to_string(i + 1) + ":1 [0] NCCL INFO cudaDriverVersion 12080";
  }));
  EXPECT_EQ(s.lines, n);
  EXPECT_EQ(s.nccl_lines, n);
  EXPECT_EQ(s.ranks.size(), 4096u);
  EXPECT_EQ(s.ranks_dropped, 65536 - 4096);
  EXPECT_EQ(s.untracked_process_lines, n - 65536);
  EXPECT_EQ(to_json(s)["dropped"]["process_lines"], n - 65536);
}

TEST(NcclLogParser, UnruledWarningsPastTheCapAreCountedNotJudged) {
  const NcclLogSummary s = parse_nccl_log(repeated(12000, [](int i) {
    return "host:1:1 [0] NCCL WARN something this parser has no rule for " + std::to_string(i);
  }));
  EXPECT_EQ(s.unruled_warnings_dropped, 2000);
  ASSERT_EQ(s.failures.size(), 1u);
  EXPECT_EQ(s.failures[0].kind, "nccl_warning");
  EXPECT_EQ(s.failures[0].count, 10000);
  EXPECT_LE(s.errors.size(), 2001u);
  EXPECT_EQ(to_json(s)["dropped"]["unruled_warnings"], 2000);
}

TEST(NcclLogParser, AnOrdinaryLogHasNoDroppedSection) {
  const auto dir = fabkit::testing::project_fixtures() / "nccl_log";
  EXPECT_FALSE(
      to_json(parse_nccl_log(read_file(dir / "nccl_2.18_errors.log"))).contains("dropped"));
}

}  // namespace
}  // namespace fabkit::nccl_log
