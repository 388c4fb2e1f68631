// Text that came from outside fabkit (a log line, a job's registration, a document given to
// `fabcheck report`) must reach a terminal as characters, never as commands to it: an ESC in an
// NCCL log line or a registration would otherwise move the cursor, recolor, retitle the window
// or rewrite what was printed before. Every text renderer passes such strings through
// terminal_safe() before printing them.
#pragma once

#include <string>
#include <string_view>

namespace fabkit::reports::text {

// Printable UTF-8 unchanged; everything a terminal would act on, or that would hide or reorder
// what is shown, made visible instead:
//  - C0 controls and DEL as \xNN (\t, \n, \r by name), ESC included;
//  - C1 controls (U+0080..U+009F; U+009B is a one-character CSI) and the invisible formatting
//    and bidirectional controls (U+200B..U+200F, U+202A..U+202E, U+2060..U+2064,
//    U+2066..U+2069, U+061C, U+FEFF) as \uXXXX;
//  - each byte that is not part of valid UTF-8 as \xNN.
std::string terminal_safe(std::string_view untrusted);

}  // namespace fabkit::reports::text
