// The UTF-8 and Python str semantics the renderer needs: Python's str methods index, slice, strip
// and change case by code point, and Python's notion of whitespace is Unicode's (str.isspace).
#pragma once

#include <string>
#include <vector>

namespace fabkit::trainer::serve::jinja {

// Decodes UTF-8; invalid bytes decode as U+FFFD (input is JSON-parsed text, so valid UTF-8).
std::u32string utf8_decode(const std::string& s);
std::string utf8_encode(const std::u32string& s);
void utf8_append(std::string& out, char32_t c);

// Python's str.isspace() for one code point.
bool py_isspace(char32_t c);
// Python's str.isprintable() for one code point, for the escapes of repr(str). Approximate for
// unassigned code points (treated as printable).
bool py_isprintable(char32_t c);

// Python's str.upper()/lower() for one code point, appended to out. Case mapping covers ASCII,
// Latin-1, Latin Extended-A, Greek, Cyrillic and fullwidth Latin; a cased letter of another script
// throws std::domain_error (the caller turns it into an "unsupported" error naming the
// character) rather than render it unchanged where Python would change it.
void py_upper(char32_t c, std::u32string& out);
void py_lower(char32_t c, std::u32string& out);
void py_titlecase(char32_t c, std::u32string& out);
// Whether c is a cased letter (has an upper or lower form) in the covered scripts.
bool py_iscased(char32_t c);

std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
std::string py_capitalize(const std::string& s);  // str.capitalize()
std::string py_title(const std::string& s);       // str.title()

}  // namespace fabkit::trainer::serve::jinja
