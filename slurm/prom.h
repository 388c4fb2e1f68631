// Prometheus node_exporter textfile-collector output of a node report (`fabcheck node --prom
// FILE`): per RDMA port its state, physical state and rate, per interface running and speed, and
// the findings counted by severity and by code. Pure: report in, text out; the CLI writes it with
// common/atomic_file, since node_exporter may read the directory at any moment.
#pragma once

#include <string>

#include "common/report.h"

namespace fabkit::slurm {

// The exposition format (HELP/TYPE lines, gauges). unix_time_s: the check's time, a gauge so
// alerts can fire on a stale file.
std::string node_prom_text(const Report& r, double unix_time_s);

// A label value with \, " and newline escaped as the exposition format requires.
std::string prom_label_value(const std::string& s);

}  // namespace fabkit::slurm
