#include "trainer/tokenizer/byte_level.h"

#include <gtest/gtest.h>

#include <set>

#include "common/errors.h"
#include "trainer/tokenizer/pcre2_regex.h"

namespace fabkit::trainer {
namespace {

TEST(ByteLevel, Gpt2AlphabetIsABijectionWithTheKnownAnchors) {
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& c = byte_level_char(static_cast<uint8_t>(b));
    seen.insert(c);
    size_t i = 0;
    auto cp = next_code_point(c, i);
    ASSERT_TRUE(cp);
    EXPECT_EQ(i, c.size());
    EXPECT_EQ(byte_level_byte(*cp), b);
  }
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(byte_level_char(' '), "\u0120");   // Ġ
  EXPECT_EQ(byte_level_char('\n'), "\u010A");  // Ċ
  EXPECT_EQ(byte_level_char('a'), "a");
  EXPECT_EQ(byte_level_char(0xAD), "\u0143");  // soft hyphen: the last remapped byte
  EXPECT_EQ(to_byte_level("é "), "\u00C3\u00A9\u0120");
  EXPECT_FALSE(byte_level_byte(U'\u0144'));
  EXPECT_FALSE(byte_level_byte(U' '));  // a raw space is not a byte character
}

TEST(ByteLevel, LossyUtf8ReplacesEachMaximalSubpart) {
  EXPECT_EQ(utf8_lossy("ok é 😀"), "ok é 😀");
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), "\uFFFD");                // a cut emoji: one replacement
  EXPECT_EQ(utf8_lossy("a\xC0\x80z"), "a\uFFFD\uFFFDz");          // overlong: two
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");    // a surrogate: three
  EXPECT_EQ(utf8_lossy("\xE2\x82"), "\uFFFD");                    // truncated at the end
  EXPECT_EQ(utf8_lossy("\xF4\x90\x80\x80"), "\uFFFD\uFFFD\uFFFD\uFFFD");  // above U+10FFFF
  EXPECT_EQ(first_invalid_utf8("ab\xFFz"), 2u);
  EXPECT_EQ(first_invalid_utf8("東京"), std::string("東京").size());
}

TEST(Pcre2Regex, UnicodeClassesLookaheadAndScripts) {
  Pcre2Regex re(R"( ?\p{L}+|\p{N}{1,3}|\s+(?!\S)|\s+)", false, "test");
  std::string text = "héllo 東京 12345  x";
  std::vector<std::string> got;
  for (auto [b, e] : re.find_all(text)) got.push_back(text.substr(b, e - b));
  EXPECT_EQ(got, (std::vector<std::string>{"héllo", " 東京", " ", "123", "45", " ", " x"}));
  EXPECT_EQ(onig_scripts_to_pcre2(R"([^\p{Han}\P{L}]\p{^Hiragana}\\p{Han})"),
            R"([^\p{sc:Han}\P{L}]\p{^sc:Hiragana}\\p{Han})");
  EXPECT_THROW(Pcre2Regex("(unclosed", false, "f: field x"), UsageError);
  Pcre2Regex literal("a.b", true, "test");
  EXPECT_EQ(literal.find_all("axb a.b").size(), 1u);
}

}  // namespace
}  // namespace fabkit::trainer
