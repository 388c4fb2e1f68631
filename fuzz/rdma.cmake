# RDMA parsers (rdma helper): peer endpoint frames (RcEndpointInfo JSON from the pair channel),
# the fake's ibv_devinfo fixture reader, and the sysfs value parsers.
fabkit_add_fuzzer(fuzz_rdma rdma_fuzz.cc fabkit_fabric_rdma fabkit_verbs_fake fabkit_probe_rdma)
