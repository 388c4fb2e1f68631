# The NCCL net plugin probe (probes/nccl_net): the plugin's ELF file is read by hand, as root, from
# whatever a directory on the library path holds. Seed elf64_dyn is a shared object's ELF header
# pointing at a two-entry section table (make_elf_seeds.py).
fabkit_add_fuzzer(fuzz_nccl_net nccl_net_fuzz.cc fabkit_probe_nccl_net)
