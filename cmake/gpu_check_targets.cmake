# The build that scripts/gpu-check makes on a GPU machine: the target `gpu-check-build`, only what
# its steps run. The device time there is scarce (the whole check has 8 minutes on 16 cores) and a
# full build spends a third of its work on test binaries and benches that hold no GPU test.
#
# The list is checked, not trusted: BUILD/gpu-check-targets.txt names every file these targets make,
# and tests/integration/gpu_check (the integration_gpu_check test) fails when a test that gpu-check
# selects (scripts/gpu_check/test_runner.py's GPU_TESTS) runs a binary of this build that is not
# in it. A test binary that gains a GPU test goes here.
set(FABKIT_GPU_CHECK_TARGETS
  # what the steps run: fabcheck node (timing, --active), the NCCL pair, the fabtrain bench
  fabcheck fabcheck-nccl-runner fabcheck-gpu-bench fabtrain fabkit-allreduce-rank
  # the link check's canary
  filesystem_binding_canary
  # test binaries that hold GPU, NVML, CUDA or NCCL tests
  gpu_test gpu_active_test net_test topo_test allreduce_test pair_test reports_test profile_test
  slurm_test pcie_test ib_qos_test rdma_test roce_qos_test
  nccl_log_test nccl_log_corpus_test nccl_log_prefix_test nccl_log_source_lines_test
  trainer_dist_test trainer_dist_torch_test fabtrain_integration_test serve_engine_test)

add_custom_target(gpu-check-build)
set(gpu_check_files "")
foreach(t ${FABKIT_GPU_CHECK_TARGETS})
  # A target this configuration does not make (no CUDA, no torch, no tests) is left out here;
  # the test above still finds a GPU test whose binary is missing from the list.
  if(TARGET ${t})
    add_dependencies(gpu-check-build ${t})
    string(APPEND gpu_check_files "$<TARGET_FILE:${t}>\n")
  endif()
endforeach()
file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/gpu-check-targets.txt" CONTENT "${gpu_check_files}")
