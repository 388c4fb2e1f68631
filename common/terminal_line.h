// A line redrawn in place on a terminal (fabcheck's progress bar) must not outlive a process that a
// signal ends: Ctrl-C would leave a half-drawn bar in front of the shell prompt. The renderer says
// where it has a line drawn; the stop-signal handler (fabric/launch/child_process.cc) erases it.
#pragma once

namespace fabkit {

// fd: the terminal the line is drawn on; -1 once it is erased.
void set_drawn_line_fd(int fd);

// A frame is drawn between these two: begin returns false once a stop signal was taken (draw
// nothing then). The handler waits (at most 100 ms) for a frame being drawn in another thread
// before it erases, so a frame can never land after the erase (seen once under CI load: the
// ticker thread drew between the handler's erase and the process's end).
bool begin_drawing_line();
void end_drawing_line();
// Carriage return + erase to end of line on that terminal, if a line is drawn. Async-signal-safe:
// atomics, nanosleep(2) while a frame is being drawn, and one write(2).
void erase_drawn_line_from_signal_handler();

}  // namespace fabkit
