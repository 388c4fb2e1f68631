// The JSON of the pair facts (docs/json/pair.md), shared by the 2-host "pair" section and the
// N-host "pair_group" section so an agent, a link or a transport reads the same in both.
#pragma once

#include "common/json.h"
#include "fabric/pair/pair_facts.h"
#include "fabric/pair/verdict.h"

namespace fabkit::pair {

Json to_json(const Candidate& c);
Json to_json(const AgentFacts& a);
Json to_json(const LinkResult& l, bool chosen);
Json to_json(const PortCheck& p);
// r: the verdict's ranking entry (peak busbw, link fraction), or nullptr where there is none.
Json to_json(const TransportResult& t, const RankedTransport* r);

}  // namespace fabkit::pair
