#include "reports/prom/prom_text.h"

#include <gtest/gtest.h>

#include <fstream>

namespace fabkit::reports::prom {
namespace {

Json load(const std::string& rel) {
  std::ifstream f(std::string(FABKIT_FIXTURES) + "/" + rel);
  return Json::parse(f);
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(Prom, EscapesAndValues) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(escape_help("x\\y\nz"), "x\\\\y\\nz");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
  EXPECT_EQ(format_value(10), "10");
  EXPECT_EQ(format_value(200e9), "200000000000");
  EXPECT_EQ(format_value(0.1), "0.1");
  double x = 1.5331161247271003;  // a real busbw: must read back as the same double
  EXPECT_EQ(std::strtod(format_value(x).c_str(), nullptr), x);
}

TEST(Prom, RenderHelpTypeAndLabels) {
  std::string t = render({{"x_total", "h\nelp", "gauge", {{{{"a", "q\"v"}, {"b", "2"}}, 3}}},
                          {"empty", "no samples", "gauge", {}}});
  EXPECT_EQ(t, "# HELP x_total h\\nelp\n# TYPE x_total gauge\nx_total{a=\"q\\\"v\",b=\"2\"} 3\n");
}

TEST(Prom, NodeFiguresFromTheReport) {
  std::string t = render(node_families(load("profile/node-gpu-ib-01.json")));
  EXPECT_TRUE(has_line(t, "fabkit_node_hca_port_active{device=\"mlx5_0\",port=\"1\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "fabkit_node_hca_port_active{device=\"mlx5_2\",port=\"1\"} 0")) << t;
  EXPECT_TRUE(has_line(
      t, "fabkit_node_hca_port_rate_bytes_per_second{device=\"mlx5_0\",port=\"1\"} 25000000000"));
  EXPECT_TRUE(has_line(t,
                       "fabkit_node_hca_port_info{device=\"mlx5_2\",port=\"1\",state=\"DOWN\",link_"
                       "layer=\"InfiniBand\"} 1"));
  EXPECT_TRUE(has_line(t, "fabkit_node_memlock_limit_bytes{limit=\"soft\"} +Inf"));
  EXPECT_TRUE(has_line(t, "fabkit_node_gpus 2"));
  EXPECT_TRUE(has_line(t, "fabkit_node_findings{severity=\"fail\"} 0"));
  std::string cpu = render(node_families(load("profile/node-cpu-01.json")));
  EXPECT_TRUE(has_line(cpu, "fabkit_node_memlock_limit_bytes{limit=\"soft\"} 8388608")) << cpu;
  EXPECT_EQ(cpu.find("fabkit_node_hca_port_active{"), std::string::npos);  // no HCAs: no samples
}

TEST(Prom, PairBusbwPerTransportAndSizeInBytesPerSecond) {
  Json doc = load("reports/pair-netns-veth.json");
  std::string t = render(pair_families(doc));
  int n = 0;
  for (const auto& tr : doc["pair"]["transports"])
    for (const auto& s : tr["sizes"]) {
      ++n;
      std::string line = "fabkit_pair_busbw_bytes_per_second{host_a=\"" +
                         doc["pair"]["hosts"]["a"].get<std::string>() + "\",host_b=\"" +
                         doc["pair"]["hosts"]["b"].get<std::string>() + "\",transport=\"" +
                         tr["transport"].get<std::string>() + "\",bytes=\"" +
                         std::to_string(s["bytes"].get<int64_t>()) + "\"} " +
                         format_value(s["busbw_gbps"].get<double>() * 1e9);
      EXPECT_TRUE(has_line(t, line)) << line;
    }
  EXPECT_EQ(n, 18);
  EXPECT_NE(t.find("fabkit_pair_link_rate_bytes_per_second{"), std::string::npos);
  doc["pair"]["transports"][0]["peak_busbw_gbps"] = "x";
  EXPECT_THROW(pair_families(doc), std::invalid_argument);
}


TEST(Prom, ClusterNodesAndPairsFromTheReport) {
  Json doc = load("reports/cluster-4-hosts.json");
  std::string t = render(cluster_families(doc));
  const Json& c = doc["cluster"];
  for (const auto& p : c["matrix"]["pairs"]) {
    const std::string l = "{host_a=\"" + p["a"].get<std::string>() + "\",host_b=\"" +
                          p["b"].get<std::string>() + "\"}";
    EXPECT_TRUE(has_line(t, "fabkit_cluster_pair_ok" + l + (p["ok"].get<bool>() ? " 1" : " 0")))
        << l;
    EXPECT_TRUE(has_line(t, "fabkit_cluster_pair_state{host_a=\"" + p["a"].get<std::string>() +
                                "\",host_b=\"" + p["b"].get<std::string>() + "\",state=\"" +
                                p["state"].get<std::string>() + "\"} 1"));
    if (p["gbit_s"].is_number())  // Gbit/s in the JSON, bytes per second (base unit) here
      EXPECT_TRUE(has_line(t, "fabkit_cluster_pair_bandwidth_bytes_per_second" + l + " " +
                                  format_value(p["gbit_s"].get<double>() * 1e9 / 8)))
          << l;
    else
      EXPECT_EQ(t.find("fabkit_cluster_pair_bandwidth_bytes_per_second" + l), std::string::npos);
  }
  for (const auto& n : c["nodes"])
    EXPECT_TRUE(has_line(t, "fabkit_cluster_node_slow{host=\"" + n["host"].get<std::string>() +
                                "\"} " + (n["slow"].get<bool>() ? "1" : "0")));
  EXPECT_TRUE(has_line(t, "fabkit_cluster_findings{severity=\"fail\"} " +
                              std::to_string(doc["summary"]["fail"].get<int>())));
  // A plan has no figures; a figure of the wrong type is named.
  EXPECT_THROW(cluster_families(Json{{"findings", Json::array()}, {"plan", Json::object()}}),
               std::invalid_argument);
  doc["cluster"]["matrix"]["pairs"][0]["rtt_us"] = "fast";
  try {
    cluster_families(doc);
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.matrix.pairs[0].rtt_us"), std::string::npos);
  }
}

}  // namespace
}  // namespace fabkit::reports::prom
