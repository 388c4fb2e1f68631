// ChatML (<|im_start|>role\ncontent<|im_end|>\n per message), with labels only on what the
// assistant says: its content and the <|im_end|> closing it (the model must learn to stop);
// role headers, the newline after <|im_end|>, and every other role's turns are -100.
#pragma once

#include <string>

#include "common/json.h"
#include "trainer/data/dataset.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {

// messages: [{"role": "...", "content": "..."}...]. BOS first when the tokenizer has one.
// <|im_start|>/<|im_end|> become single ids when the vocabulary has them, else their text is
// tokenized. UsageError naming `where` for a malformed messages value.
Sequence render_chatml(const Json& messages, const Tokenizer& tok, const std::string& where);

}  // namespace fabkit::trainer
