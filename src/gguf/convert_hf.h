/*
 * convert_hf — a Hugging Face tokenizer.json (+ tokenizer_config.json) to a
 * vocabulary-only GGUF (no tensors), the tokenizer.* keys llama.cpp's
 * converter writes, so that a tokenizer can be checked (and used) without the
 * model it belongs to. Two kinds are read:
 *   - byte-level BPE (Llama 3, Qwen 3, GPT-2): tokenizer.ggml.model "gpt2",
 *     tokenizer.ggml.pre = the pre-tokenizer row whose published expression
 *     is exactly the Split pattern (an unknown expression is refused);
 *   - SentencePiece-style BPE on raw UTF-8 (Gemma 3: byte_fallback, the
 *     normalizer that turns ' ' into U+2581): tokenizer.ggml.model "gemma4",
 *     llama.cpp's name for that kind.
 * The JSON is read with Jansson; every error names the JSON path
 * (`model.merges[1234]`, `added_tokens[3].id`) and, for a syntax error, the
 * line and column. Full details and what is not reproduced: convert_hf.c.
 */
#ifndef SPRIG_CONVERT_HF_H
#define SPRIG_CONVERT_HF_H

#include "base/err.h"

struct sprig_gguf_writer;

/* Limits on hostile input (beyond SPRIG_TOKENIZER_MAX_VOCAB for ids). */
#define SPRIG_HF_MAX_JSON  ((size_t)1 << 30)   /* bytes in one JSON file */
#define SPRIG_HF_MAX_MERGES (1 << 24)

/* Parse tokenizer.json json[json_len] (and tokenizer_config.json cfg[cfg_len]
 * when cfg != NULL) and add the tokenizer.* keys to w. Names are used in
 * messages. Nothing is written to disk. */
sprig_status sprig_hf_tokenizer_to_gguf(const void *json, size_t json_len, const char *json_name,
                                        const void *cfg, size_t cfg_len, const char *cfg_name,
                                        struct sprig_gguf_writer *w, sprig_error *err);

/* TOKENIZER.json [+ CONFIG.json] -> OUT.gguf, written atomically (a temp file
 * beside OUT, renamed; nothing is left behind on error). config may be NULL. */
sprig_status sprig_convert_hf_tokenizer(const char *json_path, const char *config_path, const char *out_path,
                                        sprig_error *err);

#endif
