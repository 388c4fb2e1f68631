# Kernel log and PCIe sysfs parsers (probes/kernel_log, probes/pcie): a capture's dev/kmsg (kmsg
# records or dmesg text), --since values, aer_dev_* files and pci.ids are all input from outside.
# Seed xid_name_not_utf8 is the input that once crashed the JSON dump (a byte that is not UTF-8).
fabkit_add_fuzzer(fuzz_kernel_log kernel_log_fuzz.cc fabkit_probe_kernel_log fabkit_probe_pcie)
