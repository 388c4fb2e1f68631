# RoCE QoS parsers (probes/roce_qos): what the kernel answers over DCB netlink and SIOCETHTOOL
# (a driver's bytes), and the --qos-replay fixture reader (a user's file). Seeds: the fixtures'
# answers as bytes (fuzz/corpus/make_qos_seeds.cc); name-not-utf8 is the input that crashed the
# JSON dump (a counter name that is not UTF-8; tests/unit/roce_qos/ethtool_names_test.cc);
# app-priority-35-cmd21 maps DSCP 0 to priority 35, which the judge shifted a PFC mask by (UBSan;
# tests/unit/roce_qos/roce_qos_judge_test.cc).
fabkit_add_fuzzer(fuzz_dcb_netlink roce_qos/dcb_netlink_fuzz.cc fabkit_probe_roce_qos)
fabkit_add_fuzzer(fuzz_ethtool_stats roce_qos/ethtool_stats_fuzz.cc fabkit_probe_roce_qos)
fabkit_add_fuzzer(fuzz_qos_replay roce_qos/qos_replay_fuzz.cc fabkit_probe_roce_qos)
