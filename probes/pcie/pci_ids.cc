#include "probes/pcie/pci_ids.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "common/utf8_text.h"

namespace fabkit::probes {
namespace {

// "0x10DE" / "10de" -> "10de"; "" when not 4 hex digits.
std::string hex4(const std::string& id) {
  std::string s = starts_with(id, "0x") || starts_with(id, "0X") ? id.substr(2) : id;
  if (s.size() != 4) return {};
  for (char& c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return {};
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

// The rest of the line at `pos`, without the newline. pci.ids is UTF-8, but the one under a
// --sysroot is the user's file and its names go into the JSON, which throws on other bytes.
std::string line_at(const std::string& text, size_t pos) {
  size_t end = text.find('\n', pos);
  return utf8_clean(
      trim(text.substr(pos, end == std::string::npos ? std::string::npos : end - pos)));
}

// pci.ids is ~1.4 MB today; 8 MiB leaves room for growth without reading a runaway file.
constexpr size_t kMaxPciIdsBytes = 8u << 20;

// The whole file after a leading '\n' (every entry, the first included, then follows a newline),
// read in one buffer sized from fstat: read_text's growing buffer and a second copy to add the
// newline cost more than the rest of the PCIe probe (perf on gather_pcie here: ~2 ms of its
// ~4 ms). "" when it cannot be read, is empty or is past the bound.
std::string read_pci_ids(const std::filesystem::path& p) {
  // Under --sysroot the tree's copy, resolved inside it (a link out of the tree is not followed).
  auto opened = open_for_reading(p);
  if (!std::holds_alternative<UniqueFd>(opened)) return {};
  const int fd = std::get<UniqueFd>(opened).get();
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      static_cast<uint64_t>(st.st_size) <= kMaxPciIdsBytes) {
    // One byte more than the size says, so a file that grew in between is read to its end or
    // to the bound, never cut silently at the old size.
    text.resize(1 + static_cast<size_t>(st.st_size) + 1);
    text[0] = '\n';
    size_t got = 1;
    while (got < text.size()) {
      ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        got = 1;
        break;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
      if (got == text.size() && text.size() <= kMaxPciIdsBytes) text.resize(text.size() + 65536);
    }
    text.resize(got);
  }
  if (text.size() <= 1) text.clear();
  return text;
}

}  // namespace

PciIdNames PciIdNames::load(const std::filesystem::path& root) {
  for (const char* rel :
       {"usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids", "usr/share/pci.ids"}) {
    std::string text = read_pci_ids(root / rel);
    if (text.empty()) continue;
    PciIdNames n;
    n.text_ = std::move(text);
    n.source_ = (root / rel).string();
    return n;
  }
  return {};
}

PciIdNames PciIdNames::from_text(std::string text, std::string source) {
  PciIdNames n;
  n.text_ = "\n" + std::move(text);  // every entry, the first included, follows a newline
  n.source_ = std::move(source);
  return n;
}

std::string PciIdNames::name(const std::string& vendor_id, const std::string& device_id) const {
  const std::string v = hex4(vendor_id), d = hex4(device_id);
  if (v.empty() || text_.empty()) return {};
  // Vendor lines start in column 0 ("10de  NVIDIA Corporation"); the vendor's devices follow as
  // "\t2330  name" until the next line that starts in column 0 (a vendor or the class list).
  const size_t vpos = text_.find("\n" + v + "  ");
  if (vpos == std::string::npos) return {};
  const std::string vendor = line_at(text_, vpos + 1 + v.size());
  size_t section_end = vpos + 1;
  while (true) {
    section_end = text_.find('\n', section_end);
    if (section_end == std::string::npos || section_end + 1 >= text_.size()) break;
    const char c = text_[section_end + 1];
    if (c != '\t' && c != '#' && c != '\n') break;
    ++section_end;
  }
  if (d.empty()) return vendor;
  const size_t dpos = text_.find("\n\t" + d + "  ", vpos);
  if (dpos == std::string::npos || (section_end != std::string::npos && dpos >= section_end))
    return vendor;
  return vendor + " " + line_at(text_, dpos + 2 + d.size());
}

}  // namespace fabkit::probes
