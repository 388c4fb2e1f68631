# cluster.json reader (profile/profile_reader.cc); seeds: fuzz/corpus/profile_reader/
fabkit_add_fuzzer(profile_reader ${CMAKE_CURRENT_SOURCE_DIR}/profile/profile_reader_fuzz.cc fabkit_profile)
