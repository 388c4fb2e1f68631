// Field offsets follow the System V gABI (ELF-64 Object File Format 1.5; the 32-bit layout of the
// same fields) as <elf.h> declares them; the reads are explicit little-endian so a file never
// decides how many bytes we copy.
#include "probes/nccl_net/plugin_elf.h"

#include <algorithm>
#include <set>

namespace fabkit::probes {
namespace {

constexpr uint16_t kEtDyn = 3;
constexpr uint32_t kShtNobits = 8;
constexpr uint32_t kShtDynsym = 11;
constexpr uint16_t kShnUndef = 0;
constexpr uint16_t kShnLoreserve = 0xff00;

uint64_t le(const std::string& b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

// The sizes and offsets that differ between ELFCLASS32 and ELFCLASS64.
struct Layout {
  bool is64;
  size_t ehdr_size, shdr_size, sym_size;
};

struct Section {
  uint32_t name = 0, type = 0, link = 0;
  uint64_t offset = 0, size = 0;
};

bool fits(uint64_t offset, uint64_t size, uint64_t file_size) {
  return size <= file_size && offset <= file_size - size;
}

std::string hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

class Reader {
 public:
  Reader(uint64_t file_size, const ElfReadAt& read_at) : size_(file_size), read_at_(read_at) {}

  // The bytes of [offset, offset + n) or an error naming what they were meant to be.
  std::optional<std::string> bytes(uint64_t offset, uint64_t n, const std::string& what,
                                   std::string* error) const {
    if (!fits(offset, n, size_)) {
      *error = what + " (" + std::to_string(n) + " bytes at offset " + hex(offset) +
               ") lies past the end of the file (" + std::to_string(size_) +
               " bytes): truncated or not an ELF file";
      return std::nullopt;
    }
    std::string out;
    if (!read_at_(offset, n, &out) || out.size() != n) {
      *error = "could not read " + what + " (" + std::to_string(n) + " bytes at offset " +
               hex(offset) + ")";
      return std::nullopt;
    }
    return out;
  }

 private:
  uint64_t size_;
  const ElfReadAt& read_at_;
};

Section section_at(const std::string& table, size_t i, const Layout& l) {
  size_t at = i * l.shdr_size;
  Section s;
  s.name = uint32_t(le(table, at, 4));
  s.type = uint32_t(le(table, at + 4, 4));
  if (l.is64) {
    s.offset = le(table, at + 24, 8);
    s.size = le(table, at + 32, 8);
    s.link = uint32_t(le(table, at + 40, 4));
  } else {
    s.offset = le(table, at + 16, 4);
    s.size = le(table, at + 20, 4);
    s.link = uint32_t(le(table, at + 24, 4));
  }
  return s;
}

// The NUL-terminated string at `at` in a string table; nullopt past its end or unterminated.
std::optional<std::string> string_at(const std::string& table, uint64_t at) {
  if (at >= table.size()) return std::nullopt;
  size_t end = table.find('\0', size_t(at));
  if (end == std::string::npos) return std::nullopt;
  return table.substr(size_t(at), end - size_t(at));
}

// "ncclNetPlugin_v8" -> 8 for prefix "ncclNetPlugin_v"; nullopt for anything else.
std::optional<int> api_version(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.size() > prefix.size() + 3 ||
      name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  int v = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

std::optional<std::string> read_table(const Reader& r, const Section& s, const std::string& what,
                                      std::string* error) {
  if (s.type == kShtNobits) return std::string();
  if (s.size > kMaxElfTableBytes) {
    *error = what + " is " + std::to_string(s.size) + " bytes, more than the " +
             std::to_string(kMaxElfTableBytes) + " any plugin has: refused as hostile or corrupt";
    return std::nullopt;
  }
  return r.bytes(s.offset, s.size, what, error);
}

bool is_version_byte(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
         c == '+' || c == '-' || c == '_';
}

}  // namespace

std::string elf_machine_name(uint16_t m) {
  switch (m) {
    case 3:
      return "i386";
    case 20:
      return "ppc";
    case 21:
      return "ppc64";
    case 40:
      return "arm";
    case 62:
      return "x86_64";
    case 183:
      return "aarch64";
    case 243:
      return "riscv";
    default:
      return "machine " + std::to_string(m);
  }
}

std::string host_elf_machine() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__powerpc64__)
  return "ppc64";
#else
  return "unknown";
#endif
}

std::vector<std::string> find_version_texts(const std::string& text,
                                            const std::vector<std::string>& markers) {
  std::vector<std::string> out;
  for (const auto& marker : markers) {
    if (marker.empty()) continue;
    for (size_t at = text.find(marker); at != std::string::npos && out.size() < 8;
         at = text.find(marker, at + 1)) {
      size_t v = at + marker.size();
      if (v >= text.size() || text[v] < '0' || text[v] > '9') continue;
      size_t end = v;
      while (end < text.size() && end - v < 64 && is_version_byte(text[end])) ++end;
      std::string found = text.substr(at, end - at);
      if (std::find(out.begin(), out.end(), found) == out.end()) out.push_back(found);
    }
  }
  return out;
}

ElfLibrary read_elf_library(uint64_t file_size, const ElfReadAt& read_at,
                            const std::vector<std::string>& markers) {
  ElfLibrary lib;
  Reader r(file_size, read_at);
  std::string err;
  auto fail = [&](std::string why) {
    lib.error = std::move(why);
    return lib;
  };

  auto ident = r.bytes(0, 16, "the ELF identification", &err);
  if (!ident) return fail(err);
  if (ident->compare(0, 4,
                     "\x7f"
                     "ELF") != 0)
    return fail("not an ELF file (its first bytes are not \\x7fELF)");
  unsigned char cls = static_cast<unsigned char>((*ident)[4]);
  unsigned char data = static_cast<unsigned char>((*ident)[5]);
  if (cls != 1 && cls != 2)
    return fail("ELF class " + std::to_string(cls) + " is neither 32 nor 64-bit");
  if (data != 1)
    return fail("a big-endian ELF file (EI_DATA " + std::to_string(data) +
                "): not a library this little-endian host can load");
  Layout l = cls == 2 ? Layout{true, 64, 64, 24} : Layout{false, 52, 40, 16};

  auto ehdr = r.bytes(0, l.ehdr_size, "the ELF header", &err);
  if (!ehdr) return fail(err);
  uint16_t type = uint16_t(le(*ehdr, 16, 2));
  lib.machine = elf_machine_name(uint16_t(le(*ehdr, 18, 2)));
  if (type != kEtDyn)
    return fail("ELF type " + std::to_string(type) +
                " is not a shared object (ET_DYN): dlopen "
                "cannot load it");
  uint64_t shoff = l.is64 ? le(*ehdr, 40, 8) : le(*ehdr, 32, 4);
  uint16_t shentsize = uint16_t(le(*ehdr, l.is64 ? 58 : 46, 2));
  uint16_t shnum = uint16_t(le(*ehdr, l.is64 ? 60 : 48, 2));
  uint16_t shstrndx = uint16_t(le(*ehdr, l.is64 ? 62 : 50, 2));
  // A library stripped of its section headers (sstrip) still loads; NCCL would find its symbols,
  // we cannot: an error that says so rather than "no API version".
  if (shoff == 0 || shnum == 0)
    return fail("no section header table (e_shoff " + hex(shoff) + ", e_shnum " +
                std::to_string(shnum) + "): its symbols cannot be read without loading it");
  if (shentsize != l.shdr_size)
    return fail("section header entries of " + std::to_string(shentsize) + " bytes, expected " +
                std::to_string(l.shdr_size));
  if (shnum > kMaxElfSections)
    return fail(std::to_string(shnum) + " sections, more than " + std::to_string(kMaxElfSections));
  auto table = r.bytes(shoff, uint64_t(shnum) * l.shdr_size, "the section header table", &err);
  if (!table) return fail(err);
  std::vector<Section> sections;
  for (size_t i = 0; i < shnum; ++i) sections.push_back(section_at(*table, i, l));

  std::string shstr;
  if (shstrndx != kShnUndef && shstrndx < shnum) {
    auto t = read_table(r, sections[shstrndx], "the section name table", &err);
    if (!t) return fail(err);
    shstr = *t;
  }

  const Section* dynsym = nullptr;
  const Section* rodata = nullptr;
  for (const auto& s : sections) {
    if (s.type == kShtDynsym && !dynsym) dynsym = &s;
    if (!rodata && s.type != kShtNobits && string_at(shstr, s.name) == std::string(".rodata"))
      rodata = &s;
  }
  if (!dynsym) return fail("no dynamic symbol table (.dynsym): nothing for dlsym to find");
  if (dynsym->link >= shnum)
    return fail(".dynsym names string table section " + std::to_string(dynsym->link) + " of " +
                std::to_string(shnum));
  auto syms = read_table(r, *dynsym, "the dynamic symbol table", &err);
  if (!syms) return fail(err);
  auto names = read_table(r, sections[dynsym->link], "the dynamic string table", &err);
  if (!names) return fail(err);

  std::set<int> net, collnet;
  for (size_t at = 0; at + l.sym_size <= syms->size(); at += l.sym_size) {
    uint64_t name_at = le(*syms, at, 4);
    uint16_t shndx = uint16_t(le(*syms, at + (l.is64 ? 6 : 14), 2));
    // Undefined (an import) or reserved indexes are not definitions NCCL's dlsym would find.
    if (shndx == kShnUndef || (shndx >= kShnLoreserve && shndx != 0xfff1)) continue;
    auto name = string_at(*names, name_at);
    if (!name) continue;
    if (auto v = api_version(*name, "ncclNetPlugin_v")) net.insert(*v);
    if (auto v = api_version(*name, "ncclCollNetPlugin_v")) collnet.insert(*v);
  }
  lib.net_api_versions.assign(net.begin(), net.end());
  lib.collnet_api_versions.assign(collnet.begin(), collnet.end());

  if (rodata && !markers.empty()) {
    if (rodata->size > kMaxRodataBytes)
      return fail(".rodata is " + std::to_string(rodata->size) + " bytes, more than the " +
                  std::to_string(kMaxRodataBytes) + " scanned for a version");
    auto text = r.bytes(rodata->offset, rodata->size, "the .rodata section", &err);
    if (!text) return fail(err);
    lib.rodata_versions = find_version_texts(*text, markers);
  }
  return lib;
}

ElfLibrary read_elf_library_bytes(const std::string& bytes,
                                  const std::vector<std::string>& markers) {
  ElfReadAt read = [&bytes](uint64_t offset, uint64_t size, std::string* out) {
    if (!fits(offset, size, bytes.size())) return false;
    *out = bytes.substr(size_t(offset), size_t(size));
    return true;
  };
  return read_elf_library(bytes.size(), read, markers);
}

}  // namespace fabkit::probes
