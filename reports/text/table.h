// Aligned terminal tables: every text report's rows of figures go through this, so columns line
// up whatever the host names or figures are. Written by hand: Debian 12 packages no C++ table
// library (C++ tabulate is not packaged; libfmt pads one field at a time but cannot measure a
// column, and knows nothing of color escapes), and the job is ~60 lines.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fabkit::reports::text {

enum class Align { kLeft, kRight };

struct Column {
  std::string header;
  Align align = Align::kLeft;
};

class Table {
 public:
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  // A row with fewer cells than columns is padded with empty cells; more throws
  // std::invalid_argument (a renderer bug, not input).
  void add_row(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }
  // Header, then the rows, each line prefixed by indent. Column widths are the widest cell as
  // it shows on a terminal (display_width). The last column is not padded: no trailing blanks.
  void render(std::ostream& out, const std::string& indent = "  ") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Columns a string takes on a terminal: UTF-8 code points, not bytes, and ANSI SGR sequences
// (ESC [ ... m, the colors) take none.
size_t display_width(const std::string& s);

}  // namespace fabkit::reports::text
