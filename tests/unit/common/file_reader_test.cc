// read_stream_capped (common/file_reader.h): a stream is read whole up to the limit, and one
// without end is refused at the limit instead of filling memory.
#include "common/file_reader.h"

#include <gtest/gtest.h>

#include <sstream>
#include <streambuf>
#include <string>

namespace fabkit {
namespace {

// An endless stream of 'x', counting what it handed out.
class Endless : public std::streambuf {
 public:
  size_t produced = 0;

 protected:
  int_type underflow() override {
    buf_.assign(4096, 'x');
    produced += buf_.size();
    setg(buf_.data(), buf_.data(), buf_.data() + buf_.size());
    return traits_type::to_int_type('x');
  }

 private:
  std::string buf_;
};

TEST(ReadStreamCapped, ReadsUpToTheLimitAndRefusesOneByteMore) {
  std::string out;
  std::istringstream exact(std::string(3000000, 'a'));
  EXPECT_TRUE(read_stream_capped(exact, 3000000, &out, "exact"));
  EXPECT_EQ(out.size(), 3000000u);
  std::istringstream over(std::string(3000001, 'a'));
  EXPECT_FALSE(read_stream_capped(over, 3000000, &out, "over"));
  std::istringstream empty("");
  EXPECT_TRUE(read_stream_capped(empty, 10, &out, "empty"));
  EXPECT_TRUE(out.empty());
}

TEST(ReadStreamCapped, StopsReadingAnEndlessStreamAtTheLimit) {
  Endless src;
  std::istream in(&src);
  std::string out;
  EXPECT_FALSE(read_stream_capped(in, 5u << 20, &out, "endless"));
  EXPECT_LE(src.produced, (5u << 20) + 8192);  // the limit, and at most a buffer more
}

}  // namespace
}  // namespace fabkit
