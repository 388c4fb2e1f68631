#include "reports/text/gpu_active_text.h"

#include <cstdio>

#include "reports/text/table.h"

namespace fabkit::reports::text {
namespace {

// The fraction, colored by the judge's verdict on it ("fail", "warn", "ok" or null).
std::string pct(const Json& f, const Json& verdict, const Style& style) {
  if (!f.is_number()) return "-";
  char b[16];
  std::snprintf(b, sizeof b, "%.0f%%", f.get<double>() * 100);
  std::string v = str(verdict, "");
  return v == "fail" ? style.bad(b) : v == "warn" ? style.warn(b) : std::string(b);
}

std::string link(const Json& l) {
  const Json& g = member(l, "generation");
  const Json& w = member(l, "width");
  if (!g.is_number() && !w.is_number()) return "?";
  return "Gen" + (g.is_number() ? g.dump() : std::string("?")) + " x" +
         (w.is_number() ? w.dump() : std::string("?"));
}

std::string mib(const Json& bytes) {
  return bytes.is_number()
             ? std::to_string(static_cast<uint64_t>(bytes.get<double>()) >> 20) + " MiB"
             : "-";
}

void render_gpu(const Json& g, std::ostream& out, const Style& style) {
  const Json& pcie = member(g, "pcie");
  out << "GPU " << (member(g, "index").is_number() ? member(g, "index").dump() : "?") << " "
      << str(member(g, "name")) << " (" << str(member(g, "bus_id")) << "; model "
      << str(member(g, "sku_label"), "unknown") << "; PCIe " << link(member(pcie, "under_load"))
      << " under load, can train " << link(member(pcie, "capable")) << ")\n";
  Table t({{"figure"},
           {"measured", Align::kRight},
           {"expected", Align::kRight},
           {"unit"},
           {"fraction", Align::kRight},
           {"basis"}});
  for (const auto& f : member(g, "figures")) {
    std::string name = str(member(f, "name"));
    if (member(f, "error").is_string()) {
      t.add_row({name, style.bad("error"), "", "", "", str(member(f, "error"))});
      continue;
    }
    t.add_row({name, fixed(member(f, "measured"), 1), fixed(member(f, "expected"), 1),
               str(member(f, "unit")), pct(member(f, "fraction"), member(f, "verdict"), style),
               str(member(f, "basis"), "")});
  }
  t.render(out);
}

}  // namespace

void render_gpu_active(const Json& s, std::ostream& out, const Style& style) {
  if (!s.is_object()) return;
  std::string status = str(member(s, "status"));
  const Json& elapsed = member(s, "elapsed_ms");
  out << "\nactive GPU check: " << (status == "ran" ? status : style.warn(status));
  if (elapsed.is_number() && status != "unavailable") {
    char b[32];
    std::snprintf(b, sizeof b, " in %.1f s", elapsed.get<double>() / 1000);
    out << b;
  }
  if (member(s, "reason").is_string()) out << " (" << str(member(s, "reason")) << ")";
  out << "\n";
  for (const auto& g : member(s, "gpus")) render_gpu(g, out, style);
  const Json& runs = member(s, "allreduce");
  if (!runs.is_array() || runs.empty()) return;
  out << "NCCL all-reduce over the node's GPUs (busbw of the slowest rank)\n";
  Table t({{"algorithm"},
           {"status"},
           {"ranks", Align::kRight},
           {"size"},
           {"busbw_GB/s", Align::kRight},
           {"expected", Align::kRight},
           {"fraction", Align::kRight},
           {"basis or reason"}});
  for (const auto& r : runs) {
    std::string st = str(member(r, "status"));
    bool ok = st == "ok";
    t.add_row({str(member(r, "algorithm")), ok ? st : style.warn(st),
               member(r, "ranks").is_number() ? member(r, "ranks").dump() : "-",
               mib(member(r, "bytes")), fixed(member(r, "busbw_gb_per_s"), 1),
               fixed(member(r, "expected"), 1),
               pct(member(r, "fraction"), member(r, "verdict"), style),
               ok ? str(member(r, "basis"), "") : str(member(r, "reason"), "")});
  }
  t.render(out);
}

}  // namespace fabkit::reports::text
