// GPT-2's byte-level alphabet and the UTF-8 helpers the Hugging Face tokenizer.json BPE needs.
//
// Byte-level BPE works on bytes, but its vocabulary and merges are stored as text: every byte is
// shown as one printable Unicode character (GPT-2's bytes_to_unicode: the printable Latin-1 bytes
// stand for themselves, the other 68 bytes become U+0100..U+0143 in byte order, so a space is
// "Ġ" U+0120 and a newline "Ċ" U+010A).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fabkit::trainer {

// The UTF-8 of the character standing for `byte`.
const std::string& byte_level_char(uint8_t byte);
// The byte that code point `cp` stands for, if it is one of the 256 characters.
std::optional<uint8_t> byte_level_byte(char32_t cp);
// Every byte of `bytes` replaced by its character (the text that is looked up in vocab/merges).
std::string to_byte_level(std::string_view bytes);

// Decodes the code point at s[i] and advances i; nullopt (i unchanged) at an invalid sequence.
std::optional<char32_t> next_code_point(std::string_view s, size_t& i);
// The byte offset of the first invalid UTF-8 sequence, or s.size() when s is valid UTF-8.
size_t first_invalid_utf8(std::string_view s);
// Invalid sequences replaced by U+FFFD, one per maximal ill-formed subpart (Unicode §3.9, the
// rule Rust's String::from_utf8_lossy and therefore HF's ByteLevel decoder follow).
std::string utf8_lossy(std::string_view bytes);
// Unicode White_Space (what Rust's regex \s matches; HF strips these around lstrip/rstrip tokens).
bool is_unicode_space(char32_t cp);
void append_utf8(std::string& out, char32_t cp);

}  // namespace fabkit::trainer
