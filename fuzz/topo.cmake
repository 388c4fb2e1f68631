# Topology XML parser (topo/ owns it): NCCL/RCCL topology, NCCL graph and hwloc exports through
# the same entry point NCCL_TOPO_FILE and `fabcheck topo` use.
fabkit_add_fuzzer(fuzz_topo_xml topo/topo_xml_fuzz.cc fabkit_topo)
