#include "cli/ofi_option.h"

#include <cctype>
#include <string>

namespace fabkit::cli {

void add_ofi_options(CLI::App* sub, pair::OfiRdmPlan* plan) {
  sub->add_option("--ofi-provider", plan->provider,
                  "The RDM test over libfabric with this provider (efa, tcp, ...; default: efa when "
                  "both hosts have EFA devices, else the test is skipped)")
      ->check([](const std::string& v) -> std::string {
        for (char c : v)
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
            return "'" + v + "' is not a libfabric provider name (letters, digits, '_', '-')";
        return v.empty() ? "give a provider name, e.g. efa or tcp" : "";
      });
  sub->add_option("--ofi-messages", plan->bw_messages,
                  "The libfabric RDM test: 1 MiB messages sent for the bandwidth figure (default "
                  "256)")
      ->check(CLI::Range(1, 1000000));
  sub->add_option("--ofi-lat-iters", plan->lat_iters,
                  "The libfabric RDM test: 8-byte ping-pongs for the latency figure (default 1000)")
      ->check(CLI::Range(1, 1000000));
}

}  // namespace fabkit::cli
