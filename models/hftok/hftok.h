/* hftok.h: the C ABI of rust/src/lib.rs (built by `make hftokenizers-rs`
 * into .deps/hftok/libhftok.a). Keep in step with lib.rs. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HFTOK_OK 0
#define HFTOK_ERR 1
#define HFTOK_ERR_TOO_SHORT 2
#define HFTOK_ERR_MAX_LEN 3

typedef struct hftok_handle hftok_handle;

typedef struct {
  const uint32_t *ids;
  const uint32_t *type_ids;
  const uint32_t *attention_mask;
  const size_t *offsets; /* 2 per token, or NULL */
  size_t len;
  void *owner;
} hftok_encoding;

hftok_handle *hftok_from_file(const char *path, char **err);
void hftok_free(hftok_handle *h);
void hftok_string_free(char *s);
int64_t hftok_pad_id(const hftok_handle *h);
size_t hftok_vocab_size(const hftok_handle *h);
size_t hftok_added_tokens(const hftok_handle *h, bool pair);
int32_t hftok_encode(const hftok_handle *h, const uint8_t *a, size_t a_len,
                     const uint8_t *b, size_t b_len, bool pair, size_t max_len,
                     uint8_t strategy, bool add_special, bool want_offsets,
                     hftok_encoding *out, char **err);
void hftok_encoding_free(hftok_encoding *e);
char *hftok_decode(const hftok_handle *h, const uint32_t *ids, size_t n,
                   bool skip_special, char **err);
