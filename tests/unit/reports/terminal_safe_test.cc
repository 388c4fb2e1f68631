// reports/text/terminal_safe.h: untrusted text reaches a terminal as characters, not commands.
#include "reports/text/terminal_safe.h"

#include <gtest/gtest.h>

#include <sstream>

#include "reports/report_render.h"

namespace fabkit::reports {
namespace {
using text::terminal_safe;

TEST(TerminalSafe, PrintableTextIsUnchanged) {
  EXPECT_EQ(terminal_safe("NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>"),
            "NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>");
  EXPECT_EQ(terminal_safe("Grüße — 日本 \\ \"q\""), "Grüße — 日本 \\ \"q\"");
  EXPECT_EQ(terminal_safe(""), "");
}

TEST(TerminalSafe, ControlsBecomeVisible) {
  // OSC (set the window title), CSI (clear the screen), BEL, NUL, DEL.
  EXPECT_EQ(terminal_safe(std::string("\x1b]0;pwned\x07\x1b[2J\0\x7f", 16)),
            "\\x1b]0;pwned\\x07\\x1b[2J\\x00\\x7f");
  EXPECT_EQ(terminal_safe("a\tb\nc\rd"), "a\\tb\\nc\\rd");
  // C1 CSI (U+009B) and NEL (U+0085) in UTF-8; bidi override (U+202E), zero-width space, BOM.
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "31m\xc2\x85"),
            "\\u009b31m\\u0085");
  EXPECT_EQ(terminal_safe("abc\xe2\x80\xae"
                          "fed\xe2\x80\x8b\xef\xbb\xbf"),
            "abc\\u202efed\\u200b\\ufeff");
}

TEST(TerminalSafe, InvalidUtf8BytesBecomeVisible) {
  EXPECT_EQ(terminal_safe("a\x9b"
                          "b"),
            "a\\x9bb");                                         // a raw 8-bit CSI
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(terminal_safe("\xe6\x97"), "\\xe6\\x97");           // truncated
}

// Findings quote what they read (here an NCCL WARN line): the text report shows its escape
// sequences instead of sending them, in the subject, message and fix, and in the header.
TEST(TerminalSafe, TextReportsShowFindingsEscapesInsteadOfSendingThem) {
  const std::string evil = "\x1b]0;pwned\x07\x1b[31m";
  Report r{"nccl-log",
           "host" + evil,
           "t",
           {warn("nccl_log.nccl_warning", "line 3", "NCCL WARN " + evil, "fix " + evil)},
           {}};
  for (bool color : {false, true}) {
    std::ostringstream out;
    render_text(r, out, color);
    const std::string s = out.str();
    EXPECT_EQ(s.find("\x1b]"), std::string::npos) << s;
    EXPECT_EQ(s.find('\x07'), std::string::npos) << s;
    EXPECT_EQ(s.find("\x1b[31m"), std::string::npos) << s;
    EXPECT_NE(s.find("line 3: NCCL WARN \\x1b]0;pwned\\x07\\x1b[31m; fix: fix \\x1b]0;pwned"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("fabcheck nccl-log — host\\x1b]0;pwned"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace fabkit::reports
