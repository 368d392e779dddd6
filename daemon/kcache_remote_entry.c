/* kcache_remote_entry.c: the value the remote tier keeps for one NEFF entry: encoding, HMAC-SHA256 with the fleet key, verification. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "daemon/kcache_remote.h"
#include "daemon/xmalloc.h"

/*
 * The value (little-endian, like a bundle):
 *   "NKIDRMT1"
 *   u32 meta_len, then 13 fields, each u32 len + bytes: key, kernel,
 *   format, target, backend, compiler_version, options, status ("ok" |
 *   "failed"), size (decimal), digest (hex SHA-256 of the blob), log,
 *   compile_ms, created
 *   u64 blob_len, blob
 *   32 bytes: HMAC-SHA256 with the fleet key of every byte before it
 */
#define KCACHE_REMOTE_MAGIC	"NKIDRMT1"
#define KCACHE_REMOTE_MAC	32
#define KCACHE_REMOTE_NFIELDS	13
/* Longest metadata: the fields are short but the log (CACHE_LOG_MAX). */
#define KCACHE_REMOTE_META_MAX	(CACHE_LOG_MAX + 64 * 1024)

enum {
	F_KEY, F_KERNEL, F_FORMAT, F_TARGET, F_BACKEND, F_COMPILER, F_OPTIONS,
	F_STATUS, F_SIZE, F_DIGEST, F_LOG, F_COMPILE_MS, F_CREATED,
};

static void
kcache_remote_put32(unsigned char *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

static uint32_t
kcache_remote_get32(const unsigned char *p)
{
	return ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24);
}

static void
kcache_remote_put64(unsigned char *p, uint64_t v)
{
	kcache_remote_put32(p, (uint32_t)v);
	kcache_remote_put32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t
kcache_remote_get64(const unsigned char *p)
{
	return ((uint64_t)kcache_remote_get32(p) |
	    (uint64_t)kcache_remote_get32(p + 4) << 32);
}

static void
kcache_remote_mac(const void *fkey, size_t fkeylen, const void *p, size_t len,
    unsigned char *mac)
{
	unsigned int	n = KCACHE_REMOTE_MAC;

	if (HMAC(EVP_sha256(), fkey, (int)fkeylen, p, len, mac, &n) == NULL ||
	    n != KCACHE_REMOTE_MAC)
		memset(mac, 0, KCACHE_REMOTE_MAC);
}

void
kcache_remote_entry_encode(const void *fkey, size_t fkeylen,
    const struct cache_entry *e, void **out, size_t *outlen)
{
	const char	*f[KCACHE_REMOTE_NFIELDS];
	char		 size[32], ms[64], created[64];
	char		 digest[CACHE_KEY_LEN + 1];
	unsigned char	*buf, *p;
	size_t		 meta = 0, blob, total, n, i;

	assert(fkey != NULL && e != NULL && out != NULL && outlen != NULL);
	blob = e->failed ? 0 : e->len;
	cache_digest_hex(e->failed ? "" : e->data, blob, digest);
	snprintf(size, sizeof size, "%zu", blob);
	snprintf(ms, sizeof ms, "%.3f", e->compile_ms);
	snprintf(created, sizeof created, "%.3f", e->created);
	f[F_KEY] = e->key;
	f[F_KERNEL] = e->kernel != NULL ? e->kernel : "";
	f[F_FORMAT] = e->format != NULL ? e->format : "";
	f[F_TARGET] = e->target != NULL ? e->target : "";
	f[F_BACKEND] = e->backend != NULL ? e->backend : "";
	f[F_COMPILER] = e->compiler_version != NULL ? e->compiler_version : "";
	f[F_OPTIONS] = e->options != NULL ? e->options : "";
	f[F_STATUS] = e->failed ? "failed" : "ok";
	f[F_SIZE] = size;
	f[F_DIGEST] = digest;
	f[F_LOG] = e->failed && e->log != NULL ? e->log : "";
	f[F_COMPILE_MS] = ms;
	f[F_CREATED] = created;
	for (i = 0; i < KCACHE_REMOTE_NFIELDS; i++)
		meta += 4 + strlen(f[i]);
	total = 8 + 4 + meta + 8 + blob + KCACHE_REMOTE_MAC;
	p = buf = xmalloc(total);
	memcpy(p, KCACHE_REMOTE_MAGIC, 8);
	p += 8;
	kcache_remote_put32(p, (uint32_t)meta);
	p += 4;
	for (i = 0; i < KCACHE_REMOTE_NFIELDS; i++) {
		n = strlen(f[i]);
		kcache_remote_put32(p, (uint32_t)n);
		memcpy(p + 4, f[i], n);
		p += 4 + n;
	}
	kcache_remote_put64(p, blob);
	p += 8;
	if (blob > 0)
		memcpy(p, e->data, blob);
	p += blob;
	kcache_remote_mac(fkey, fkeylen, buf, (size_t)(p - buf), p);
	*out = buf;
	*outlen = total;
}

static int
kcache_remote_reject(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
kcache_remote_reject(char *why, size_t whylen, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return (KCACHE_REMOTE_EREJECT);
}

/* Text a field may hold: UTF-8, no NUL, no control characters but \t \n
 * \r. */
static int
kcache_remote_text_ok(const unsigned char *p, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' &&
		    p[i] != '\r') || p[i] == 0x7f)
			return (0);
	/* Every string nkid stores or returns is UTF-8. */
	return (cache_text_valid((const char *)p, n));
}

