#include "trainer/serve/client/sse_reader.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace fabkit::serve {
namespace {

std::vector<SseEvent> read_all(const std::string& bytes, size_t piece) {
  SseReader r;
  std::vector<SseEvent> events;
  for (size_t i = 0; i < bytes.size(); i += piece)
    r.feed(std::string_view(bytes).substr(i, piece), [&](const SseEvent& e) { events.push_back(e); });
  return events;
}

std::vector<std::string> datas(const std::vector<SseEvent>& events) {
  std::vector<std::string> d;
  for (const SseEvent& e : events) d.push_back(e.data);
  return d;
}

TEST(SseReader, EventsAreTheSameHoweverTheBytesAreSplit) {
  const std::string stream =
      ": keep-alive\r\n\r\n"
      "data: {\"a\":1}\r\n\r\n"
      "event: ping\ndata: two\ndata:lines\nid: 7\n\n"
      "data: {\"b\":2}\r\r"
      "data: [DONE]\n\n";
  const std::vector<std::string> want = {"{\"a\":1}", "two\nlines", "{\"b\":2}", "[DONE]"};
  for (size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, stream.size()}) {
    const std::vector<SseEvent> events = read_all(stream, piece);
    EXPECT_EQ(datas(events), want) << "fed " << piece << " bytes at a time";
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(events[0].event, "message");
    EXPECT_EQ(events[1].event, "ping");
    EXPECT_EQ(events[1].id, "7");
  }
}

TEST(SseReader, AnEventIsDispatchedOnlyAtItsBlankLine) {
  SseReader r;
  int seen = 0;
  r.feed("data: x\n", [&](const SseEvent&) { ++seen; });
  EXPECT_EQ(seen, 0);
  EXPECT_TRUE(r.pending());
  r.feed("\n", [&](const SseEvent&) { ++seen; });
  EXPECT_EQ(seen, 1);
  EXPECT_FALSE(r.pending());
}

TEST(SseReader, ACrLfSplitAcrossReadsEndsOneLineNotTwo) {
  // "\r" then "\n" in the next read is one line end; a second blank line would dispatch the
  // event early, before its second data line.
  SseReader r;
  std::vector<std::string> got;
  auto keep = [&](const SseEvent& e) { got.push_back(e.data); };
  r.feed("data: a\r", keep);
  r.feed("\ndata: b\r\n\r\n", keep);
  EXPECT_EQ(got, std::vector<std::string>{"a\nb"});
}

TEST(SseReader, CommentsAndUnknownFieldsAreIgnoredAndAnEventWithoutDataIsDropped) {
  EXPECT_EQ(datas(read_all(":only a comment\n\nretry: 10\nfoo: bar\n\nevent: x\n\n", 4)),
            std::vector<std::string>{});
  // "data" without a colon is a data line with an empty value.
  EXPECT_EQ(datas(read_all("data\n\n", 1)), std::vector<std::string>{""});
  // Only one space after the colon is the separator.
  EXPECT_EQ(datas(read_all("data:  two spaces\n\n", 5)), std::vector<std::string>{" two spaces"});
}

TEST(SseReader, ALineWithoutEndIsRefusedAtTheLimitNotKeptForever) {
  SseReader r;
  const std::string chunk(64 * 1024, 'x');
  EXPECT_THROW(
      {
        for (size_t fed = 0; fed <= SseReader::kMaxBytes + chunk.size(); fed += chunk.size())
          r.feed(chunk, [](const SseEvent&) {});
      },
      std::runtime_error);
}

}  // namespace
}  // namespace fabkit::serve
