// The progress line: redrawn in place on a real pseudo-terminal (openpty, so isatty() decides as
// it would on a user's terminal), plain lines into a pipe; and the ETA it shows.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <unistd.h>

#include <string>

#include "reports/term/eta.h"
#include "reports/term/progress_line.h"
#include "tests/unit/reports_term/read_fd.h"

namespace fabkit::reports::term {
namespace {

TEST(Eta, FromTheRecentRate) {
  EtaEstimator e(4);
  EXPECT_FALSE(e.seconds_left(100).has_value());
  e.observe(0, 0.0);
  EXPECT_FALSE(e.seconds_left(100).has_value());
  e.observe(1, 10.0);  // a slow first step (warm-up)
  e.observe(2, 11.0);
  e.observe(3, 12.0);
  e.observe(4, 13.0);  // window 4: (1,10)..(4,13): 1 s per step
  ASSERT_TRUE(e.seconds_left(100).has_value());
  EXPECT_DOUBLE_EQ(*e.seconds_left(100), 96.0);
  EXPECT_DOUBLE_EQ(*e.seconds_left(4), 0.0);
  e.observe(2, 20.0);  // resumed: step went back, a new measurement starts
  EXPECT_FALSE(e.seconds_left(100).has_value());
}

TEST(Eta, Format) {
  EXPECT_EQ(format_duration(std::nullopt), "--");
  EXPECT_EQ(format_duration(-1.0), "--");
  EXPECT_EQ(format_duration(45.2), "45s");
  EXPECT_EQ(format_duration(187), "3m07s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_duration(2 * 86400 + 3 * 3600 + 5), "2d03h");
}

TEST(ProgressLine, Text) {
  EXPECT_EQ(format_progress({120, 1000, 2.34567, 12345.4, 187.0}),
            "step 120/1000  loss 2.3457  tokens/s 12345  ETA 3m07s");
  EXPECT_EQ(format_progress({1, 10, 9.0, 0, std::nullopt}),
            "step 1/10  loss 9.0000  tokens/s 0  ETA --");
}

TEST(ProgressLine, RedrawnInPlaceOnATerminal) {
  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  termios t{};
  ASSERT_EQ(::tcgetattr(slave, &t), 0);
  cfmakeraw(&t);  // no \n -> \r\n translation: the test sees the bytes written
  ASSERT_EQ(::tcsetattr(slave, TCSANOW, &t), 0);
  {
    ProgressLine p(slave);
    EXPECT_TRUE(p.is_tty());
    p.update({1, 3, 2.0, 100, std::nullopt});
    p.update({2, 3, 1.5, 110, 5.0});
    p.clear();
    p.update({3, 3, 1.0, 120, 0.0});
  }  // the destructor ends the line
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  const std::string got = drain(master);
  EXPECT_EQ(got,
            "\rstep 1/3  loss 2.0000  tokens/s 100  ETA --\x1b[K"
            "\rstep 2/3  loss 1.5000  tokens/s 110  ETA 5s\x1b[K"
            "\r\x1b[K"
            "\rstep 3/3  loss 1.0000  tokens/s 120  ETA 0s\x1b[K\n");
  ::close(master);
  ::close(slave);
}

TEST(ProgressLine, PlainLinesIntoAPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    ProgressLine p(fds[1]);
    EXPECT_FALSE(p.is_tty());
    p.update({1, 2, 2.0, 100, std::nullopt});
    p.clear();
    p.update({2, 2, 1.0, 100, 0.0});
  }
  ::close(fds[1]);
  EXPECT_EQ(drain(fds[0]),
            "step 1/2  loss 2.0000  tokens/s 100  ETA --\n"
            "step 2/2  loss 1.0000  tokens/s 100  ETA 0s\n");
  ::close(fds[0]);
}

}  // namespace
}  // namespace fabkit::reports::term
