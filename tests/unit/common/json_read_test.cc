// parse_json (common/json_read.h): the one JSON reader, with its depth limit.
#include "common/json_read.h"

#include <gtest/gtest.h>

#include <string>

namespace fabkit {
namespace {

std::string nested_arrays(size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

std::string error_of(const std::string& text, const std::string& source = "doc.json") {
  try {
    parse_json(text, source);
  } catch (const JsonReadError& e) {
    EXPECT_EQ(e.source(), source);
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 80);
  return {};
}

TEST(JsonRead, ParsesAndKeepsMemberOrder) {
  Json j = parse_json(R"({"b": 1, "a": [true, null, "x"]})", "doc.json");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.begin().key(), "b");
  EXPECT_EQ(j["a"][2], "x");
  nlohmann::json s = parse_json_sorted(R"({"b": 1, "a": 2})", "doc.json");
  EXPECT_EQ(s.begin().key(), "a");
}

TEST(JsonRead, SyntaxErrorsAndHugeNumbersNameTheSource) {
  std::string m = error_of("{\"a\": ", "cluster.json");
  EXPECT_EQ(m.rfind("cluster.json: not valid JSON (", 0), 0u) << m;
  EXPECT_NE(m.find("parse_error"), std::string::npos) << m;
  // nlohmann reports a number past double's range as out_of_range, not parse_error.
  m = error_of("{\"a\": 6e892}", "cluster.json");
  EXPECT_EQ(m.rfind("cluster.json: not valid JSON (", 0), 0u) << m;
  EXPECT_THROW(parse_json("", "empty"), JsonReadError);
  // A token of megabytes (an unterminated string) is not quoted whole.
  m = error_of("[\"" + std::string(4 << 20, 'x'), "big.json");
  EXPECT_LT(m.size(), 600u);
  EXPECT_THROW(parse_json_sorted("[1,", "x"), JsonReadError);
}

TEST(JsonRead, TheLimitItselfIsAccepted) {
  Json j = parse_json(nested_arrays(kMaxJsonDepth), "doc.json");
  // Copying, comparing and dumping recurse per level: fine at the limit.
  Json copy = j;
  EXPECT_EQ(copy, j);
  EXPECT_EQ(copy.dump(), nested_arrays(kMaxJsonDepth));
}

TEST(JsonRead, OneLevelPastTheLimitIsRefusedNamingWhere) {
  try {
    parse_json(nested_arrays(kMaxJsonDepth + 1), "deep.json");
    FAIL();
  } catch (const JsonReadError& e) {
    EXPECT_TRUE(e.too_deep());
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("deep.json: nested deeper than 128 levels at [0][0]", 0), 0u) << m;
    // The bracket that goes one level too deep is the 129th character.
    EXPECT_NE(m.find("(line 1, column 129)"), std::string::npos) << m;
  }
}

// The attack shapes of issue #19: a million levels in a few MiB; an object chain; a deep value
// below a real key, after siblings, on a later line.
TEST(JsonRead, AMillionLevelsAreRefusedWithoutCrashing) {
  std::string m = error_of(R"({"input_ids": )" + nested_arrays(1000000) + "}", "train.jsonl:3");
  EXPECT_EQ(m.rfind("train.jsonl:3: nested deeper than 128 levels at .input_ids[0][0]", 0), 0u)
      << m;
  EXPECT_NE(m.find("…"), std::string::npos) << m;  // the middle of the path is elided
  EXPECT_LT(m.size(), 400u) << m;

  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  m = error_of(objects);
  EXPECT_NE(m.find(" at .a.a.a.a"), std::string::npos) << m;

  m = error_of("{\"hosts\": [1, {\"x\": 2},\n  {\"odd key\": " + nested_arrays(200) + "}]}");
  EXPECT_NE(m.find(" at .hosts[2][\"odd key\"][0][0]"), std::string::npos) << m;
  EXPECT_NE(m.find("(line 2, column"), std::string::npos) << m;
}

TEST(JsonRead, ALowerLimitIsHonoured) {
  EXPECT_NO_THROW(parse_json(nested_arrays(3), "x", 3));
  EXPECT_THROW(parse_json(nested_arrays(4), "x", 3), JsonReadError);
  EXPECT_THROW(parse_json_sorted(R"({"a": {"b": {"c": {}}}})", "x", 3), JsonReadError);
}

}  // namespace
}  // namespace fabkit
