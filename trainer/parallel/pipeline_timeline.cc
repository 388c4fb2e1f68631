// The timeline of one step: when each computation of the lists can run, and its text and HTML
// renderings (fabtrain --dry-run).
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "common/errors.h"
#include "trainer/parallel/pipeline_schedule.h"

namespace fabkit::trainer {
namespace {

double cost_of(const PipeCosts& c, PipeOp op) {
  switch (op) {
    case PipeOp::kForward:
      return c.forward;
    case PipeOp::kBackward:
      return c.backward_input + c.backward_weight;
    case PipeOp::kBackwardInput:
      return c.backward_input;
    case PipeOp::kBackwardWeight:
      return c.backward_weight;
    default:
      return 0;
  }
}

// The label of a computation: F/B/W and the micro-batch; chunk 1 of two in lower case (as
// Megatron's Figure 4 tells the chunks apart by shade), ".c" for every chunk past two.
std::string label(const PipeAction& a, int chunks) {
  char letter = a.op == PipeOp::kForward ? 'F' : a.op == PipeOp::kBackwardWeight ? 'W' : 'B';
  std::string s;
  if (chunks == 2 && a.chunk == 1) letter = static_cast<char>(letter - 'A' + 'a');
  s = std::string(1, letter) + std::to_string(a.micro_batch);
  if (chunks > 2) s += "." + std::to_string(a.chunk);
  return s;
}

// One column per `unit`: the shortest computation, so every cost of the usual models (F = 1,
// B = 2; or F = B = W = 1) is a whole number of columns.
double column_unit(const PipeTimeline& t) {
  double unit = 0;
  for (const auto& row : t.per_rank) {
    for (const auto& slot : row) {
      const double d = slot.end - slot.start;
      if (d > 0 && (unit == 0 || d < unit)) unit = d;
    }
  }
  return unit;
}

int column(double time, double unit) { return static_cast<int>(std::lround(time / unit)); }

// Per rank, per column: the slot running there, or -1.
std::vector<std::vector<int>> grid(const PipeTimeline& t, double unit, int columns) {
  std::vector<std::vector<int>> g(t.per_rank.size(), std::vector<int>(columns, -1));
  for (size_t r = 0; r < t.per_rank.size(); ++r) {
    for (size_t i = 0; i < t.per_rank[r].size(); ++i) {
      const PipeSlot& s = t.per_rank[r][i];
      for (int c = column(s.start, unit); c < column(s.end, unit) && c < columns; ++c) {
        g[r][c] = static_cast<int>(i);
      }
    }
  }
  return g;
}

}  // namespace

PipeTimeline simulate_timeline(const std::vector<std::vector<PipeAction>>& per_rank,
                               const PipeShape& s, const PipeCosts& costs) {
  const int p = s.ranks, last_stage = s.virtual_stages() - 1;
  FABKIT_ENFORCE(static_cast<int>(per_rank.size()) == p, "one list per rank");
  // When each (kind, virtual stage, micro-batch) ended: kind 0 forward, 1 the input gradient
  // (a whole backward or its B), what the neighbouring virtual stages wait on.
  std::map<std::tuple<int, int, int>, double> ended;
  PipeTimeline t;
  t.per_rank.resize(static_cast<size_t>(p));
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<double> free_at(static_cast<size_t>(p), 0);
  double busy = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      const auto& list = per_rank[r];
      while (next[r] < list.size()) {
        const PipeAction& a = list[next[r]];
        if (!is_compute(a.op)) {  // transfers take no time; their data dependency is below
          ++next[r];
          continue;
        }
        const int g = a.chunk * p + r;
        double ready = free_at[r];
        std::tuple<int, int, int> needs{-1, 0, 0};
        if (a.op == PipeOp::kForward && g > 0) needs = {0, g - 1, a.micro_batch};
        if ((a.op == PipeOp::kBackward || a.op == PipeOp::kBackwardInput) && g < last_stage) {
          needs = {1, g + 1, a.micro_batch};
        }
        if (std::get<0>(needs) >= 0) {
          auto it = ended.find(needs);
          if (it == ended.end()) break;  // the sender has not computed it yet
          ready = std::max(ready, it->second);
        }
        const double end = ready + cost_of(costs, a.op);
        t.per_rank[r].push_back(PipeSlot{a, ready, end});
        busy += end - ready;
        free_at[r] = end;
        if (a.op == PipeOp::kForward) ended[{0, g, a.micro_batch}] = end;
        if (a.op == PipeOp::kBackward || a.op == PipeOp::kBackwardInput) {
          ended[{1, g, a.micro_batch}] = end;
        }
        ++next[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < p; ++r) {
    FABKIT_ENFORCE(next[r] == per_rank[r].size(),
                   "pipeline timeline: rank " + std::to_string(r) + " waits forever at " +
                       to_string(per_rank[r][next[r]]) + " (validate the lists first)");
    t.makespan = std::max(t.makespan, free_at[r]);
  }
  t.bubble = t.makespan > 0 ? 1.0 - busy / (p * t.makespan) : 0.0;
  return t;
}

std::string render_timeline_text(const PipeTimeline& t, const PipeShape& s) {
  const double unit = column_unit(t);
  if (unit == 0) return "";
  const int columns = column(t.makespan, unit);
  size_t width = 1;
  for (const auto& row : t.per_rank) {
    for (const auto& slot : row) width = std::max(width, label(slot.action, s.chunks).size());
  }
  const auto g = grid(t, unit, columns);
  std::ostringstream out;
  for (size_t r = 0; r < g.size(); ++r) {
    std::string line = "rank " + std::to_string(r) + " |";
    for (int c = 0; c < columns; ++c) {
      std::string cell = g[r][c] < 0 ? "." : label(t.per_rank[r][g[r][c]].action, s.chunks);
      cell.resize(width, ' ');
      line += " " + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  return out.str();
}

std::string render_timeline_html(const PipeTimeline& t, const PipeShape& s,
                                 const std::string& title) {
  auto escape = [](const std::string& in) {
    std::string o;
    for (char ch : in) {
      if (ch == '<') {
        o += "&lt;";
      } else if (ch == '>') {
        o += "&gt;";
      } else if (ch == '&') {
        o += "&amp;";
      } else if (ch == '"') {
        o += "&quot;";
      } else {
        o += ch;
      }
    }
    return o;
  };
  const double unit = column_unit(t);
  const int columns = unit == 0 ? 0 : column(t.makespan, unit);
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << escape(title)
      << "</title>\n<style>\n"
      << "body{font-family:sans-serif}table{border-collapse:collapse}"
      << "td{border:1px solid #ccc;min-width:2.2em;height:1.6em;text-align:center;"
      << "font-size:12px;padding:0}th{padding:0 .5em;text-align:right}\n"
      // Forward blue, input gradient green, weight gradient orange, whole backward teal; the
      // later chunks in lighter shades of the same colour.
      << ".F0{background:#4a78c2;color:#fff}.F1{background:#a9c2ea}"
      << ".B0{background:#3b9a5a;color:#fff}.B1{background:#a6dcb6}"
      << ".X0{background:#2a8c8c;color:#fff}.X1{background:#9fd6d6}"
      << ".W0{background:#e08a2c;color:#fff}.W1{background:#f3c999}"
      << ".idle{background:#fff}\n</style></head><body>\n<h1>" << escape(title) << "</h1>\n"
      << "<p>" << s.ranks << " ranks, " << s.micro_batches << " micro-batches, " << s.chunks
      << " chunk" << (s.chunks == 1 ? "" : "s") << " per rank; makespan " << t.makespan
      << ", bubble " << std::lround(t.bubble * 1000) / 10.0 << "%; one column = " << unit
      << " time units</p>\n<table>\n";
  const auto g = grid(t, unit == 0 ? 1 : unit, columns);
  for (size_t r = 0; r < g.size(); ++r) {
    out << "<tr><th>rank " << r << "</th>";
    for (int c = 0; c < columns;) {
      if (g[r][c] < 0) {
        out << "<td class=\"idle\"></td>";
        ++c;
        continue;
      }
      int span = 1;
      while (c + span < columns && g[r][c + span] == g[r][c]) ++span;
      const PipeAction& a = t.per_rank[r][g[r][c]].action;
      const char kind = a.op == PipeOp::kForward          ? 'F'
                        : a.op == PipeOp::kBackwardInput  ? 'B'
                        : a.op == PipeOp::kBackwardWeight ? 'W'
                                                          : 'X';
      out << "<td class=\"" << kind << (a.chunk == 0 ? 0 : 1) << "\" colspan=\"" << span
          << "\" title=\"" << escape(to_string(a)) << "\">" << escape(label(a, s.chunks))
          << "</td>";
      c += span;
    }
    out << "</tr>\n";
  }
  out << "</table>\n</body></html>\n";
  return out.str();
}

}  // namespace fabkit::trainer
