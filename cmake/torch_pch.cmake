# FABKIT_TORCH_PCH: LibTorch's headers parsed once for the whole build. <torch/torch.h> is 70-80%
# of the compile time of every file that includes it (17 of 22 s at -O2 -g1 for train_loop.cc);
# with one precompiled header those files compile in ~60% of the time. Off by default: ccache does
# not cache a file built with a precompiled header unless told to be sloppy about it, and the
# everyday builds here live on ccache. scripts/gpu-check, which builds once from nothing on a GPU
# machine, turns it on.
#
# One header for all (REUSE_FROM): a precompiled <torch/torch.h> is ~700 MB, one per target would
# be gigabytes. GCC uses it only where the flags match the ones it was made with (-Winvalid-pch
# says where it did not); every target below compiles with the same options and the definitions
# they add are not read by LibTorch's headers.
option(FABKIT_TORCH_PCH "Precompile <torch/torch.h> once and use it in every target that includes it" OFF)

# The targets with files that include LibTorch's headers (a target that does not exist in this
# configuration is skipped).
set(FABKIT_TORCH_PCH_TARGETS
  fabkit_trainer_io fabkit_trainer_model fabkit_trainer_data fabkit_trainer_optim_tensor
  fabkit_trainer_comm fabkit_trainer_parallel fabkit_trainer_eval fabkit_trainer_app
  trainer_dist_torch_test trainer_model_test trainer_model_sharded_test trainer_data_test
  trainer_ref_test swiglu_bench fabkit_serve_engine serve_engine_test serve_engine_hf_test decode_bench)

if(FABKIT_TORCH_PCH AND FABKIT_HAVE_TORCH)
  add_library(fabkit_torch_pch OBJECT "${CMAKE_SOURCE_DIR}/cmake/torch_pch.cc")
  target_link_libraries(fabkit_torch_pch PRIVATE ${TORCH_LIBRARIES})
  target_precompile_headers(fabkit_torch_pch PRIVATE <torch/torch.h>)
  target_compile_options(fabkit_torch_pch PRIVATE -Winvalid-pch)
  foreach(t ${FABKIT_TORCH_PCH_TARGETS})
    if(TARGET ${t})
      target_precompile_headers(${t} REUSE_FROM fabkit_torch_pch)
      target_compile_options(${t} PRIVATE -Winvalid-pch)
    endif()
  endforeach()
endif()
