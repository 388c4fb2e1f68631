// The MAD codec compiled with UBSan (-fno-sanitize-recover: a report aborts the test), for the
// undefined behaviour a plain build cannot show: an SA error reply carries no record, and copying
// an empty vector's data() (null) with memcpy is undefined even for zero bytes (issue #36; the
// fuzz_ib_qos_mad fuzzer found it through the replay's ERR_NO_RECORDS reply).
#include <gtest/gtest.h>

#include "probes/ib_qos/mad_codec.h"

namespace fabkit::probes {
namespace {

TEST(MadCodecUbsan, SaErrorReplyWithoutARecord) {
  MadRequest req;
  ASSERT_TRUE(parse_mad_request(build_path_record_get("fe80::1", "fe80::2", 9), req));
  const std::vector<uint8_t> no_record;
  auto reply = build_sa_reply(req, no_record, 3 << 8);  // ERR_NO_RECORDS
  ASSERT_EQ(reply.size(), kMadSize);
  MadReply r = parse_mad_reply(reply, kMgmtClassSubnAdm, kAttrPathRecord, 9);
  EXPECT_EQ(r.malformed, "");
  EXPECT_EQ(r.status, 3 << 8);
  EXPECT_EQ(r.sa_data, std::vector<uint8_t>(kMadSize - 56, 0));  // the record area stays zero
}

}  // namespace
}  // namespace fabkit::probes
