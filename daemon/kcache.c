/* kcache.c: an in-memory LRU of compiled kernels keyed by SHA-256 NEFF keys. */
#include <sys/queue.h>

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "daemon/backend.h"
#include "daemon/kcache.h"
#include "daemon/log.h"
#include "daemon/xmalloc.h"

struct kcache_entry {
	char			 key[KCACHE_KEY_LEN + 1];
	char			*name;
	void			*image;
	size_t			 image_len;
	struct backend_program	*prog;
	double			 compile_ms;
	unsigned		 refs;
	TAILQ_ENTRY(kcache_entry) lru;		/* head: most recent */
};

TAILQ_HEAD(kcache_list, kcache_entry);

struct kcache {
	struct backend		*backend;
	struct kcache_list	 lru;
	struct kcache_stats	 st;
};

static void
kcache_digest_field(EVP_MD_CTX *ctx, const void *p, size_t len)
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

void
kcache_key_compute(const struct kcache_key_input *in, char *key)
{
	static const char	 hex[] = "0123456789abcdef";
	EVP_MD_CTX		*ctx;
	uint8_t			 md[EVP_MAX_MD_SIZE];
	unsigned		 mdlen = 0, i;
	char			*opts, *o;
	const char		*s;
	int			 blank = 1;

	/* Normalize the options: one blank between words, none at the ends. */
	o = opts = xmalloc(strlen(in->options) + 1);
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

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		fatal("out of memory creating a digest context");
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		fatal("cannot initialize SHA-256");
	kcache_digest_field(ctx, "nkid-neff-key/1", 15);
	kcache_digest_field(ctx, in->format, strlen(in->format));
	kcache_digest_field(ctx, in->ir, in->ir_len);
	kcache_digest_field(ctx, in->target, strlen(in->target));
	kcache_digest_field(ctx, opts, strlen(opts));
	kcache_digest_field(ctx, in->backend, strlen(in->backend));
	kcache_digest_field(ctx, in->compiler_version,
	    strlen(in->compiler_version));
	if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32)
		fatal("cannot compute SHA-256");
	EVP_MD_CTX_free(ctx);
	free(opts);
	for (i = 0; i < mdlen; i++) {
		key[2 * i] = hex[md[i] >> 4];
		key[2 * i + 1] = hex[md[i] & 0xf];
	}
	key[2 * mdlen] = '\0';
}

struct kcache *
kcache_new(struct backend *b, uint64_t max_bytes)
{
	struct kcache	*kc;

	kc = xcalloc(1, sizeof *kc);
	kc->backend = b;
	kc->st.max_bytes = max_bytes;
	TAILQ_INIT(&kc->lru);
	return (kc);
}

static void
kcache_entry_free(struct kcache *kc, struct kcache_entry *e)
{
	kc->st.entries--;
	kc->st.bytes -= e->image_len;
	if (kc->backend != NULL)
		kc->backend->ops->unload(kc->backend->state, e->prog);
	free(e->image);
	free(e->name);
	free(e);
}

void
kcache_free(struct kcache *kc)
{
	struct kcache_entry	*e;

	if (kc == NULL)
		return;
	while ((e = TAILQ_FIRST(&kc->lru)) != NULL) {
		assert(e->refs == 0);
		TAILQ_REMOVE(&kc->lru, e, lru);
		kcache_entry_free(kc, e);
	}
	free(kc);
}

static void
kcache_evict(struct kcache *kc)
{
	struct kcache_entry	*e, *prev;

	for (e = TAILQ_LAST(&kc->lru, kcache_list);
	    e != NULL && kc->st.bytes > kc->st.max_bytes; e = prev) {
		prev = TAILQ_PREV(e, kcache_list, lru);
		if (e->refs > 0)
			continue;
		log_debug("kcache: evicting '%s' (%zu bytes)", e->key,
		    e->image_len);
		TAILQ_REMOVE(&kc->lru, e, lru);
		kcache_entry_free(kc, e);
		kc->st.evictions++;
	}
}

void
kcache_max_bytes_set(struct kcache *kc, uint64_t max_bytes)
{
	kc->st.max_bytes = max_bytes;
	kcache_evict(kc);
}

static struct kcache_entry *
kcache_lookup(struct kcache *kc, const char *key)
{
	struct kcache_entry	*e;

	TAILQ_FOREACH(e, &kc->lru, lru) {
		if (strcmp(e->key, key) == 0)
			return (e);
	}
	return (NULL);
}

struct kcache_entry *
kcache_get(struct kcache *kc, const char *key)
{
	struct kcache_entry	*e;

	if ((e = kcache_lookup(kc, key)) == NULL) {
		kc->st.misses++;
		return (NULL);
	}
	kc->st.hits++;
	e->refs++;
	TAILQ_REMOVE(&kc->lru, e, lru);
	TAILQ_INSERT_HEAD(&kc->lru, e, lru);
	return (e);
}

struct kcache_entry *
kcache_put(struct kcache *kc, const char *key, const char *kernel_name,
    void *image, size_t image_len, struct backend_program *prog,
    double compile_ms)
{
	struct kcache_entry	*e;

	assert(strlen(key) == KCACHE_KEY_LEN);
	kc->st.compiles++;
	if ((e = kcache_lookup(kc, key)) != NULL) {
		if (kc->backend != NULL)
			kc->backend->ops->unload(kc->backend->state, prog);
		free(image);
		e->refs++;
		return (e);
	}
	e = xcalloc(1, sizeof *e);
	memcpy(e->key, key, KCACHE_KEY_LEN + 1);
	e->name = xstrdup(kernel_name);
	e->image = image;
	e->image_len = image_len;
	e->prog = prog;
	e->compile_ms = compile_ms;
	e->refs = 1;
	TAILQ_INSERT_HEAD(&kc->lru, e, lru);
	kc->st.entries++;
	kc->st.bytes += image_len;
	kcache_evict(kc);
	return (e);
}

void
kcache_entry_unref(struct kcache *kc, struct kcache_entry *e)
{
	assert(e->refs > 0);
	if (--e->refs == 0 && kc->st.bytes > kc->st.max_bytes)
		kcache_evict(kc);
}

void
kcache_failure_count(struct kcache *kc)
{
	kc->st.failures++;
}

const char *
kcache_entry_key(const struct kcache_entry *e)
{
	return (e->key);
}

const char *
kcache_entry_name(const struct kcache_entry *e)
{
	return (e->name);
}

const void *
kcache_entry_image(const struct kcache_entry *e, size_t *len)
{
	if (len != NULL)
		*len = e->image_len;
	return (e->image);
}

const struct backend_program *
kcache_entry_program(const struct kcache_entry *e)
{
	return (e->prog);
}

void
kcache_stats_get(const struct kcache *kc, struct kcache_stats *st)
{
	*st = kc->st;
}
