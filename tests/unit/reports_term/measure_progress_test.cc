// fabcheck's measurement progress: frames go to a pipe we read back, with the terminal decision
// and the clock injected; one test uses a real pseudo-terminal and the redraw thread.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "reports/term/measure_progress.h"
#include "tests/unit/reports_term/read_fd.h"

namespace fabkit::reports::term {
namespace {

// A pipe standing in for stderr, read without blocking, and a clock the test moves.
struct Captured {
  int fds[2] = {-1, -1};
  double now = 100.0;
  Captured() {
    EXPECT_EQ(0, ::pipe(fds));
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  }
  ~Captured() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  MeasureProgressOptions options(bool tty = true) {
    MeasureProgressOptions o;
    o.fd = fds[1];
    o.is_tty = tty;
    o.now_s = [this] { return now; };
    o.columns = 100;
    o.redraw_thread = false;
    return o;
  }
  std::string read() { return drain(fds[0]); }
};

TEST(MeasureProgress, NothingForAStepUnderOneSecond) {
  Captured c;
  MeasureProgress p(c.options());
  ASSERT_TRUE(p.active());
  p.begin("pair: launch agents", 0);
  c.now += 0.5;
  p.tick();
  c.now += 0.4;
  p.tick();
  p.end();
  p.begin("allreduce gloo-tcp", 3);
  c.now += 0.9;
  p.advance(2);
  p.end();
  EXPECT_EQ("", c.read());
}

TEST(MeasureProgress, SpinnerWithElapsedTimeAfterOneSecond) {
  Captured c;
  MeasureProgress p(c.options());
  p.begin("pair: tcp bandwidth eth1->eth1", 0);
  c.now += 1.2;
  p.tick();
  EXPECT_EQ("\r| pair: tcp bandwidth eth1->eth1  1s\x1b[K", c.read());
  c.now += 0.05;  // under 100 ms since the last frame: no redraw
  p.tick();
  EXPECT_EQ("", c.read());
  c.now += 2.0;
  p.tick();
  EXPECT_EQ("\r/ pair: tcp bandwidth eth1->eth1  3s\x1b[K", c.read());
}

TEST(MeasureProgress, BarWithPercentAndEta) {
  Captured c;
  MeasureProgress p(c.options());
  p.begin("allreduce gloo-tcp 8 B", 4);
  c.now += 2.0;  // one size in 2 s: three more take 6 s
  p.advance(1, "allreduce gloo-tcp 1 MiB");
  EXPECT_EQ("\rallreduce gloo-tcp 1 MiB  [#####---------------]  25%  1/4  ETA 6s\x1b[K", c.read());
  c.now += 2.0;
  p.advance(1);
  EXPECT_EQ("\rallreduce gloo-tcp 1 MiB  [##########----------]  50%  2/4  ETA 4s\x1b[K", c.read());
}

TEST(MeasureProgress, SpinnerBecomesABarWhenTheTotalIsKnown) {
  Captured c;
  MeasureProgress p(c.options());
  p.begin("pair: allreduce gloo-tcp", 0);  // rendezvous: how many sizes is not known here yet
  c.now += 1.5;
  p.tick();
  EXPECT_EQ("\r| pair: allreduce gloo-tcp  2s\x1b[K", c.read());
  p.set_total(4);
  c.now += 0.5;  // 2 s since the start, not since set_total: drawn at once
  p.advance(1, "pair: allreduce gloo-tcp 64 KiB");
  EXPECT_EQ("\rpair: allreduce gloo-tcp 64 KiB  [#####---------------]  25%  1/4  ETA 6s\x1b[K",
            c.read());
}

TEST(MeasureProgress, LineErasedAtTheEndAndOnClear) {
  Captured c;
  MeasureProgress p(c.options());
  p.begin("cluster: node checks", 8);
  c.now += 1.5;
  p.advance(3);
  EXPECT_NE("", c.read());
  p.clear();  // before another stderr line
  EXPECT_EQ("\r\x1b[K", c.read());
  c.now += 0.2;
  p.tick();  // drawn again on the next frame
  EXPECT_NE("", c.read());
  p.end();
  EXPECT_EQ("\r\x1b[K", c.read());
  c.now += 5;
  p.tick();  // nothing is open: nothing drawn
  EXPECT_EQ("", c.read());
}

TEST(MeasureProgress, ANewMeasurementWaitsItsOwnSecond) {
  Captured c;
  MeasureProgress p(c.options());
  p.begin("pair: link probes", 0);
  c.now += 1.5;
  p.tick();
  EXPECT_NE("", c.read());
  p.begin("pair: rendezvous port", 0);  // replaces the first: its line goes, nothing new yet
  EXPECT_EQ("\r\x1b[K", c.read());
  c.now += 0.5;
  p.tick();
  EXPECT_EQ("", c.read());
}

TEST(MeasureProgress, QuietWhenNotATerminalOrDisabled) {
  for (bool tty : {false, true}) {
    Captured c;
    auto o = c.options(tty);
    o.enabled = tty ? false : true;  // not a terminal; or a terminal with --no-progress
    MeasureProgress p(o);
    EXPECT_FALSE(p.active());
    p.begin("pair: launch agents", 2);
    c.now += 10;
    p.advance(1);
    p.tick();
    p.clear();
    p.end();
    EXPECT_EQ("", c.read()) << "tty " << tty;
  }
}

TEST(MeasureProgress, APipeIsNotATerminal) {
  Captured c;
  MeasureProgressOptions o;  // isatty() decides
  o.fd = c.fds[1];
  o.now_s = [&c] { return c.now; };
  MeasureProgress p(o);
  EXPECT_FALSE(p.active());
  p.begin("x", 0);
  c.now += 5;
  p.tick();
  p.end();
  EXPECT_EQ("", c.read());
}

TEST(MeasureProgress, AdvancesFromSeveralThreadsAddUp) {
  Captured c;
  MeasureProgress p(c.options());
  p.begin("cluster round 1/1", 4000);
  c.now += 2;  // every advance may draw; the last frame must show the whole count
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&p] {
      for (int i = 0; i < 1000; ++i) p.advance(1);
    });
  for (auto& t : ts) t.join();
  c.now += 1;
  p.tick();
  std::string out = c.read();
  EXPECT_NE(std::string::npos, out.rfind("100%  4000/4000  ETA 0s")) << out;
}

