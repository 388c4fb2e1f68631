# IB QoS MAD decoders (probes/ib_qos): SMP and SA replies from the fabric, and the
# --ib-qos-replay fixture reader.
fabkit_add_fuzzer(fuzz_ib_qos_mad ib_qos/ib_qos_mad_fuzz.cc fabkit_probe_ib_qos)
