#include "trainer/tokenizer/sentencepiece_shim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int fail(const std::string& msg, char* err, size_t err_len) {
  if (err && err_len) {
    std::strncpy(err, msg.c_str(), err_len - 1);
    err[err_len - 1] = '\0';
  }
  return 1;
}

sentencepiece::SentencePieceProcessor* proc(void* sp) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(sp);
}

}  // namespace

extern "C" {

void* fabkit_sp_load_proto(const char* model_bytes, size_t model_len, char* err, size_t err_len) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  auto st = sp->LoadFromSerializedProto(absl::string_view(model_bytes, model_len));
  if (!st.ok()) {
    fail(st.ToString(), err, err_len);
    delete sp;
    return nullptr;
  }
  return sp;
}

void fabkit_sp_free(void* sp) { delete proc(sp); }

int fabkit_sp_encode(void* sp, const char* text, size_t text_len, int** ids, size_t* n, char* err,
                     size_t err_len) {
  std::vector<int> v;
  auto st = proc(sp)->Encode(std::string(text, text_len), &v);
  if (!st.ok()) return fail(st.ToString(), err, err_len);
  *n = v.size();
  *ids = static_cast<int*>(std::malloc(sizeof(int) * (v.size() + 1)));
  if (!*ids) return fail("out of memory", err, err_len);
  if (!v.empty()) std::memcpy(*ids, v.data(), sizeof(int) * v.size());
  return 0;
}

int fabkit_sp_decode(void* sp, const int* ids, size_t n, char** out, size_t* out_len, char* err,
                     size_t err_len) {
  std::string s;
  auto st = proc(sp)->Decode(std::vector<int>(ids, ids + n), &s);
  if (!st.ok()) return fail(st.ToString(), err, err_len);
  *out = static_cast<char*>(std::malloc(s.size() + 1));
  if (!*out) return fail("out of memory", err, err_len);
  std::memcpy(*out, s.data(), s.size());
  *out_len = s.size();
  return 0;
}

void fabkit_sp_release(void* p) { std::free(p); }

void fabkit_sp_info(void* sp, int* vocab, int* bos, int* eos, int* pad, int* unk) {
  *vocab = proc(sp)->GetPieceSize();
  *bos = proc(sp)->bos_id();
  *eos = proc(sp)->eos_id();
  *pad = proc(sp)->pad_id();
  *unk = proc(sp)->unk_id();
}

int fabkit_sp_exact_piece(void* sp, const char* piece) {
  int id = proc(sp)->PieceToId(piece);
  if (id < 0 || proc(sp)->IsUnknown(id) || proc(sp)->IdToPiece(id) != piece) return -1;
  return id;
}

int fabkit_sp_train(const char* args, char* err, size_t err_len) {
  auto st = sentencepiece::SentencePieceTrainer::Train(args);
  if (!st.ok()) return fail(st.ToString(), err, err_len);
  return 0;
}

}