TEST(MeasureFrame, FitsTheTerminalAndIsPrintable) {
  std::string long_label(200, 'x');
  std::string f = format_measure_frame(long_label, 1, 2, 3, 4.0, 0, 60);
  EXPECT_EQ(59u, f.size());
  EXPECT_NE(std::string::npos, f.find("...  [##########----------]  50%  1/2  ETA 4s"));
  const std::string escape_in_label = std::string("a\x1b") + "b";
  EXPECT_EQ("| a?b  5s", format_measure_frame(escape_in_label, 0, 0, 5, std::nullopt, 0, 80));
  EXPECT_EQ("\\ host  2m05s", format_measure_frame("host", 0, 0, 125, std::nullopt, 3, 80));
  // Unknown rate: the ETA says so instead of guessing.
  EXPECT_NE(std::string::npos,
            format_measure_frame("s", 0, 5, 2, std::nullopt, 0, 80).find("ETA --"));
}

TEST(MeasureProgress, RedrawThreadTurnsTheSpinnerOnARealTerminal) {
  int master = -1, slave = -1;
  ASSERT_EQ(0, ::openpty(&master, &slave, nullptr, nullptr, nullptr));
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  {
    MeasureProgressOptions o;
    o.fd = slave;  // isatty() decides, as on a user's terminal
    o.delay_s = 0.05;
    MeasureProgress p(o);
    ASSERT_TRUE(p.active());
    p.begin("pair: launch agents", 0);
    // No calls while the step blocks: the thread alone draws frames.
    std::this_thread::sleep_for(std::chrono::milliseconds(450));
    p.end();
  }
  std::string out = drain(master);
  size_t frames = 0;
  for (size_t at = out.find("pair: launch agents"); at != std::string::npos;
       at = out.find("pair: launch agents", at + 1))
    ++frames;
  EXPECT_GE(frames, 2u) << out;
  EXPECT_LE(frames, 6u) << out;  // ~10 a second at most
  EXPECT_NE(std::string::npos, out.find("| pair: launch agents"));
  EXPECT_NE(std::string::npos, out.find("/ pair: launch agents"));
  EXPECT_EQ(out.size() - 4, out.rfind("\r\x1b[K")) << "ends erased";
  ::close(master);
  ::close(slave);
}

}  // namespace
}  // namespace fabkit::reports::term
