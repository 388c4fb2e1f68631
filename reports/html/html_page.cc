// The page skeleton, findings, node facts and profiles. Pair, cluster and metrics sections live
// in html_fabric.cc and html_train.cc.
#include <cctype>
#include <sstream>
#include <stdexcept>

#include "reports/chart/svg_chart.h"
#include "reports/html/html_gpu_active.h"
#include "reports/html/html_report.h"

namespace fabkit::reports::html {
namespace {

// Inline, so the file renders the same with no network and no other file beside it.
constexpr const char* kCss = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0 16px;background:#fff}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top;font-size:13px}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.sev-fail td.sev{background:#f8d7da;color:#842029;font-weight:bold}
tr.sev-warn td.sev{background:#fff3cd;color:#664d03;font-weight:bold}
tr.sev-info td.sev{background:#e7f1ff;color:#084298}
code{font-size:12px}.src{color:#666;font-size:12px}.charts svg{margin:6px 12px 6px 0;border:1px solid #eee}
)";

const Json kEmptyArray = Json::array();

}  // namespace

std::string escape(const std::string& s) { return chart::xml_escape(s); }

std::string iec_bytes(double v) {
  std::string s = chart::format_bytes(v);  // "256K", "8"
  if (std::isdigit(static_cast<unsigned char>(s.back()))) return s + " B";
  char unit = s.back();
  s.pop_back();
  return s + " " + unit + "iB";
}

std::optional<double> opt_number(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number())
    throw std::invalid_argument(where + "." + key + " must be a number or null, got " +
                                j[key].dump());
  return j[key].get<double>();
}

std::string opt_string(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
  if (!j[key].is_string())
    throw std::invalid_argument(where + "." + key + " must be a string, got " + j[key].dump());
  return j[key].get<std::string>();
}

const Json& opt_array(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return kEmptyArray;
  if (!j[key].is_array())
    throw std::invalid_argument(where + "." + key + " must be an array, got " + j[key].dump());
  return j[key];
}

std::string findings_table(const Json& findings) {
  std::ostringstream o;
  if (findings.empty()) return "<p class=\"no-findings\">no findings</p>\n";
  o << "<table class=\"findings\"><thead><tr><th>severity</th><th>code</th><th>subject</th>"
       "<th>message</th><th>fix</th></tr></thead><tbody>\n";
  // Worst first, as the text report groups them.
  for (const char* sev : {"fail", "warn", "info"})
    for (size_t i = 0; i < findings.size(); ++i) {
      const Json& f = findings[i];
      std::string where = "findings[" + std::to_string(i) + "]";
      if (!f.is_object()) throw std::invalid_argument(where + " is not an object");
      std::string s = opt_string(f, "severity", where);
      if (s != "fail" && s != "warn" && s != "info")
        throw std::invalid_argument(where + ".severity must be fail, warn or info, got '" + s +
                                    "'");
      if (s != sev) continue;
      o << "<tr class=\"finding sev-" << s << "\"><td class=\"sev\">" << s << "</td><td><code>"
        << escape(opt_string(f, "code", where)) << "</code></td><td>"
        << escape(opt_string(f, "subject", where)) << "</td><td>"
        << escape(opt_string(f, "message", where)) << "</td><td><code>"
        << escape(opt_string(f, "fix", where)) << "</code></td></tr>\n";
    }
  o << "</tbody></table>\n";
  return o.str();
}

std::string node_section(const Json& doc) {
  std::ostringstream o;
  o << findings_table(opt_array(doc, "findings", "report"));
  // The facts people ask about first: ports, memlock, GPUs. The rest is in --json.
  const Json& rdma = doc.contains("rdma") ? doc["rdma"] : kEmptyArray;
  const Json& devices = opt_array(rdma, "devices", "rdma");
  o << "<h3>RDMA ports</h3>\n";
  if (devices.empty()) {
    o << "<p>no RDMA devices</p>\n";
  } else {
    o << "<table class=\"ports\"><thead><tr><th>device</th><th>port</th><th>state</th>"
         "<th>link layer</th><th>rate (Gbit/s)</th><th>netdev</th></tr></thead><tbody>\n";
    for (size_t d = 0; d < devices.size(); ++d) {
      std::string dw = "rdma.devices[" + std::to_string(d) + "]";
      for (const auto& p : opt_array(devices[d], "ports", dw)) {
        auto rate = opt_number(p, "rate_gbps", dw + ".ports[]");
        o << "<tr><td>" << escape(opt_string(devices[d], "name", dw)) << "</td><td class=\"num\">"
          << p.value("port", 0) << "</td><td>" << escape(opt_string(p, "state", dw + ".ports[]"))
          << "</td><td>" << escape(opt_string(p, "link_layer", dw + ".ports[]"))
          << "</td><td class=\"num\">" << (rate ? chart::format_number(*rate) : "unknown")
          << "</td><td>" << escape(opt_string(p, "netdev", dw + ".ports[]")) << "</td></tr>\n";
      }
    }
    o << "</tbody></table>\n";
  }
  o << "<h3>Limits and GPUs</h3>\n<table class=\"facts\"><tbody>\n";
  // memlock_bytes is null where the limit could not be read (an empty --sysroot tree).
  if (doc.contains("limits") && doc["limits"].is_object() &&
      doc["limits"].contains("memlock_bytes")) {
    const Json& m = doc["limits"]["memlock_bytes"].is_object() ? doc["limits"]["memlock_bytes"]
                                                               : Json::object();
    auto show = [](const Json& v) {
      return v.is_number()   ? iec_bytes(v.get<double>())
             : v.is_string() ? v.get<std::string>()
                             : "unknown";
    };
    o << "<tr><th>memlock (soft / hard)</th><td>" << escape(show(m.value("soft", Json()))) << " / "
      << escape(show(m.value("hard", Json()))) << "</td></tr>\n";
  }
  if (doc.contains("gpus")) {
    auto n = opt_number(doc["gpus"], "count", "gpus");
    o << "<tr><th>GPUs</th><td>" << (n ? chart::format_number(*n) : "unknown") << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
  if (doc.contains("gpus")) o << gpu_section(doc["gpus"]);
  o << pcie_and_kernel_log_section(doc);
  o << roce_qos_section(doc);
  o << ib_qos_section(doc);
  if (doc.contains("gpu_active")) o << gpu_active_section(doc["gpu_active"]);
  return o.str();
}

std::string profile_section(const Json& doc) {
  std::ostringstream o;
  o << "<h3>Settings</h3>\n<table class=\"settings\"><thead><tr><th>variable</th><th>value</th>"
       "<th>basis</th><th>reason</th></tr></thead><tbody>\n";
  if (doc.contains("settings") && doc["settings"].is_object())
    for (auto it = doc["settings"].begin(); it != doc["settings"].end(); ++it) {
      const Json& s = it.value();
      std::string value =
          s.contains("value")
              ? (s["value"].is_string() ? s["value"].get<std::string>() : s["value"].dump())
              : "";
      o << "<tr><td><code>" << escape(it.key()) << "</code></td><td><code>" << escape(value)
        << "</code></td><td>" << escape(opt_string(s, "basis", "settings." + it.key()))
        << "</td><td>" << escape(opt_string(s, "reason", "settings." + it.key())) << "</td></tr>\n";
    }
  o << "</tbody></table>\n<h3>Nodes</h3>\n<table class=\"nodes\"><thead><tr><th>host</th>"
       "<th>interface</th><th>HCA ports</th><th>GPUs</th></tr></thead><tbody>\n";
  const Json& nodes = opt_array(doc, "nodes", "profile");
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string w = "nodes[" + std::to_string(i) + "]";
    std::string hcas;
    for (const auto& h : opt_array(nodes[i], "hcas", w)) {
      auto rate = opt_number(h, "rate_gbps", w + ".hcas[]");
      hcas += (hcas.empty() ? "" : ", ") + opt_string(h, "device", w + ".hcas[]") + ":" +
              std::to_string(h.value("port", 0)) + " " +
              opt_string(h, "link_layer", w + ".hcas[]") +
              (rate ? " " + chart::format_number(*rate) + " Gbit/s" : "");
    }
    auto gpus = opt_number(nodes[i], "gpu_count", w);
    o << "<tr><td>" << escape(opt_string(nodes[i], "hostname", w)) << "</td><td>"
      << escape(opt_string(nodes[i], "interface", w)) << "</td><td>" << escape(hcas)
      << "</td><td class=\"num\">" << (gpus ? chart::format_number(*gpus) : "?") << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
  return o.str();
}

std::string render_html(const std::vector<InputDocument>& inputs, const std::string& generated_at) {
  std::ostringstream body;
  for (const auto& in : inputs) {
    try {
      const Json& d = in.doc;
      std::string title;
      switch (in.kind) {
        case InputKind::kMetrics:
          title = "fabtrain run";
          break;
        case InputKind::kProfile:
          title = "Profile";
          break;
        default:
          title = "fabcheck " + d.value("kind", std::string("?")) + " — " +
                  d.value("hostname", std::string("?")) + " — " +
                  d.value("generated_at", std::string(""));
      }
      body << "<section class=\"input kind-" << escape(to_string(in.kind)) << "\">\n<h2>"
           << escape(title) << "</h2>\n<p class=\"src\">" << escape(to_string(in.kind)) << " from "
           << escape(in.path) << "</p>\n";
      switch (in.kind) {
        case InputKind::kNodeReport:
          body << node_section(d);
          break;
        case InputKind::kPairReport:
          body << pair_section(d);
          break;
        case InputKind::kClusterReport:
          body << cluster_section(d);
          break;
        case InputKind::kOtherReport:
          body << findings_table(opt_array(d, "findings", "report"));
          break;
        case InputKind::kProfile:
          body << profile_section(d);
          break;
        case InputKind::kMetrics:
          body << metrics_section(in.records);
          break;
      }
      body << "</section>\n";
    } catch (const std::exception& e) {
      throw std::invalid_argument(in.path + ": " + e.what());
    }
  }
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
       "'unsafe-inline'; img-src data:\">\n"
    << "<title>fabkit report</title>\n<style>" << kCss << "</style></head>\n<body>\n"
    << "<h1>fabkit report</h1>\n<p class=\"src\">generated " << escape(generated_at) << " from "
    << inputs.size() << " input" << (inputs.size() == 1 ? "" : "s") << "</p>\n"
    << body.str() << "</body></html>\n";
  return o.str();
}

}  // namespace fabkit::reports::html
