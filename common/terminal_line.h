// A line redrawn in place on a terminal (fabcheck's progress bar) must not outlive a process that a
// signal ends: Ctrl-C would leave a half-drawn bar in front of the shell prompt. The renderer says
// where it has a line drawn; the stop-signal handler (fabric/launch/child_process.cc) erases it.
#pragma once

namespace fabkit {

// fd: the terminal the line is drawn on; -1 once it is erased.
void set_drawn_line_fd(int fd);
// Carriage return + erase to end of line on that terminal, if a line is drawn. Async-signal-safe:
// one atomic load and one write(2).
void erase_drawn_line_from_signal_handler();

}  // namespace fabkit
