# IB QoS MAD decoders (probes/ib_qos): SMP and SA replies from the fabric, and the
# --ib-qos-replay fixture reader. Seed no-path-record.json makes the replay answer ERR_NO_RECORDS,
# whose empty record the codec memcpy'd from null (UBSan; tests/unit/ib_qos/mad_codec_ubsan_test.cc).
fabkit_add_fuzzer(fuzz_ib_qos_mad ib_qos/ib_qos_mad_fuzz.cc fabkit_probe_ib_qos)
