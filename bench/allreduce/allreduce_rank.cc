// One rank of an all-reduce runner, as a process: the bench and the netns integration tests start
// two of these (one per namespace host) and read the TransportRun JSON each prints on stdout.
// The session token comes from the FABKIT_TOKEN environment variable, never the command line.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

#include "common/json.h"
#include "fabric/allreduce/runners.h"

int main(int argc, char** argv) {
  using namespace fabkit::fabric;
  CLI::App app{"fabkit-allreduce-rank: run one rank of an all-reduce transport and print JSON"};
  AllreduceSpec spec;
  std::string transport = "fabkit";
  std::string hca = "mlx5_0";
  int ib_port = 1, gid_index = 3;
  app.add_option("--transport", transport, "fabkit | raw | gloo-tcp | gloo-ibverbs")->required();
  app.add_option("--rank", spec.rank)->required();
  app.add_option("--world-size", spec.world_size);
  app.add_option("--local", spec.local_addr, "this rank's address")->required();
  app.add_option("--peer", spec.peer_addr, "rank 0's address (rank 1) / unused on rank 0");
  app.add_option("--port", spec.port);
  app.add_option("--sizes", spec.sizes_bytes, "sizes in bytes (default 8 B .. 256 MiB x4)")->delimiter(',');
  app.add_option("--iters", spec.iters);
  app.add_option("--warmup", spec.warmup_iters);
  app.add_option("--timeout-ms", spec.timeout_ms);
  app.add_option("--ifname", spec.ifname);
  app.add_option("--socket-buffer-bytes", spec.socket_buffer_bytes);
  app.add_option("--hca", hca);
  app.add_option("--ib-port", ib_port);
  app.add_option("--gid-index", gid_index);
  CLI11_PARSE(app, argc, argv);
  const char* token = std::getenv("FABKIT_TOKEN");
  if (!token || !*token) {
    std::cerr << "fabkit-allreduce-rank: set FABKIT_TOKEN to the session token (kept off the command line)\n";
    return 2;
  }
  spec.token = token;
  TransportRun run;
  if (transport == "fabkit") run = run_fabkit_socket_allreduce(spec);
  else if (transport == "raw") run = run_raw_exchange(spec);
  else if (transport == "gloo-tcp") run = run_gloo_tcp_allreduce(spec);
  else if (transport == "gloo-ibverbs") run = run_gloo_ibverbs_allreduce(spec, hca, ib_port, gid_index);
  else {
    std::cerr << "fabkit-allreduce-rank: --transport " << transport << " is not one of fabkit, raw, gloo-tcp, gloo-ibverbs\n";
    return 2;
  }
  std::cout << to_json(run).dump() << std::endl;
  return run.status == "ok" ? 0 : 1;
}
