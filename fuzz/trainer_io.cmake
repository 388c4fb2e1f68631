# safetensors header parser (trainer/io): compiled from source so the fuzzer builds without LibTorch.
fabkit_add_fuzzer(safetensors_header_fuzz trainer_io_fuzz.cc fabkit_common)
target_sources(safetensors_header_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/trainer/io/safetensors_header.cc)
