# tokenizer.json reader and byte-level BPE (trainer/tokenizer): compiled from source so the
# fuzzer's coverage reaches them; plain C++, no LibTorch.
pkg_check_modules(FUZZ_PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
fabkit_add_fuzzer(tokenizer_json_fuzz tokenizer_json_fuzz.cc fabkit_common nlohmann_json::nlohmann_json
                  PkgConfig::FUZZ_PCRE2)
foreach(src byte_level pcre2_regex bpe_model added_tokens hf_tokenizer_json hf_tokenizer)
  target_sources(tokenizer_json_fuzz PRIVATE ${CMAKE_SOURCE_DIR}/trainer/tokenizer/${src}.cc)
endforeach()
