// Pieces of the kernel log findings' text that the judges of the probe's other files share
// (implemented in kernel_log_judge.cc). Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fabkit::probes {

struct KernelLogFacts;

// "at 1234.5 s after boot (2026-11-26T08:00:00Z)", "at an unknown time".
std::string kernel_log_when(const KernelLogFacts& facts, const std::optional<double>& s);
// "3 times, first at 12.0 s after boot (…Z), last at 40.0 s after boot (…Z)".
std::string kernel_log_span(const KernelLogFacts& facts, int count,
                            const std::optional<double>& first, const std::optional<double>& last);
// "a, b, c".
std::string kernel_log_joined(const std::vector<std::string>& parts);
// "the driver found ..." as the start of a sentence.
std::string kernel_log_capitalized(std::string s);
// Why a line about bus is not judged as this node's GPU or NVSwitch; "" when it is one.
std::string kernel_log_not_on_node(const KernelLogFacts& facts, const std::string& bus);

}  // namespace fabkit::probes
