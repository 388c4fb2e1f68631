#include "trainer/tokenizer/bpe_model.h"

#include <queue>

namespace fabkit::trainer {
namespace {

struct Symbol {
  int32_t id;
  int prev, next;  // neighbours in the linked list, -1 at the ends
  bool removed;
};

struct Candidate {
  uint32_t rank;
  int pos;
  int32_t new_id;
  // std::priority_queue pops the largest: make the lowest rank, then the leftmost, the largest.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

size_t utf8_len(unsigned char b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

}  // namespace

bool BpeModel::add_merge(const std::string& left, const std::string& right) {
  auto a = vocab.find(left), b = vocab.find(right), ab = vocab.find(left + right);
  if (a == vocab.end() || b == vocab.end() || ab == vocab.end()) return false;
  merges_[key(a->second, b->second)] = Merge{next_rank_++, ab->second};
  return true;
}

bool BpeModel::tokenize(std::string_view word, std::vector<int64_t>& out, std::string* missing) const {
  if (word.empty()) return true;
  if (ignore_merges) {
    auto it = vocab.find(std::string(word));
    if (it != vocab.end()) {
      out.push_back(it->second);
      return true;
    }
  }
  // Initial symbols: one per character, unknown ones as unk (fused when fuse_unk).
  std::vector<Symbol> sym;
  sym.reserve(word.size());
  bool last_was_unk = false;
  for (size_t i = 0; i < word.size();) {
    size_t n = utf8_len(static_cast<unsigned char>(word[i]));
    auto it = vocab.find(std::string(word.substr(i, n)));
    if (it != vocab.end()) {
      sym.push_back({it->second, 0, 0, false});
      last_was_unk = false;
    } else if (unk_id) {
      if (!(fuse_unk && last_was_unk)) sym.push_back({*unk_id, 0, 0, false});
      last_was_unk = true;
    } else {
      if (missing) *missing = std::string(word.substr(i, n));
      return false;
    }
    i += n;
  }
  int n = static_cast<int>(sym.size());
  for (int i = 0; i < n; ++i) {
    sym[i].prev = i - 1;
    sym[i].next = i + 1 < n ? i + 1 : -1;
  }
  std::priority_queue<Candidate> queue;
  auto consider = [&](int pos, int next) {
    auto m = merges_.find(key(sym[pos].id, sym[next].id));
    if (m != merges_.end()) queue.push({m->second.rank, pos, m->second.new_id});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& cur = sym[top.pos];
    if (cur.removed || cur.next < 0) continue;
    // A stale entry: one of the two symbols has changed since it was queued.
    auto m = merges_.find(key(cur.id, sym[cur.next].id));
    if (m == merges_.end() || m->second.new_id != top.new_id) continue;
    int right = cur.next;
    cur.id = top.new_id;
    cur.next = sym[right].next;
    sym[right].removed = true;
    if (cur.next >= 0) sym[cur.next].prev = top.pos;
    if (cur.prev >= 0) consider(cur.prev, top.pos);
    if (cur.next >= 0) consider(top.pos, cur.next);
  }
  for (const Symbol& s : sym)
    if (!s.removed) out.push_back(s.id);
  return true;
}

}  // namespace fabkit::trainer
