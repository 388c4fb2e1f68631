// The fabcheck-gpu-bench line protocol: every line kind, and the named errors for what a broken
// child could write (wrong types, unknown steps, bad figures, junk).
#include <gtest/gtest.h>

#include "fabric/gpu_active/bench_protocol.h"

namespace fabkit::fabric {
namespace {

const char* kHello =
    R"(HELLO {"protocol":1,"cuda_runtime":13000,"cuda_driver":13000,"cublas":130100,)"
    R"("devices":[{"index":0,"name":"NVIDIA H100 80GB HBM3","bus_id":"00000000:18:00.0","memory_bytes":85045231616},)"
    R"({"index":1,"name":"NVIDIA H100 80GB HBM3","bus_id":"0000:2a:00.0"}]})";

TEST(BenchProtocol, ParsesEveryLineKind) {
  BenchLine h = parse_bench_line(kHello);
  ASSERT_EQ(h.kind, BenchLineKind::kHello) << h.text;
  ASSERT_EQ(h.devices.size(), 2u);
  EXPECT_EQ(h.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(*h.devices[0].memory_bytes, 85045231616u);
  EXPECT_FALSE(h.devices[1].memory_bytes);
  EXPECT_EQ(*h.cublas, 130100);

  BenchLine s = parse_bench_line(R"(STEP {"gpu":-1,"step":"h2d_concurrent"})");
  EXPECT_EQ(s.kind, BenchLineKind::kStep);
  EXPECT_EQ(s.gpu, -1);

  BenchLine f = parse_bench_line(
      R"(FIGURE {"gpu":1,"step":"h2d","value":53.2,"iters":10,"elapsed_ms":50.4,"link":{"speed":"32.0 GT/s PCIe","width":"16"}})"
      "\n");
  ASSERT_EQ(f.kind, BenchLineKind::kFigure) << f.text;
  EXPECT_DOUBLE_EQ(*f.value, 53.2);
  EXPECT_EQ(f.iters, 10);
  EXPECT_EQ(f.link_speed, "32.0 GT/s PCIe");
  EXPECT_EQ(f.link_width, "16");

  BenchLine e = parse_bench_line(
      R"(FIGURE {"gpu":0,"step":"gemm_bf16","error":"cublasGemmEx: X","error_kind":"cublas_error"})");
  ASSERT_EQ(e.kind, BenchLineKind::kFigure);
  EXPECT_FALSE(e.value);
  EXPECT_EQ(e.error_kind, "cublas_error");

  EXPECT_EQ(parse_bench_line("DONE").kind, BenchLineKind::kDone);
  BenchLine u =
      parse_bench_line("UNAVAILABLE no CUDA device/driver: cudaGetDeviceCount: cudaErrorNoDevice");
  EXPECT_EQ(u.kind, BenchLineKind::kUnavailable);
  EXPECT_EQ(u.text, "no CUDA device/driver: cudaGetDeviceCount: cudaErrorNoDevice");
  BenchLine x = parse_bench_line("FAILED bad_device --devices names CUDA device 9");
  EXPECT_EQ(x.kind, BenchLineKind::kFailed);
  EXPECT_EQ(x.word, "bad_device");
}

void expect_invalid(const std::string& line, const std::string& says) {
  BenchLine l = parse_bench_line(line);
  EXPECT_EQ(l.kind, BenchLineKind::kInvalid) << line;
  EXPECT_NE(l.text.find(says), std::string::npos)
      << "'" << l.text << "' should say '" << says << "'";
}

TEST(BenchProtocol, MalformedLinesAreNamed) {
  expect_invalid("HELLO not json", "HELLO needs a JSON object");
  expect_invalid(R"(HELLO {"protocol":2,"devices":[]})", "protocol 2, this fabcheck speaks 1");
  expect_invalid(R"(HELLO {"protocol":1,"devices":"x"})", "\"devices\" is not an array");
  expect_invalid(R"(HELLO {"protocol":1,"devices":[]})", "\"devices\" is empty");
  expect_invalid(R"(HELLO {"protocol":1,"devices":[{"index":0,"name":7,"bus_id":"x"}]})",
                 "devices[0].\"name\" is not a string");
  expect_invalid(R"(HELLO {"protocol":1,"devices":[{"index":1,"name":"a","bus_id":"x"}]})",
                 "index is 1, expected 0");
  expect_invalid(R"(HELLO {"devices":[]})", "HELLO: no \"protocol\"");
  expect_invalid(R"(STEP {"gpu":"0","step":"gemm_bf16"})", "\"gpu\" is not an integer");
  expect_invalid(R"(STEP {"gpu":0,"step":"fft"})", "unknown step \"fft\"");
  expect_invalid(R"(FIGURE {"gpu":0,"step":"h2d"})", "no numeric \"value\" and no \"error\"");
  expect_invalid(R"(FIGURE {"gpu":0,"step":"h2d","value":-1,"iters":1})",
                 "is not a finite figure >= 0");
  // Out of a double's range: either not JSON or not finite, never a figure.
  EXPECT_EQ(parse_bench_line(R"(FIGURE {"gpu":0,"step":"h2d","value":1e999,"iters":1})").kind,
            BenchLineKind::kInvalid);
  expect_invalid(R"(FIGURE {"gpu":0,"step":"h2d","value":5})", "no \"iters\"");
  expect_invalid(R"(FIGURE {"gpu":-1,"step":"h2d","value":5,"iters":1})",
                 "a figure belongs to one GPU");
  expect_invalid("DONE now", "DONE takes no argument");
  expect_invalid("FAILED", "FAILED needs a kind");
  expect_invalid(std::string("rm -rf /\x01\xff"), "unknown line 'rm -rf /\?\?'");
  expect_invalid("", "unknown line ''");
}

}  // namespace
}  // namespace fabkit::fabric
