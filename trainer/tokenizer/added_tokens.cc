#include "trainer/tokenizer/added_tokens.h"

#include <algorithm>
#include <optional>

#include "trainer/tokenizer/byte_level.h"

namespace fabkit::trainer {
namespace {

// Start of the run of Unicode whitespace that ends at `end` (HF: regex \s*$ on the text before).
size_t space_run_start(std::string_view s, size_t begin, size_t end) {
  size_t start = end;
  size_t i = begin;
  while (i < end) {
    size_t at = i;
    auto cp = next_code_point(s, i);
    if (!cp) {  // the caller gives valid UTF-8
      ++i;
      start = end;
      continue;
    }
    if (!is_unicode_space(*cp)) start = end;
    else if (start == end) start = at;
  }
  return start;
}

// End of the run of Unicode whitespace that starts at `from` (HF: regex ^\s* on the text after).
size_t space_run_end(std::string_view s, size_t from) {
  size_t i = from;
  while (i < s.size()) {
    size_t at = i;
    auto cp = next_code_point(s, i);
    if (!cp || !is_unicode_space(*cp)) return at;
  }
  return s.size();
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  tokens_.erase(std::remove_if(tokens_.begin(), tokens_.end(), [](const AddedToken& t) { return t.content.empty(); }),
                tokens_.end());
  for (size_t i = 0; i < tokens_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  for (auto& [b, list] : by_first_byte_)
    std::stable_sort(list.begin(), list.end(),
                     [&](size_t x, size_t y) { return tokens_[x].content.size() > tokens_[y].content.size(); });
}

std::vector<Piece> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Piece> out;
  size_t done = 0;  // end of the last emitted piece
  size_t i = 0;
  while (i < text.size()) {
    const AddedToken* hit = nullptr;
    auto it = by_first_byte_.find(static_cast<unsigned char>(text[i]));
    if (it != by_first_byte_.end())
      for (size_t k : it->second)
        if (text.compare(i, tokens_[k].content.size(), tokens_[k].content) == 0) {
          hit = &tokens_[k];
          break;
        }
    if (!hit) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + hit->content.size();
    if (hit->lstrip) start = std::max(space_run_start(text, done, start), done);
    if (hit->rstrip) stop = space_run_end(text, stop);
    if (done < start) out.push_back({text.substr(done, start - done), -1});
    out.push_back({text.substr(start, stop - start), hit->id});
    done = i = stop;
  }
  if (done < text.size()) out.push_back({text.substr(done), -1});
  return out;
}

}  // namespace fabkit::trainer
