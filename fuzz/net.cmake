# NCCL list grammar (NCCL_SOCKET_IFNAME / NCCL_IB_HCA) and the NCCL log parser: both read text
# users paste from anywhere.
fabkit_add_fuzzer(fuzz_nccl_list ${CMAKE_CURRENT_SOURCE_DIR}/net/fuzz_nccl_list.cc fabkit_probe_net)
fabkit_add_fuzzer(fuzz_nccl_log ${CMAKE_CURRENT_SOURCE_DIR}/net/fuzz_nccl_log.cc fabkit_nccl_log)
