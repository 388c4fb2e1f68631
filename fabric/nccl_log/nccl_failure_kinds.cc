#include "fabric/nccl_log/nccl_failure_kinds.h"

namespace fabkit::nccl_log {

const std::vector<FailureKind>& failure_kinds() {
  using T = FailureTier;
  static const std::vector<FailureKind> kinds = {
      // --- resources on this node ---
      {"out_of_memory",
       T::kRoot,
       "GPU out of memory",
       "a CUDA allocation NCCL made for its buffers failed: the GPU had no free memory left",
       {"the model, activations or caching allocator already hold the GPU's memory",
        "another process shares the GPU (check nvidia-smi)",
        "many communicators or channels each allocate their own buffers (NCCL_BUFFSIZE, "
        "NCCL_NCHANNELS_PER_NET_PEER, NVLS buffers)"},
       "lower the batch or sequence size, free memory before creating communicators, stop other "
       "processes on the GPU; reduce NCCL_BUFFSIZE or set NCCL_NVLS_ENABLE=0 on NVSwitch systems"},
      {"cuda_error",
       T::kRoot,
       "CUDA error under NCCL",
       "a CUDA call NCCL made failed (`Cuda failure '...'`, ncclUnhandledCudaError)",
       {"a CUDA driver/runtime mismatch or a GPU in error (Xid in dmesg, ECC, fallen off the bus)",
        "a kernel of the application failed earlier and the error surfaced in NCCL's next call",
        "an NCCL built for another CUDA or GPU architecture ('named symbol not found', 'no kernel "
        "image')"},
       "read the CUDA error text; run `nvidia-smi -q -d ECC,XID` and `dmesg | grep -i xid`; rerun "
       "with CUDA_LAUNCH_BLOCKING=1 to find the call; match NCCL's CUDA build to the driver"},
      // graph/xml.h, graph/xml.cc: the XML topology NCCL reads (NCCL_TOPO_FILE, a cloud image's
      // or a net plugin's topology file, an algorithm XML) or builds from /sys lacks what it
      // needs; NCCL returns ncclInternalError for it, which says nothing a user can act on. The
      // fix follows the maintainers' answers (NVIDIA/nccl#379, #1008, nccl-tests#86;
      // aws-ofi-nccl#785: update the plugin that ships a static topology).
      {"topology_error",
       T::kRoot,
       "NCCL topology error",
       "NCCL could not read the node's topology: an XML topology it was given lacks an attribute "
       "or does not parse ('Attribute arch of node cpu not found', 'XML Parse : ...'), so "
       "communicator setup stopped",
       {"a topology file (NCCL_TOPO_FILE, also set in /etc/nccl.conf or ~/.nccl.conf) written "
        "for another machine or instance type, or a net plugin's static topology used with only "
        "some of the GPUs",
        "a container or VM whose /sys does not show the host's PCI tree and CPUs, so the "
        "detected topology misses the nodes the file or NCCL expects",
        "an NCCL too old for the file (before 2.8 CPU attributes were read only for the GPUs in "
        "use) or an algorithm/graph XML (NCCL_GRAPH_FILE, MSCCL/SCCL) for another layout"},
       "point NCCL_TOPO_FILE at a topology of this node (dump one on the bare-metal host with "
       "NCCL_TOPO_DUMP_FILE=topo.xml, keep its <cpu> and <pci> tags) or unset it, and look for "
       "NCCL_TOPO_FILE/NCCL_GRAPH_FILE in /etc/nccl.conf; run containers with the host's /sys "
       "mounted (read-only) so NCCL sees the PCI tree; update a net plugin that ships a static "
       "topology (aws-ofi-nccl >= 1.11 generates it)"},
      {"shm_exhausted",
       T::kRoot,
       "shared memory exhausted",
       "NCCL could not create a shared-memory segment in /dev/shm for its intra-node transport, "
       "or one it mapped could not be backed when touched (the process dies of SIGBUS)",
       {"a container's /dev/shm left at Docker's 64 MB default (or a small Kubernetes emptyDir)",
        "/dev/shm full of stale nccl-* segments from crashed jobs",
        "many ranks per node, each needing its own segments"},
       "give the container more /dev/shm (docker --shm-size=1g or more; Kubernetes: an emptyDir "
       "with medium: Memory mounted at /dev/shm); remove stale /dev/shm/nccl-* files; "
       "NCCL_SHM_DISABLE=1 works around it at some intra-node speed"},
      // --- RDMA verbs ---
      {"ibv_reg_mr_failed",
       T::kRoot,
       "memory registration failed",
       "registering a buffer with the RDMA NIC (ibv_reg_mr, or a net plugin's registration) failed",
       {"RLIMIT_MEMLOCK too low for NCCL's pinned buffers ('Cannot allocate memory')",
        "GPU memory registered without GPUDirect RDMA support (nvidia-peermem not loaded, no "
        "DMA-BUF)",
        "the NIC's memory-translation resources exhausted by the processes sharing it"},
       "ulimit -l unlimited (limits.conf, LimitMEMLOCK=infinity for slurmd, docker --ulimit "
       "memlock=-1); for GPU memory: modprobe nvidia-peermem, or NCCL_DMABUF_ENABLE=1 with the "
       "open GPU kernel driver"},
      {"qp_create_failed",
       T::kRoot,
       "cannot create an RDMA queue pair",
       "ibv_create_qp failed (NCCL's IB transport or a net plugin such as NET/IBext)",
       {"the device's max_qp exhausted: ranks x peers x NCCL_IB_QPS_PER_CONNECTION QPs per HCA",
        "RLIMIT_MEMLOCK too low to pin the queues",
        "a work-request or inline size over the device's limits, or the device unusable here (a "
        "container without /dev/infiniband, a port or firmware in error)"},
       "lower NCCL_IB_QPS_PER_CONNECTION or the ranks per HCA; ulimit -l unlimited; compare "
       "`ibv_devinfo -v` max_qp/max_qp_wr with what the job needs; check dmesg for mlx5 errors"},
      {"cq_create_failed",
       T::kRoot,
       "cannot create an RDMA completion queue",
       "ibv_create_cq failed (NCCL's IB transport or a net plugin)",
       {"RLIMIT_MEMLOCK too low to pin the ring",
        "max_cq/max_cqe exhausted by the processes sharing the HCA",
        "the device unusable here: no /dev/infiniband in the container, a port or firmware in "
        "error"},
       "ulimit -l unlimited (limits.conf, LimitMEMLOCK=infinity, --ulimit memlock=-1); compare "
       "`ibv_devinfo -v` max_cq/max_cqe with the ranks per HCA; pass /dev/infiniband; check dmesg"},
      // ibvwrap/net_ib: the device itself could not be opened, queried or polled.
      {"ib_device_error",
       T::kRoot,
       "RDMA device unusable",
       "a verbs call on the device itself failed (ibv_open_device, ibv_query_device/port, "
       "ibv_alloc_pd, ibv_poll_cq): NCCL could not use the HCA",
       {"the device is not reachable from this process (a container without /dev/infiniband or "
        "its uverbs devices, a missing provider library such as libmlx5)",
        "the adapter or its port is in error (firmware fault, PCIe error; see dmesg for mlx5 "
        "messages)",
        "RLIMIT_MEMLOCK too low to allocate the device's resources"},
       "run `ibv_devinfo` in the same environment as the job (container included); pass "
       "/dev/infiniband into the container; ulimit -l unlimited; check dmesg and the firmware; "
       "exclude the device with NCCL_IB_HCA until it is fixed"},
      {"qp_transition_failed",
       T::kRoot,
       "RDMA queue pair rejected on connect",
       "ibv_modify_qp failed while moving the QP to INIT/RTR/RTS: the two ends' addresses or "
       "settings do not fit",
       {"NCCL_IB_GID_INDEX names a RoCE v1 or empty GID where RoCE v2 is needed ('Invalid "
        "argument')",
        "no route to the peer's GID: the RoCE interfaces are on different subnets or the port is "
        "down ('Network is unreachable', 'No such device')",
        "a path MTU or link layer mismatch between the two ports"},
       "set NCCL_IB_GID_INDEX to the port's RoCE v2 GID (fabcheck node shows roce_v2_gid_index; "
       "commonly 3) or leave it unset on NCCL >= 2.21; check that both RoCE NICs have addresses "
       "that reach each other (ping over them) and that the ports are ACTIVE"},
      {"transport_retry_exceeded",
       T::kRoot,
       "IB retry count exceeded",
       "an RDMA work completion failed with IBV_WC_RETRY_EXC_ERR (12): the peer's NIC did not "
       "acknowledge within the retry budget",
       {"the link or a switch port went down or flaps (bad cable or transceiver)",
        "the peer process or node died while the connection was in use",
        "(RoCE) a lossy path: PFC/ECN not configured, or the two NICs cannot reach each other"},
       "check both ports (ibstat; counters symbol_error, link_downed, port_rcv_errors); look for "
       "the first error on the peer host named in the message; raise NCCL_IB_TIMEOUT=22 and "
       "NCCL_IB_RETRY_CNT=7 for long paths; on RoCE verify PFC/ECN and the GID index"},
      {"local_protection_error",
       T::kRoot,
       "RDMA local protection error",
       "an RDMA work completion failed with IBV_WC_LOC_PROT_ERR (4): the NIC could not access a "
       "buffer through its memory registration",
       {"GPUDirect RDMA registration that the NIC cannot use (nvidia-peermem or DMA-BUF broken, "
        "IOMMU/ACS translating peer-to-peer traffic)",
        "a buffer freed or re-registered while a transfer used it",
        "a driver or firmware bug of the NIC or the net plugin"},
       "retry with NCCL_NET_GDR_LEVEL=LOC (no GPUDirect) to confirm; check nvidia-peermem/DMA-BUF "
       "and that ACS/IOMMU is off on the PCIe path (fabcheck node); update the NIC firmware and "
       "the net plugin"},
      {"remote_access_error",
       T::kRoot,
       "RDMA remote access error",
       "an RDMA work completion failed with IBV_WC_REM_ACCESS_ERR (10) or a remote operation "
       "error: the peer's NIC refused the access",
       {"the peer deregistered or never registered the buffer (it failed or exited)",
        "GPUDirect RDMA broken on the peer", "mismatched NCCL or plugin versions across nodes"},
       "look for the first error on the peer host; check nvidia-peermem/DMA-BUF on it; run the "
       "same NCCL and plugin version on every node"},
      {"completion_error",
       T::kRoot,
       "RDMA completion error",
       "an RDMA work completion failed with a status fabcheck has no rule for",
       {"see the status name (ibv_wc_status_str) in the message"},
       "check both ports (ibstat, error counters) and the first error on the peer host"},
      // NCCL's IB transport also watches the HCA's asynchronous events (ncclIbAsyncThreadMain):
      // a port going down, the device failing, or a queue pair put in error by the hardware.
      {"ib_async_error",
       T::kRoot,
       "RDMA NIC reported an asynchronous error",
       "the HCA raised an error event outside any transfer (port error, local catastrophic error, "
       "a fatal or access-violation event on a queue pair)",
       {"the link went down or flaps: a bad cable or transceiver, a switch port reset ('port "
        "error')",
        "the adapter itself failed: firmware fault, overheating, PCIe error ('local catastrophic "
        "error'; see dmesg for mlx5 health messages)",
        "a queue pair's access to a buffer was refused (GPUDirect RDMA registration, IOMMU/ACS; "
        "'local access violation work queue error')"},
       "look at `ibstat`/`ibv_devinfo` port states and error counters (ibqueryerrors, "
       "perfquery) on the host that said it, and dmesg for mlx5 errors; reseat or replace the "
       "cable, update the firmware; for access violations check nvidia-peermem/DMA-BUF and ACS"},
      // --- TCP between NCCL processes ---
      {"connect_failed",
       T::kRoot,
       "cannot connect to a peer",
       "a TCP connection NCCL needed (bootstrap, proxy or the socket transport) could not be set "
       "up: refused, aborted, timed out or unreachable",
       {"a firewall or security group drops NCCL's ports (random high ports, not only "
        "MASTER_PORT)",
        "NCCL picked an interface the peer cannot reach (docker0, a link-local or a second NIC): "
        "NCCL_SOCKET_IFNAME unset or wrong",
        "the peer process is not listening any more: it failed or exited earlier"},
       "set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on (`fabcheck node` "
       "recommends one); open the ports between the nodes; check the peer's log for an earlier "
       "error"},
      {"connect_timeout",
       T::kRoot,
       "timed out waiting for a peer",
       "NCCL waited for a connection from a peer that never came",
       {"the peer failed or hangs before this step (look at its log)",
        "packets are dropped on the path (firewall, wrong interface)",
        "ranks started with different world sizes or communicator ids"},
       "find the peer's first error; check NCCL_SOCKET_IFNAME and the firewall between the nodes"},
      {"bootstrap_failed",
       T::kRoot,
       "bootstrap failed",
       "the ranks could not exchange their addresses at communicator creation (NCCL's bootstrap, "
       "or the framework's store that carries the ncclUniqueId)",
       {"a rank cannot reach rank 0's bootstrap or the store (firewall, wrong MASTER_ADDR or "
        "NCCL_SOCKET_IFNAME)",
        "a rank started late or died before joining (the store timed out)",
        "ranks disagree on the world size or the communicator they create"},
       "check MASTER_ADDR/MASTER_PORT and that every node reaches it; set NCCL_SOCKET_IFNAME; "
       "start all ranks together and look for the rank that never joined"},
      {"no_socket_interface",
       T::kRoot,
       "no usable network interface",
       "NCCL found no IP interface to bootstrap on",
       {"NCCL_SOCKET_IFNAME names an interface that does not exist or is down on this node",
        "the container or network namespace has only lo",
        "an IPv4/IPv6 family mismatch (NCCL_SOCKET_FAMILY)"},
       "run `fabcheck node` and set NCCL_SOCKET_IFNAME to the interface it recommends (check it "
       "exists on every node: `ip -br addr`)"},
      {"plugin_init_failed",
       T::kRoot,
       "network plugin failed",
       "the network plugin (aws-ofi-nccl, NET/IBext, ...) failed to load or to initialise: NCCL "
       "falls back to its internal IB or socket transport, or fails",
       {"a missing dependency of the plugin (libfabric, libibverbs) or an ABI mismatch",
        "the provider it asked for is absent (FI_PROVIDER, no EFA device)",
        "NCCL_NET_PLUGIN/LD_LIBRARY_PATH pointing at a plugin built for another NCCL"},
       "check `ldd libnccl-net.so`, NCCL_NET_PLUGIN, LD_LIBRARY_PATH and FI_PROVIDER; install the "
       "plugin version that matches this NCCL"},
      // --- a peer or the link went away ---
      {"peer_reset",
       T::kPeerLoss,
       "connection reset by peer",
       "the peer's end of a TCP connection was reset",
       {"the peer process died (crash, OOM kill, watchdog abort) and its kernel reset the socket",
        "the peer host or its link went away", "a firewall or NAT reset an idle connection"},
       "find the first error on the peer (the address in the message); check dmesg on that host "
       "for OOM kills and link flaps"},
      {"peer_closed",
       T::kPeerLoss,
       "connection closed by peer",
       "the peer closed a TCP connection NCCL still needed",
       {"the peer process exited or crashed first (its log holds the cause)",
        "a rank aborted its communicator after its own error or timeout",
        "the peer host rebooted or lost its link"},
       "find the first error on the peer (the host in the message) and fix that; this rank only "
       "saw it leave"},
      {"broken_pipe",
       T::kPeerLoss,
       "broken pipe",
       "NCCL wrote to a TCP connection whose other end was already gone",
       {"the peer process died or aborted first", "the peer host or its link went away"},
       "find the first error on the peer (the address in the message)"},
      {"work_request_flushed",
       T::kPeerLoss,
       "RDMA work request flushed",
       "IBV_WC_WR_FLUSH_ERR (5): the queue pair was already in error, so pending requests were "
       "flushed",
       {"an earlier completion error on the same QP (the real cause)",
        "the peer closed its QP (it failed or exited)"},
       "find the first completion error in the logs of all ranks"},
      {"rnr_retry_exceeded",
       T::kPeerLoss,
       "IB receiver not ready",
       "IBV_WC_RNR_RETRY_EXC_ERR (13): the receiver had no buffer posted in time",
       {"the peer process stopped progressing (it failed or hangs)",
        "a net plugin and NCCL disagree on the protocol (version mismatch)"},
       "look for the first error on the peer; run one NCCL/plugin version everywhere"},
      // --- summaries of an error told elsewhere ---
      {"watchdog_timeout",
       T::kWrapper,
       "collective timed out",
       "PyTorch's ProcessGroupNCCL watchdog saw a collective run past its timeout and aborts the "
       "process",
       {"another rank failed or stopped before reaching this collective (look for its first "
        "error, or the rank that is missing here)",
        "ranks issue collectives in different orders or counts (a code path taken on some ranks "
        "only)",
        "the network is so slow or lossy that the collective cannot finish in time (a socket "
        "fallback, a degraded link)"},
       "find the rank whose log has an earlier error or that never reached this SeqNum; rerun "
       "with NCCL_DEBUG=INFO and TORCH_NCCL_TRACE_BUFFER_SIZE set to see the stuck collective; "
       "raise the timeout only when the work is legitimately slow"},
      {"nccl_remote_error",
       T::kWrapper,
       "remote process exited or network error",
       "NCCL returned ncclRemoteError: a peer went away or the network failed",
       {"a peer process died (its log holds the cause)",
        "the network between the nodes failed (see the `Last error` or NET lines)"},
       "find the first error in the logs of the other ranks; check the `Last error` text"},
      {"nccl_system_error",
       T::kWrapper,
       "NCCL system error",
       "NCCL returned ncclSystemError: a system call or library call (socket, verbs, shm) failed",
       {"a socket call failed (see the NET or socket warnings above it)",
        "a verbs call failed (RDMA device, memlock)",
        "/dev/shm too small in a container (--shm-size)"},
       "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see the failing call; in "
       "containers give --shm-size=1g or more and --ulimit memlock=-1"},
      {"nccl_internal_error",
       T::kWrapper,
       "NCCL internal error",
       "NCCL returned ncclInternalError (often a socket or proxy failure reported as internal by "
       "older NCCL)",
       {"see the `Last error` text and the WARN lines above it",
        "a peer died during communicator setup"},
       "read the `Last error` line; rerun with NCCL_DEBUG=INFO on every rank"},
      {"nccl_invalid_usage",
       T::kWrapper,
       "NCCL invalid usage",
       "NCCL returned ncclInvalidUsage/ncclInvalidArgument: the application called it wrongly",
       {"two ranks on one GPU, or mismatched counts/types across ranks",
        "a communicator used after an error or from the wrong stream"},
       "read the WARN line that precedes it; check the rank-to-GPU mapping"},
      {"proxy_failed",
       T::kWrapper,
       "NCCL proxy operation failed",
       "NCCL's proxy thread failed an operation on behalf of a rank (connect, setup, close)",
       {"the operation's own error above it (socket, verbs, CUDA)",
        "a local rank died and its proxy connection closed"},
       "look at the error just before it on the same host"},
      {"nccl_warning",
       T::kWrapper,
       "NCCL warning",
       "an NCCL WARN line fabcheck does not classify",
       {"read the surrounding lines"},
       "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and keep the output of every rank"},
      // --- conditions ---
      {"libibverbs_missing",
       T::kCondition,
       "libibverbs not found",
       "NCCL could not load libibverbs, so its IB transport is off and it uses TCP sockets",
       {"rdma-core (libibverbs1, ibverbs-providers) is not installed in the image",
        "LD_LIBRARY_PATH hides it in a container"},
       "install rdma-core (libibverbs1, ibverbs-providers) in the image or on the node; check "
       "`ldconfig -p | grep ibverbs`"},
  };
  return kinds;
}

const FailureKind& failure_kind(const std::string& kind) {
  const auto& all = failure_kinds();
  for (const auto& k : all)
    if (kind == k.kind) return k;
  for (const auto& k : all)
    if (std::string("nccl_warning") == k.kind) return k;
  return all.back();
}

const char* to_string(FailureTier tier) {
  switch (tier) {
    case FailureTier::kRoot:
      return "root";
    case FailureTier::kPeerLoss:
      return "peer_loss";
    case FailureTier::kWrapper:
      return "wrapper";
    case FailureTier::kCondition:
      return "condition";
  }
  return "wrapper";
}

}  // namespace fabkit::nccl_log
