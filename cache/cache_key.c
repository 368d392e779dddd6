/* cache_key.c: NEFF keys and blob digests, SHA-256 from libcrypto. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "cache/cache.h"

static const char cache_hex[] = "0123456789abcdef";

static void
cache_key_field(EVP_MD_CTX *ctx, const void *p, size_t len)
{
	uint8_t		hdr[8];
	uint64_t	n = len;
	int		i;

	for (i = 0; i < 8; i++)
		hdr[i] = (uint8_t)(n >> (8 * i));
	EVP_DigestUpdate(ctx, hdr, sizeof hdr);
	if (len > 0)
		EVP_DigestUpdate(ctx, p, len);
}

static void
cache_hex_encode(const uint8_t *md, unsigned len, char *hex)
{
	unsigned	i;

	for (i = 0; i < len; i++) {
		hex[2 * i] = cache_hex[md[i] >> 4];
		hex[2 * i + 1] = cache_hex[md[i] & 0xf];
	}
	hex[2 * len] = '\0';
}

void
cache_key_compute(const struct cache_key_input *in, char *key)
{
	EVP_MD_CTX	*ctx;
	uint8_t		 md[EVP_MAX_MD_SIZE];
	unsigned	 mdlen = 0;
	char		*opts, *o;
	const char	*s;
	int		 blank = 1;

	/* Normalize the options: one blank between words, none at the ends. */
	o = opts = malloc(strlen(in->options) + 1);
	if (opts == NULL)
		abort();
	for (s = in->options; *s != '\0'; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n') {
			blank = 1;
			continue;
		}
		if (blank && o != opts)
			*o++ = ' ';
		blank = 0;
		*o++ = *s;
	}
	*o = '\0';

	if ((ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		abort();
	assert(cache_key_valid(in->ir_digest));
	cache_key_field(ctx, "nkid-neff-key/2", 15);
	cache_key_field(ctx, in->format, strlen(in->format));
	cache_key_field(ctx, in->ir_digest, CACHE_KEY_LEN);
	cache_key_field(ctx, in->target, strlen(in->target));
	cache_key_field(ctx, opts, strlen(opts));
	cache_key_field(ctx, in->backend, strlen(in->backend));
	cache_key_field(ctx, in->compiler_version,
	    strlen(in->compiler_version));
	if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32)
		abort();
	EVP_MD_CTX_free(ctx);
	free(opts);
	cache_hex_encode(md, mdlen, key);
}

void
cache_digest_hex(const void *p, size_t len, char *hex)
{
	uint8_t		md[EVP_MAX_MD_SIZE];
	unsigned	mdlen = 0;

	if (EVP_Digest(p, len, md, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen != 32)
		abort();
	cache_hex_encode(md, mdlen, hex);
}

int
cache_key_valid(const char *s)
{
	size_t	i;

	if (s == NULL)
		return (0);
	for (i = 0; i < CACHE_KEY_LEN; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return (0);
	}
	return (s[i] == '\0');
}
