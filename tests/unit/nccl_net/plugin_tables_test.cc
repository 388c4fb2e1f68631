// The pure pieces: which API versions each NCCL release loads, the names NCCL tries for
// NCCL_NET_PLUGIN, and ld.so.conf's lines.
#include <gtest/gtest.h>

#include "probes/nccl_net/nccl_net_facts.h"

namespace fabkit::probes {
namespace {

TEST(PluginApiTable, ReleasesLoadTheVersionsTheirSourceDlsyms) {
  // NVIDIA/nccl tags: v2.19.1-1 tries v7, v6, v5; v2.28.3-1 v11 down to v6; v2.30.3-1 adds v12.
  EXPECT_EQ(nccl_net_api_versions(19), (std::vector<int>{7, 6, 5}));
  EXPECT_EQ(nccl_net_api_versions(28), (std::vector<int>{11, 10, 9, 8, 7, 6}));
  EXPECT_EQ(nccl_net_api_versions(30).front(), 12);
  EXPECT_EQ(nccl_net_api_versions(11), (std::vector<int>{4}));
  EXPECT_TRUE(nccl_net_api_versions(3).empty());
  EXPECT_TRUE(nccl_net_api_versions(newest_known_nccl_minor() + 1).empty());
  EXPECT_EQ(nccl_release_introducing(8), "2.20");
  EXPECT_EQ(nccl_release_introducing(4), "2.8");
  EXPECT_EQ(nccl_release_introducing(99), "");
}

TEST(PluginApiTable, NamesTriedForTheSetting) {
  EXPECT_EQ(plugin_names_to_try(std::nullopt), (std::vector<std::string>{"libnccl-net.so"}));
  EXPECT_TRUE(plugin_names_to_try(std::string("none")).empty());
  EXPECT_TRUE(plugin_names_to_try(std::string("NONE")).empty());
  EXPECT_EQ(plugin_names_to_try(std::string("ofi")),
            (std::vector<std::string>{"ofi", "libnccl-net-ofi.so"}));
  // A library name or a path is tried as it is, and only so.
  EXPECT_EQ(plugin_names_to_try(std::string("libnccl-net-aws-ofi.so")),
            (std::vector<std::string>{"libnccl-net-aws-ofi.so"}));
  EXPECT_EQ(plugin_names_to_try(std::string("/usr/local/gib/lib64/libnccl-net.so")),
            (std::vector<std::string>{"/usr/local/gib/lib64/libnccl-net.so"}));
  EXPECT_EQ(plugin_names_to_try(std::string("a,,b")),
            (std::vector<std::string>{"a", "libnccl-net-a.so", "b", "libnccl-net-b.so"}));
}

TEST(PluginApiTable, LdSoConfLinesAsLdconfigReadsThem) {
  auto lines = parse_ld_so_conf(
      "# libc default configuration\n/usr/local/lib\ninclude /etc/ld.so.conf.d/*.conf\n"
      "/opt/a:/opt/b, /opt/c # trailing comment\nhwcap 0 nosegneg\n");
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].directory, "/usr/local/lib");
  EXPECT_EQ(lines[1].include, "/etc/ld.so.conf.d/*.conf");
  EXPECT_EQ(lines[2].directory, "/opt/a");
  EXPECT_EQ(lines[3].directory, "/opt/b");
  EXPECT_EQ(lines[4].directory, "/opt/c");
}

TEST(PluginApiTable, DottedVersions) {
  EXPECT_EQ(parse_dotted_version("2.28.9"), (std::vector<int>{2, 28, 9}));
  EXPECT_FALSE(parse_dotted_version("2"));
  EXPECT_FALSE(parse_dotted_version("2.x"));
  EXPECT_FALSE(parse_dotted_version("2..1"));
}

}  // namespace
}  // namespace fabkit::probes
