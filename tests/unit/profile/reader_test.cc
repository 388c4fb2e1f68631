#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <future>

#include "common/errors.h"
#include "profile/profile_document.h"
#include "profile/profile_reader.h"
#include "test_util.h"
#include "tests/support/ttar.h"

namespace fabkit::profile {
namespace {

Json valid_profile() {
  Profile p = testing::build({"node-roce-a.json", "node-roce-b.json"});
  return Json::parse(profile::serialize_profile(p));
}

std::string error_for(const std::string& text) {
  try {
    parse_profile(text, "cluster.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

struct BadCase {
  const char* name;
  const char* pointer;  // JSON pointer to set; "" = replace nothing, use `raw`
  Json value;
  const char* field;     // must appear in the message
  const char* shown;     // the value as the message shows it
};

class BadProfile : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadProfile, ErrorNamesFieldAndValue) {
  const BadCase& c = GetParam();
  Json doc = valid_profile();
  doc[Json::json_pointer(c.pointer)] = c.value;
  std::string msg = error_for(doc.dump());
  ASSERT_FALSE(msg.empty()) << c.name << ": accepted";
  EXPECT_NE(msg.find(std::string("field '") + c.field + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(c.shown), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind("cluster.json: ", 0), 0u) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadProfile,
    ::testing::Values(
        BadCase{"newer_schema", "/schema_version", 2, "schema_version", "2"},
        BadCase{"schema_zero", "/schema_version", 0, "schema_version", "0"},
        BadCase{"schema_string", "/schema_version", "1", "schema_version", "\"1\""},
        BadCase{"unknown_top_key", "/comment", "hi", "comment", "\"hi\""},
        BadCase{"unknown_setting_key", "/settings/NCCL_IB_HCA/note", "x",
                "settings.NCCL_IB_HCA.note", "\"x\""},
        BadCase{"unknown_variable", "/settings/NCCL_FOO", Json::object(), "settings.NCCL_FOO", "{}"},
        BadCase{"port_as_string", "/nodes/0/hcas/0/port", "1", "nodes[0].hcas[0].port", "\"1\""},
        BadCase{"rate_as_string", "/nodes/0/hcas/0/rate_gbps", "100", "nodes[0].hcas[0].rate_gbps",
                "\"100\""},
        BadCase{"interface_with_space", "/nodes/0/interface", "eth 0", "nodes[0].interface",
                "\"eth 0\""},
        BadCase{"interface_too_long", "/nodes/1/interface", "enp37s0f1np1abcd",
                "nodes[1].interface", "\"enp37s0f1np1abcd\""},
        BadCase{"semicolon", "/hosts/roce-a/NCCL_SOCKET_IFNAME/value", "=eno1;rm -rf /",
                "hosts.roce-a.NCCL_SOCKET_IFNAME.value", "metacharacter ';'"},
        BadCase{"backticks", "/settings/MASTER_PORT/value", "`id`", "settings.MASTER_PORT.value",
                "\"`id`\""},
        BadCase{"command_substitution", "/settings/NCCL_TOPO_FILE/value", "/opt/$(reboot).xml",
                "settings.NCCL_TOPO_FILE.value", "metacharacter '$'"},
        BadCase{"quote", "/hosts/roce-b/GLOO_SOCKET_IFNAME/value", "eno1'", "hosts.roce-b.GLOO_SOCKET_IFNAME.value",
                "metacharacter '''"},
        BadCase{"newline_value", "/settings/NCCL_IB_HCA/value", "=mlx5_0:1\nexport X=1",
                "settings.NCCL_IB_HCA.value", "control"},
        BadCase{"exclude_after_exact", "/settings/NCCL_IB_HCA/value", "=^mlx5_0",
                "settings.NCCL_IB_HCA.value", "\"=^mlx5_0\""},
        BadCase{"hca_port_zero", "/settings/NCCL_IB_HCA/value", "=mlx5_0:0",
                "settings.NCCL_IB_HCA.value", "\"=mlx5_0:0\""},
        BadCase{"gid_out_of_range", "/settings/NCCL_IB_GID_INDEX/value", "300",
                "settings.NCCL_IB_GID_INDEX.value", "\"300\""},
        BadCase{"gdr_level_unknown", "/settings/NCCL_NET_GDR_LEVEL/value", "NEAR",
                "settings.NCCL_NET_GDR_LEVEL.value", "\"NEAR\""},
        BadCase{"basis_unknown", "/settings/NCCL_IB_HCA/basis", "guessed",
                "settings.NCCL_IB_HCA.basis", "\"guessed\""},
        BadCase{"value_number", "/settings/MASTER_PORT/value", 29500, "settings.MASTER_PORT.value",
                "29500"},
        BadCase{"reason_newline", "/settings/NCCL_IB_HCA/reason", "a\nb",
                "settings.NCCL_IB_HCA.reason", "control character"},
        BadCase{"hash_format", "/provenance/content_hash", "md5:abc", "provenance.content_hash",
                "\"md5:abc\""},
        BadCase{"created_at", "/provenance/created_at", "yesterday", "provenance.created_at",
                "\"yesterday\""},
        BadCase{"kind_node", "/kind", "node", "kind", "\"node\""},
        BadCase{"host_key", "/hosts/bad host", Json::object(), "hosts.bad host", "\"bad host\""},
        BadCase{"duplicate_node", "/nodes/1/hostname", "roce-a", "nodes[1].hostname", "\"roce-a\""},
        BadCase{"bind_relative", "/container/binds/0", "etc/nccl.conf", "container.binds[0]",
                "\"etc/nccl.conf\""},
        BadCase{"shm_size", "/container/shm_size", "8 g", "container.shm_size", "\"8 g\""},
        BadCase{"nccl_version", "/nccl/version", "latest", "nccl.version", "\"latest\""},
        BadCase{"link_layer", "/nodes/0/hcas/0/link_layer", "Omni-Path", "nodes[0].hcas[0].link_layer",
                "\"Omni-Path\""},
        BadCase{"nodes_not_array", "/nodes", Json::object(), "nodes", "{}"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ProfileReader, MalformedJsonNamesTheFile) {
  std::string msg = error_for("{\"schema_version\": 1,");
  EXPECT_NE(msg.find("cluster.json: not valid JSON"), std::string::npos) << msg;
}

TEST(ProfileReader, MissingFieldIsNamed) {
  Json doc = valid_profile();
  doc.erase("settings");
  EXPECT_NE(error_for(doc.dump()).find("field 'settings' is missing"), std::string::npos);
  doc = valid_profile();
  doc.erase("schema_version");
  EXPECT_NE(error_for(doc.dump()).find("field 'schema_version' is missing"), std::string::npos);
}

TEST(ProfileReader, SchemaVersionIsCheckedBeforeAnythingElse) {
  // A newer document with fields we do not know: the message must be about the version.
  Json doc = valid_profile();
  doc["schema_version"] = 7;
  doc["new_section"] = {{"x", 1}};
  std::string msg = error_for(doc.dump());
  EXPECT_NE(msg.find("newer than this fabcheck reads"), std::string::npos) << msg;
}

TEST(ProfileReader, HashMismatchIsNoticedNotRefused) {
  Json doc = valid_profile();
  doc["hosts"]["roce-b"]["NCCL_SOCKET_IFNAME"]["value"] = "=eno2";
  Profile p = parse_profile(doc.dump(), "cluster.json");
  EXPECT_NE(p.computed_hash, p.provenance.content_hash);
  // Member order and whitespace do not change the hash.
  Json same = valid_profile();
  Profile q = parse_profile(same.dump(8), "cluster.json");
  EXPECT_EQ(q.computed_hash, q.provenance.content_hash);
}

TEST(ProfileReader, LoadProfileReadsFilesAndNamesMissingOnes) {
  fabkit::testing::TempDir dir("profile-reader");
  auto path = dir.path() / "cluster.json";
  fabkit::testing::write_file(path, valid_profile().dump(2));
  EXPECT_EQ(load_profile(path).nodes.size(), 2u);
  try {
    load_profile(dir.path() / "absent.json");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.json"), std::string::npos);
  }
}

// `fabcheck validate FIFO` blocked in open() while no one wrote the FIFO, and a profile on
// /dev/zero was read to the cap: the FIFO is refused after a bounded wait, the device at once.
TEST(ProfileReader, AFifoNoOneWritesOrADeviceIsRefusedNamingTheFile) {
  fabkit::testing::TempDir dir("profile-reader");
  auto path = dir.path() / "cluster.json";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto f = std::async(std::launch::async, [&]() -> std::string {
    try {
      load_profile(path);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(loaded)";
  });
  if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ::close(::open(path.c_str(), O_WRONLY));  // the writer it waits for, so the test ends
    ADD_FAILURE() << "blocked in open() for 30 s";
  }
  const std::string e = f.get();
  EXPECT_NE(e.find(path.string() + ": a FIFO that no process opened for writing"),
            std::string::npos)
      << e;
  try {
    load_profile("/dev/zero");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/zero: is a character device"),
              std::string::npos)
        << e.what();
  }
}

TEST(ProfileReader, CheckedInGoldenProfilesLoad) {
  for (const char* name : {"cluster-ib.json", "cluster-roce.json"}) {
    auto path = fabkit::testing::project_fixtures() / "profile" / name;
    Profile p = load_profile(path);
    EXPECT_EQ(p.computed_hash, p.provenance.content_hash) << name;
  }
}

}  // namespace
}  // namespace fabkit::profile

namespace fabkit::profile {
namespace {

// Found by the profile_reader fuzzer: nlohmann throws out_of_range (not parse_error) for a
// number past double's range; it must still be a UsageError naming the file.
TEST(ProfileReader, NumberOverflowIsAUsageError) {
  try {
    parse_profile("{\"schema_version\": 6e892}", "cluster.json");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.json: not valid JSON"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fabkit::profile
