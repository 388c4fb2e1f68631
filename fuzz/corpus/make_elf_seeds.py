#!/usr/bin/env python3
"""Writes fuzz/corpus/fuzz_nccl_net/elf64_dyn: a 64-bit little-endian ET_DYN header whose section
table holds a null section and a .dynsym pointing at a one-byte string table (itself)."""
import pathlib
import struct

ehdr = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
ehdr += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, 64, 0, 64, 56, 0, 64, 2, 0)
null = bytes(64)
# sh_name, sh_type=SHT_DYNSYM, flags, addr, offset, size, link=1, info, align, entsize
dynsym = struct.pack("<IIQQQQIIQQ", 0, 11, 0, 0, 0, 24, 1, 0, 8, 24)
out = pathlib.Path(__file__).parent / "fuzz_nccl_net" / "elf64_dyn"
out.parent.mkdir(exist_ok=True)
out.write_bytes(ehdr + null + dynsym)
