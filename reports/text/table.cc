#include "reports/text/table.h"

#include <algorithm>
#include <stdexcept>

namespace fabkit::reports::text {

size_t display_width(const std::string& s) {
  size_t w = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b && i + 1 < s.size() && s[i + 1] == '[') {
      // CSI: parameters and intermediates up to the final byte (0x40..0x7e).
      size_t j = i + 2;
      while (j < s.size() && !(s[j] >= 0x40 && s[j] <= 0x7e)) ++j;
      i = j;
      continue;
    }
    if ((c & 0xc0) != 0x80) ++w;  // count lead bytes only
  }
  return w;
}

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() > columns_.size())
    throw std::invalid_argument("table row has " + std::to_string(cells.size()) + " cells for " +
                                std::to_string(columns_.size()) + " columns");
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void Table::render(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    width[c] = display_width(columns_[c].header);
    for (const auto& row : rows_) width[c] = std::max(width[c], display_width(row[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text = indent;
    for (size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const std::string pad(width[c] - display_width(cells[c]), ' ');
      if (columns_[c].align == Align::kRight)
        text += pad + cells[c];
      else
        text += last ? cells[c] : cells[c] + pad;
      if (!last) text += "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << "\n";
  };
  std::vector<std::string> header;
  for (const auto& col : columns_) header.push_back(col.header);
  line(header);
  for (const auto& row : rows_) line(row);
}

}  // namespace fabkit::reports::text
