// C interface of libfabkit_sentencepiece_shim.so, the only code that links libsentencepiece.
//
// Why a dlopen'ed shim: Debian's libsentencepiece.so exports the protobuf-lite it bundles (~1600
// google::protobuf symbols). Linked into the same process as LibTorch (which needs the system
// libprotobuf.so.32) those symbols interpose libprotobuf's, and the process crashes in
// libprotobuf's static initialisers before main (measured: SIGSEGV in
// ReflectionOps::FindInitializationErrors via sentencepiece's MergeFromImpl). The shim is loaded
// with dlmopen(LM_ID_NEWLM) into its own link namespace, so each library keeps its own protobuf;
// only C types and memory the shim allocates and frees itself cross the boundary.
#pragma once

#include <stddef.h>

extern "C" {

// Every function returns 0 on success; on failure non-zero with a message in err[0..err_len).
// The model from its serialized bytes (the contents of tokenizer.model): the caller reads the file,
// so its size is checked and a FIFO or /dev/zero is refused before SentencePiece sees it.
void* fabkit_sp_load_proto(const char* model_bytes, size_t model_len, char* err, size_t err_len);
void fabkit_sp_free(void* sp);
// ids: malloc'ed, released with fabkit_sp_release.
int fabkit_sp_encode(void* sp, const char* text, size_t text_len, int** ids, size_t* n, char* err,
                     size_t err_len);
// out: malloc'ed, released with fabkit_sp_release.
int fabkit_sp_decode(void* sp, const int* ids, size_t n, char** out, size_t* out_len, char* err,
                     size_t err_len);
void fabkit_sp_release(void* p);
// vocab size, bos, eos, pad, unk (-1 when undefined).
void fabkit_sp_info(void* sp, int* vocab, int* bos, int* eos, int* pad, int* unk);
// The id of a piece that is exactly `piece` in the vocabulary (not unk), else -1.
int fabkit_sp_exact_piece(void* sp, const char* piece);
// SentencePieceTrainer::Train with a command-line style argument string.
int fabkit_sp_train(const char* args, char* err, size_t err_len);

}
