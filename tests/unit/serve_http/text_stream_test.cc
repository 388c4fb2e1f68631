// Incremental detokenization (never a broken UTF-8 sequence) and stop strings (held back while
// they may match, never emitted).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainer/serve/http/text_stream.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::serve {
namespace {

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80                 ? 1
               : c >= 0xC2 && c <= 0xDF ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

std::vector<std::string> pieces_of(const std::string& bytes) {
  trainer::ByteTokenizer tok;
  IncrementalDecoder d(tok);
  std::vector<std::string> pieces;
  for (unsigned char c : bytes) pieces.push_back(d.add(c));
  pieces.push_back(d.flush());
  return pieces;
}

TEST(ServeTextStream, MultiByteCharactersAreHeldUntilComplete) {
  const std::string text =
      "a\xC3\xA9"
      "b\xE2\x82\xAC\xF0\x9F\x98\x80!";  // aébEUR😀!
  std::vector<std::string> pieces = pieces_of(text);
  std::string joined;
  for (const auto& p : pieces) {
    EXPECT_TRUE(valid_utf8(p)) << p;
    joined += p;
  }
  EXPECT_EQ(joined, text);
  // The lead byte of é alone gives nothing; its second byte gives the whole character.
  EXPECT_EQ(pieces[1], "");
  EXPECT_EQ(pieces[2], "\xC3\xA9");
  // € (3 bytes) comes whole with its last byte; 😀's 4 bytes: three empty pieces, then it.
  EXPECT_EQ(pieces[4] + pieces[5], "");
  EXPECT_EQ(pieces[6], "\xE2\x82\xAC");
  EXPECT_EQ(pieces[7] + pieces[8] + pieces[9], "");
  EXPECT_EQ(pieces[10], "\xF0\x9F\x98\x80");
}

TEST(ServeTextStream, InvalidBytesBecomeReplacementCharacters) {
  // A stray continuation byte, a lead byte cut off by an ASCII byte, and one left at the end.
  std::vector<std::string> pieces = pieces_of("x\x80y\xE2z\xF0\x9F");
  std::string joined;
  for (const auto& p : pieces) {
    EXPECT_TRUE(valid_utf8(p));
    joined += p;
  }
  EXPECT_EQ(joined, "x\xEF\xBF\xBDy\xEF\xBF\xBDz\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(ServeTextStream, CompleteUtf8Prefix) {
  EXPECT_EQ(complete_utf8_prefix(""), 0u);
  EXPECT_EQ(complete_utf8_prefix("abc"), 3u);
  EXPECT_EQ(complete_utf8_prefix("ab\xC3"), 2u);
  EXPECT_EQ(complete_utf8_prefix("ab\xC3\xA9"), 4u);
  EXPECT_EQ(complete_utf8_prefix("\xF0\x9F\x98"), 0u);
  EXPECT_EQ(complete_utf8_prefix("\x80"), 1u);  // invalid, but no more bytes can fix it
}

// A tokenizer whose decode of a token depends on what precedes it, as SentencePiece's leading
// space does: token 1 is "▁w" -> " w" after another token and "w" at the start.
class SpaceTokenizer : public trainer::ByteTokenizer {
 public:
  std::string decode(const std::vector<int64_t>& ids) const override {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) out += (i == 0 ? "w" : " w");
    return out;
  }
};

TEST(ServeTextStream, ContextDependentDecodingEmitsOnlyWhatIsAdded) {
  SpaceTokenizer tok;
  IncrementalDecoder d(tok);
  std::string joined;
  for (int i = 0; i < 4; ++i) joined += d.add(1);
  joined += d.flush();
  EXPECT_EQ(joined, "w w w w");
}

std::string run_stop(const std::vector<std::string>& stops, const std::vector<std::string>& in,
                     bool* stopped) {
  StopMatcher m(stops);
  std::string out;
  for (const auto& piece : in) out += m.add(piece);
  *stopped = m.stopped();
  if (!m.stopped()) out += m.flush();
  return out;
}

TEST(ServeTextStream, StopStringsAcrossPieces) {
  bool stopped = false;
  EXPECT_EQ(run_stop({"END"}, {"hello E", "N", "D and more"}, &stopped), "hello ");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(run_stop({"END"}, {"hello E", "N", "d"}, &stopped), "hello ENd");
  EXPECT_FALSE(stopped);
  // The earliest match of several wins.
  EXPECT_EQ(run_stop({"zz", "b"}, {"aab", "zz"}, &stopped), "aa");
  // A stop string at the very start: nothing emitted.
  EXPECT_EQ(run_stop({"ab"}, {"a", "b"}, &stopped), "");
  EXPECT_TRUE(stopped);
}

TEST(ServeTextStream, StopHoldsBackOnlyAPossibleMatch) {
  StopMatcher m({"\n\nUser:"});
  EXPECT_EQ(m.add("one\n"), "one");
  EXPECT_EQ(m.add("\nUs"), "");
  EXPECT_EQ(m.add("ed"), "\n\nUsed");  // not the stop string after all: released
  EXPECT_EQ(m.add("x\n\nUser: hi"), "x");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.add("more"), "");
}

TEST(ServeTextStream, StopWithMultiByteText) {
  bool stopped = false;
  EXPECT_EQ(run_stop({"é!"}, {"caf", "\xC3\xA9", "!", "x"}, &stopped), "caf");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(run_stop({"\xC3\xA9!"}, {"\xC3\xA9", "\xC3\xA9?"}, &stopped), "\xC3\xA9\xC3\xA9?");
}

}  // namespace
}  // namespace fabkit::serve
