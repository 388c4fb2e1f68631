// The pair report: `fabcheck pair`'s facts and verdict as a Report{kind "pair"}
// (docs/json/pair.md). The JSON of one agent, link or transport is shared by the 2-host "pair"
// section and the N-host "pair_group" section, so each reads the same in both.
#pragma once

#include "common/json.h"
#include "common/report.h"
#include "fabric/pair/group_controller.h"
#include "fabric/pair/pair_facts.h"
#include "fabric/pair/verdict.h"

namespace fabkit::pair {

// A controller step: null host, code and error where empty.
Json to_json(const pair::StepRecord& s);
Json to_json(const pair::Candidate& c);
Json to_json(const pair::AgentFacts& a);
Json to_json(const pair::LinkResult& l, bool chosen);
Json to_json(const pair::PortCheck& p);
// r: the verdict's ranking entry (peak busbw, link fraction), or nullptr where there is none.
Json to_json(const pair::TransportResult& t, const pair::RankedTransport* r);

// Report{kind "pair"}: the verdict's findings (pair::pair_findings) and the "pair" section.
Report build_pair_report(const pair::PairFacts& f);
// Report{kind "pair"} of 3 or more hosts: pair::judge_group's findings and the "pair_group"
// section.
Report build_group_report(const pair::GroupFacts& f);

}  // namespace fabkit::pair
