// Documents and logs fabkit is given by name on its command line (a report, a baseline, a
// profile, a replay file, an NCCL log), or on standard input ("-"), read under a size cap: a file
// over it, a pipe or FIFO that never ends, or standard input fed from /dev/zero is refused at cap+1
// bytes instead of read until memory runs out. The one reader for such inputs; file_reader.h's
// read_text is for sysfs/procfs attributes.
//
// What may be named: a regular file or a FIFO (a named pipe, bash's <(...), /dev/stdin when it is
// a pipe). A directory, a device (/dev/zero, a tty, a disk) or a socket is refused before it is
// opened: opening a device can itself do something (a watchdog, a tape), and none holds a
// document. A FIFO is opened non-blocking, so open() never waits for a writer; the wait for one
// is bounded instead (fifo_writer_wait_ms), and once a writer is there the reads block as on any
// pipe (standard input's too: "-" reads what the caller's pipe gives, as `cat` would).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace fabkit {

struct InputSpec {
  std::string what;          // starts every message before the path: "nccl-log"; "": the path first
  uint64_t max_bytes = 0;    // the cap
  std::string fix;           // ends every message: how to give a good input
  bool allow_stdin = false;  // "-" is standard input (otherwise a file named "-")
  // Bytes of earlier inputs that count against the same cap (the other logs of one job); the
  // message then says the cap is for all of them together.
  uint64_t counted_before = 0;
  // How long a named FIFO may go without a process opening it for writing before it is refused.
  int fifo_writer_wait_ms = 10000;
};

// The whole input. Throws UsageError "WHAT PATH: <what is wrong>; FIX": not found or unreadable,
// not a file or FIFO, a FIFO no one opened for writing in time, over the cap (a regular file: its
// size and the cap, before reading it; a stream: at cap+1 bytes).
std::string read_input(const std::string& path, const InputSpec& spec);

// The same, in pieces (at most 1 MiB each, in order) handed to `piece` as they are read, so a
// caller that keeps only what it needs holds no copy of the input. Returns the bytes read.
uint64_t read_input_pieces(const std::string& path, const InputSpec& spec,
                           const std::function<void(std::string_view)>& piece);

}  // namespace fabkit