static char *
kcache_remote_strndup(const unsigned char *p, size_t n)
{
	char	*s = xmalloc(n + 1);

	memcpy(s, p, n);
	s[n] = '\0';
	return (s);
}

int
kcache_remote_entry_decode(const void *fkey, size_t fkeylen,
    const char *want_key, const char *backend, const char *compiler_version,
    const void *v, size_t len, struct cache_entry *e, char *why,
    size_t whylen)
{
	const unsigned char	*b = v, *fp[KCACHE_REMOTE_NFIELDS];
	unsigned char		 mac[KCACHE_REMOTE_MAC];
	char			*fs[KCACHE_REMOTE_NFIELDS];
	char			 digest[CACHE_KEY_LEN + 1];
	char			*end;
	uint32_t		 fl[KCACHE_REMOTE_NFIELDS];
	uint64_t		 meta, blob, want, size;
	size_t			 off, i;
	int			 rc = KCACHE_REMOTE_EREJECT;

	assert(fkey != NULL && want_key != NULL && e != NULL);
	memset(e, 0, sizeof *e);
	memset(fs, 0, sizeof fs);
	if (len < 8 || memcmp(b, KCACHE_REMOTE_MAGIC, 8) != 0)
		return (kcache_remote_reject(why, whylen,
		    "not an nkid entry (no magic)"));
	if (len < 8 + 4 + 8 + KCACHE_REMOTE_MAC)
		return (kcache_remote_reject(why, whylen,
		    "truncated: %zu bytes", len));
	meta = kcache_remote_get32(b + 8);
	if (meta > KCACHE_REMOTE_META_MAX ||
	    12 + meta + 8 + KCACHE_REMOTE_MAC > len)
		return (kcache_remote_reject(why, whylen, "truncated: %zu "
		    "bytes, its metadata says %llu", len,
		    (unsigned long long)meta));
	blob = kcache_remote_get64(b + 12 + meta);
	want = 12 + meta + 8 + KCACHE_REMOTE_MAC;
	if (blob > CACHE_BLOB_MAX || want + blob > len)
		return (kcache_remote_reject(why, whylen, "truncated: %zu "
		    "bytes, its header says %llu", len,
		    (unsigned long long)(want + (blob > CACHE_BLOB_MAX ? 0 :
		    blob))));
	if (want + blob < len)
		return (kcache_remote_reject(why, whylen, "%llu stray bytes "
		    "after the entry",
		    (unsigned long long)(len - want - blob)));
	/* Nothing of it is believed before its signature is. */
	kcache_remote_mac(fkey, fkeylen, b, len - KCACHE_REMOTE_MAC, mac);
	if (CRYPTO_memcmp(mac, b + len - KCACHE_REMOTE_MAC,
	    KCACHE_REMOTE_MAC) != 0)
		return (kcache_remote_reject(why, whylen, "its HMAC does not "
		    "match the fleet key (signed with another key, or "
		    "altered)"));
	off = 12;
	for (i = 0; i < KCACHE_REMOTE_NFIELDS; i++) {
		if (off + 4 > 12 + meta)
			return (kcache_remote_reject(why, whylen,
			    "malformed metadata (field %zu)", i));
		fl[i] = kcache_remote_get32(b + off);
		if (fl[i] > 12 + meta - off - 4)
			return (kcache_remote_reject(why, whylen,
			    "malformed metadata (field %zu)", i));
		fp[i] = b + off + 4;
		if (!kcache_remote_text_ok(fp[i], fl[i]))
			return (kcache_remote_reject(why, whylen,
			    "malformed metadata (field %zu)", i));
		off += 4 + fl[i];
	}
	if (off != 12 + meta)
		return (kcache_remote_reject(why, whylen,
		    "malformed metadata (%llu stray bytes)",
		    (unsigned long long)(12 + meta - off)));
	for (i = 0; i < KCACHE_REMOTE_NFIELDS; i++)
		fs[i] = kcache_remote_strndup(fp[i], fl[i]);
	if (strcmp(fs[F_KEY], want_key) != 0) {
		kcache_remote_reject(why, whylen, "it is the entry of key "
		    "'%.64s'", fs[F_KEY]);
		goto out;
	}
	if (strcmp(fs[F_STATUS], "ok") != 0 &&
	    strcmp(fs[F_STATUS], "failed") != 0) {
		kcache_remote_reject(why, whylen, "unknown status '%.16s'",
		    fs[F_STATUS]);
		goto out;
	}
	size = strtoull(fs[F_SIZE], &end, 10);
	if (fs[F_SIZE][0] < '0' || fs[F_SIZE][0] > '9' || *end != '\0' ||
	    size != blob) {
		kcache_remote_reject(why, whylen, "its size says %.24s, it "
		    "holds %llu bytes", fs[F_SIZE], (unsigned long long)blob);
		goto out;
	}
	if ((strcmp(fs[F_STATUS], "ok") == 0) != (blob > 0)) {
		kcache_remote_reject(why, whylen, "a%s entry with %llu bytes",
		    strcmp(fs[F_STATUS], "ok") == 0 ? "n ok" : " failed",
		    (unsigned long long)blob);
		goto out;
	}
	cache_digest_hex(b + 12 + meta + 8, (size_t)blob, digest);
	if (!cache_key_valid(fs[F_DIGEST]) ||
	    strcmp(digest, fs[F_DIGEST]) != 0) {
		kcache_remote_reject(why, whylen, "its SHA-256 is %s, not "
		    "'%.64s'", digest, fs[F_DIGEST]);
		goto out;
	}
	if ((backend != NULL && strcmp(fs[F_BACKEND], backend) != 0) ||
	    (compiler_version != NULL &&
	    strcmp(fs[F_COMPILER], compiler_version) != 0)) {
		kcache_remote_reject(why, whylen, "it was compiled by '%.64s' "
		    "'%.128s'", fs[F_BACKEND], fs[F_COMPILER]);
		goto out;
	}
	memcpy(e->key, want_key, CACHE_KEY_LEN);
	e->key[CACHE_KEY_LEN] = '\0';
	memcpy(e->digest, digest, sizeof e->digest);
	e->kernel = fs[F_KERNEL];
	e->format = fs[F_FORMAT];
	e->target = fs[F_TARGET];
	e->backend = fs[F_BACKEND];
	e->compiler_version = fs[F_COMPILER];
	e->options = fs[F_OPTIONS];
	e->failed = strcmp(fs[F_STATUS], "failed") == 0;
	e->log = fs[F_LOG];
	e->size = blob;
	e->compile_ms = strtod(fs[F_COMPILE_MS], NULL);
	e->created = strtod(fs[F_CREATED], NULL);
	fs[F_KERNEL] = fs[F_FORMAT] = fs[F_TARGET] = fs[F_BACKEND] = NULL;
	fs[F_COMPILER] = fs[F_OPTIONS] = fs[F_LOG] = NULL;
	if (blob > 0) {
		e->data = xmalloc((size_t)blob);
		memcpy(e->data, b + 12 + meta + 8, (size_t)blob);
	}
	e->len = (size_t)blob;
	rc = 0;
out:
	for (i = 0; i < KCACHE_REMOTE_NFIELDS; i++)
		free(fs[i]);
	return (rc);
}
