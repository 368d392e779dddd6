/* cache_bundle.c: self-verifying export/import bundles of cache entries (format: docs/cache.md). */
#include <sys/stat.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "cache/cache_impl.h"

#define BUNDLE_MAGIC		"NKIDBDL1"
#define BUNDLE_END		"NKIDEND1"
#define BUNDLE_VERSION		1
#define BUNDLE_MAX_ENTRIES	1000000u
#define BUNDLE_MAX_FIELD	(CACHE_LOG_MAX)
#define BUNDLE_MAX_META		(16 * BUNDLE_MAX_FIELD)

/* The text fields of an entry's metadata, in bundle order. */
enum bundle_field {
	BF_KEY, BF_KERNEL, BF_FORMAT, BF_TARGET, BF_BACKEND, BF_COMPILER,
	BF_OPTIONS, BF_DIGEST, BF_STATUS, BF_LOG, BF_COMPILE_MS, BF_CREATED,
	BF_PINNED, BF_COUNT,
};

static void
cache_crypto_init_once(void)
{
	char	hex[CACHE_KEY_LEN + 1];

	/* The config is loaded by the first digest, not by a bare init:
	 * take the same path the workers take. */
	OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL);
	cache_digest_hex("", 0, hex);
}

/* ------------------------------------------------------------ export */

struct bundle_out {
	int		(*write_cb)(void *, const void *, size_t);
	void		*arg;
	EVP_MD_CTX	*md;
	int		 error;
};

static void
bundle_put(struct bundle_out *o, const void *p, size_t n)
{
	if (o->error || n == 0)
		return;
	EVP_DigestUpdate(o->md, p, n);
	if (o->write_cb(o->arg, p, n) != 0)
		o->error = 1;
}

/* The bundle's integers: little-endian, n (4 or 8) bytes. */
static void
bundle_put_le(struct bundle_out *o, uint64_t v, size_t n)
{
	uint8_t	b[8];
	size_t	i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	bundle_put(o, b, n);
}

static void
bundle_put_u32(struct bundle_out *o, uint32_t v)
{
	bundle_put_le(o, v, 4);
}

static void
bundle_put_u64(struct bundle_out *o, uint64_t v)
{
	bundle_put_le(o, v, 8);
}

struct bundle_keys {
	char	**keys;
	size_t	  n;
	int	  pinned_only;
	int64_t	  viewer;	/* cache_entry_visible's */
};

static int
bundle_keys_cb(void *arg, const struct cache_entry *e)
{
	struct bundle_keys	*k = arg;

	if ((k->pinned_only && !e->pinned) ||
	    !cache_entry_visible(e, k->viewer))
		return (0);
	if ((k->keys = realloc(k->keys, (k->n + 1) * sizeof *k->keys)) == NULL ||
	    (k->keys[k->n] = malloc(CACHE_KEY_LEN + 1)) == NULL)
		abort();
	snprintf(k->keys[k->n], CACHE_KEY_LEN + 1, "%s", e->key);
	k->n++;
	return (0);
}

int
cache_bundle_export(struct cache *c, int64_t viewer, const char *const *keys,
    size_t nkeys, int pinned_only,
    int (*write_cb)(void *arg, const void *p, size_t n), void *arg,
    unsigned *count, char *err, size_t errlen)
{
	struct bundle_keys	 bk = { NULL, 0, pinned_only, CACHE_VIEW_ALL };
	struct bundle_out	 o = { write_cb, arg, NULL, 0 };
	struct cache_entry	 e;
	const char		*f[BF_COUNT];
	char			 ms[32], created[32];
	uint8_t			 md[EVP_MAX_MD_SIZE];
	unsigned		 mdlen = 0;
	size_t			 i, j, metalen;
	int			 rc = 0;

	*count = 0;
	if (nkeys > 0) {
		for (i = 0; i < nkeys; i++) {
			if (!cache_key_valid(keys[i])) {
				snprintf(err, errlen, "'%s' is not a NEFF key "
				    "(64 lower-case hex digits)", keys[i]);
				rc = CACHE_EINVAL;
				goto out;
			}
			/* A key named twice travels once. */
			for (j = 0; j < bk.n; j++)
				if (strcmp(bk.keys[j], keys[i]) == 0)
					break;
			if (j < bk.n)
				continue;
			bk.pinned_only = 0;
			bundle_keys_cb(&bk, &(struct cache_entry){ .pinned = 1 });
			memcpy(bk.keys[bk.n - 1], keys[i], CACHE_KEY_LEN + 1);
		}
		/* Every key is there, and the viewer's to see, before a
		 * byte is written; one it may not see is missing. */
		for (i = 0; i < bk.n; i++) {
			rc = cache_get(c, bk.keys[i], CACHE_GET_ANY, &e);
			if (rc == 0 || rc == CACHE_EFAILED) {
				if (!cache_entry_visible(&e, viewer))
					rc = CACHE_ENOENT;
				cache_entry_release(&e);
			}
			if (rc == CACHE_ENOENT) {
				snprintf(err, errlen, "no entry '%s'",
				    bk.keys[i]);
				goto out;
			}
			if (rc != 0 && rc != CACHE_EFAILED) {
				snprintf(err, errlen, "cannot read entry '%s': "
				    "%s", bk.keys[i], cache_strerror(rc));
				goto out;
			}
			rc = 0;
		}
	} else {
		bk.viewer = viewer;
		if ((rc = cache_list(c, NULL, 0, bundle_keys_cb, &bk)) != 0) {
			snprintf(err, errlen, "cannot list the cache: %s",
			    cache_strerror(rc));
			goto out;
		}
	}
	if (bk.n > BUNDLE_MAX_ENTRIES) {
		snprintf(err, errlen, "%zu entries exceed the bundle limit of "
		    "%u", bk.n, BUNDLE_MAX_ENTRIES);
		rc = CACHE_EINVAL;
		goto out;
	}
	if ((o.md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(o.md, EVP_sha256(), NULL) != 1)
		abort();
	bundle_put(&o, BUNDLE_MAGIC, 8);
	bundle_put_u32(&o, BUNDLE_VERSION);
	bundle_put_u32(&o, (uint32_t)bk.n);
	for (i = 0; i < bk.n && !o.error; i++) {
		rc = cache_get(c, bk.keys[i], CACHE_GET_DATA | CACHE_GET_ANY,
		    &e);
		if (rc == CACHE_EFAILED)
			rc = 0;
		if (rc != 0) {
			snprintf(err, errlen, "cannot export '%s': %s",
			    bk.keys[i], cache_strerror(rc));
			goto out;
		}
		snprintf(ms, sizeof ms, "%.3f", e.compile_ms);
		snprintf(created, sizeof created, "%.6f", e.created);
		f[BF_KEY] = e.key;
		f[BF_KERNEL] = e.kernel;
		f[BF_FORMAT] = e.format;
		f[BF_TARGET] = e.target;
		f[BF_BACKEND] = e.backend;
		f[BF_COMPILER] = e.compiler_version;
		f[BF_OPTIONS] = e.options;
		f[BF_DIGEST] = e.digest;
		f[BF_STATUS] = e.failed ? "failed" : "ok";
		f[BF_LOG] = e.log;
		f[BF_COMPILE_MS] = ms;
		f[BF_CREATED] = created;
		f[BF_PINNED] = e.pinned ? "1" : "0";
		for (metalen = 0, j = 0; j < BF_COUNT; j++)
			metalen += 4 + strlen(f[j]);
		bundle_put_u32(&o, (uint32_t)metalen);
		for (j = 0; j < BF_COUNT; j++) {
			bundle_put_u32(&o, (uint32_t)strlen(f[j]));
			bundle_put(&o, f[j], strlen(f[j]));
		}
		bundle_put_u64(&o, e.failed ? 0 : e.len);
		if (!e.failed)
			bundle_put(&o, e.data, e.len);
		cache_entry_release(&e);
		(*count)++;
	}
	if (EVP_DigestFinal_ex(o.md, md, &mdlen) != 1 || mdlen != 32)
		abort();
	if (!o.error && (write_cb(arg, BUNDLE_END, 8) != 0 ||
	    write_cb(arg, md, mdlen) != 0))
		o.error = 1;
	if (o.error) {
		snprintf(err, errlen, "cannot write the bundle: %s",
		    strerror(errno));
		rc = CACHE_EIO;
	}
out:
	EVP_MD_CTX_free(o.md);
	for (i = 0; i < bk.n; i++)
		free(bk.keys[i]);
	free(bk.keys);
	return (rc);
}

/* ------------------------------------------------------------ import */

struct bundle_in {
	int			 fd;
	const char		*name;		/* for messages */
	uint64_t		 size;		/* of the file, trailer included */
	uint64_t		 off;
	EVP_MD_CTX		*md;
	const volatile int	*cancel;	/* may be NULL */
	char			*err;
	size_t			 errlen;
};

/* One entry as read: fields point into meta. */
struct bundle_entry {
	char		*meta;
	char		*f[BF_COUNT];
	void		*blob;
	uint64_t	 blob_len;
};

static int
bundle_fail(struct bundle_in *in, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
bundle_fail(struct bundle_in *in, const char *fmt, ...)
{
	char	msg[512];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(in->err, in->errlen, "bundle '%s' refused: %s (at byte %llu)",
	    in->name, msg, (unsigned long long)in->off);
	return (CACHE_EBUNDLE);
}

/* Read n bytes of the body (never the trailer's). */
static int
bundle_read(struct bundle_in *in, void *p, uint64_t n)
{
	uint8_t	*b = p;
	ssize_t	 r;
	uint64_t got = 0;

	if (n > in->size - 40 - in->off)
		return (bundle_fail(in, "truncated: %llu bytes wanted, %llu "
		    "left", (unsigned long long)n, (unsigned long long)
		    (in->size - 40 - in->off)));
	while (got < n) {
		r = read(in->fd, b + got, n - got > (1 << 20) ? (1 << 20) :
		    n - got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return (bundle_fail(in, "read error: %s", r == 0 ?
			    "file shrank" : strerror(errno)));
		got += (uint64_t)r;
	}
	in->off += n;
	if (in->md != NULL)
		EVP_DigestUpdate(in->md, p, n);
	return (0);
}

/* Read an integer as bundle_put_le wrote it. */
static int
bundle_le(struct bundle_in *in, size_t n, uint64_t *v)
{
	uint8_t	b[8];
	size_t	i;
	int	rc;

	if ((rc = bundle_read(in, b, n)) != 0)
		return (rc);
	for (*v = 0, i = 0; i < n; i++)
		*v |= (uint64_t)b[i] << (8 * i);
	return (0);
}

static int
bundle_u32(struct bundle_in *in, uint32_t *v)
{
	uint64_t	x;
	int		rc;

	if ((rc = bundle_le(in, 4, &x)) == 0)
		*v = (uint32_t)x;
	return (rc);
}

static int
bundle_u64(struct bundle_in *in, uint64_t *v)
{
	return (bundle_le(in, 8, v));
}

static void
bundle_entry_free(struct bundle_entry *be)
{
	free(be->meta);
	free(be->blob);
	memset(be, 0, sizeof *be);
}

static int
bundle_printable(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t' &&
		    *s != '\r')
			return (0);
	}
	return (1);
}

/* Read and check one entry: sizes, fields, digest. */
static int
bundle_entry_read(struct bundle_in *in, struct bundle_entry *be)
{
	char		 digest[CACHE_KEY_LEN + 1], *p, *end;
	uint32_t	 metalen, flen;
	int		 rc, i;

	memset(be, 0, sizeof *be);
	if ((rc = bundle_u32(in, &metalen)) != 0)
		return (rc);
	if (metalen > BUNDLE_MAX_META || metalen < 4 * BF_COUNT)
		return (bundle_fail(in, "absurd metadata size %u", metalen));
	/* Room for a NUL after each field: fields move one byte right. */
	if ((be->meta = malloc(metalen + BF_COUNT + 1)) == NULL)
		abort();
	if ((rc = bundle_read(in, be->meta, metalen)) != 0)
		goto fail;
	p = be->meta;
	end = be->meta + metalen;
	for (i = 0; i < BF_COUNT; i++) {
		if (end - p < 4) {
			rc = bundle_fail(in, "metadata field %d missing", i);
			goto fail;
		}
		flen = (uint32_t)(uint8_t)p[0] | (uint32_t)(uint8_t)p[1] << 8 |
		    (uint32_t)(uint8_t)p[2] << 16 | (uint32_t)(uint8_t)p[3] << 24;
		p += 4;
		if (flen > BUNDLE_MAX_FIELD || flen > (size_t)(end - p)) {
			rc = bundle_fail(in, "absurd metadata field size %u",
			    flen);
			goto fail;
		}
		/* Shift the field onto the 4 bytes before it to make room
		 * for its NUL. */
		memmove(p - 4, p, flen);
		p[(ptrdiff_t)flen - 4] = '\0';
		be->f[i] = p - 4;
		if (memchr(be->f[i], '\0', flen) != NULL ||
		    !bundle_printable(be->f[i])) {
			rc = bundle_fail(in, "metadata field %d holds control "
			    "characters", i);
			goto fail;
		}
		if (!cache_text_valid(be->f[i], flen)) {
			rc = bundle_fail(in, "metadata field %d is not valid "
			    "UTF-8", i);
			goto fail;
		}
		p += flen;
	}
	if (p != end) {
		rc = bundle_fail(in, "%zu stray bytes after the metadata",
		    (size_t)(end - p));
		goto fail;
	}
	if (!cache_key_valid(be->f[BF_KEY])) {
		rc = bundle_fail(in, "'%.80s' is not a NEFF key", be->f[BF_KEY]);
		goto fail;
	}
	if (!cache_key_valid(be->f[BF_DIGEST])) {
		rc = bundle_fail(in, "entry '%s': malformed digest",
		    be->f[BF_KEY]);
		goto fail;
	}
	if (strcmp(be->f[BF_STATUS], "ok") != 0 &&
	    strcmp(be->f[BF_STATUS], "failed") != 0) {
		rc = bundle_fail(in, "entry '%s': unknown status '%.20s'",
		    be->f[BF_KEY], be->f[BF_STATUS]);
		goto fail;
	}
	if (strcmp(be->f[BF_PINNED], "0") != 0 &&
	    strcmp(be->f[BF_PINNED], "1") != 0) {
		rc = bundle_fail(in, "entry '%s': bad pinned flag",
		    be->f[BF_KEY]);
		goto fail;
	}
	if ((rc = bundle_u64(in, &be->blob_len)) != 0)
		goto fail;
	if (be->blob_len > CACHE_BLOB_MAX) {
		rc = bundle_fail(in, "entry '%s': blob size %llu is over the "
		    "limit of %llu bytes", be->f[BF_KEY],
		    (unsigned long long)be->blob_len,
		    (unsigned long long)CACHE_BLOB_MAX);
		goto fail;
	}
	if (be->blob_len > in->size - 40 - in->off) {
		rc = bundle_fail(in, "entry '%s': the bundle ends before its "
		    "blob of %llu bytes (is it cut short?)", be->f[BF_KEY],
		    (unsigned long long)be->blob_len);
		goto fail;
	}
	if (strcmp(be->f[BF_STATUS], "failed") == 0 && be->blob_len != 0) {
		rc = bundle_fail(in, "entry '%s': a failed entry with a blob",
		    be->f[BF_KEY]);
		goto fail;
	}
	if ((be->blob = malloc(be->blob_len > 0 ? be->blob_len : 1)) == NULL)
		abort();
	if ((rc = bundle_read(in, be->blob, be->blob_len)) != 0)
		goto fail;
	cache_digest_hex(be->blob, be->blob_len, digest);
	if (strcmp(be->f[BF_STATUS], "ok") == 0 &&
	    strcmp(digest, be->f[BF_DIGEST]) != 0) {
		rc = bundle_fail(in, "entry '%s': blob does not match its "
		    "digest", be->f[BF_KEY]);
		goto fail;
	}
	return (0);
fail:
	bundle_entry_free(be);
	return (rc);
}

static int
bundle_header(struct bundle_in *in, uint32_t *count)
{
	char		magic[8];
	uint32_t	version;
	int		rc;

	if (in->size < 8 + 8 + 40)
		return (bundle_fail(in, "too short to be a bundle"));
	if ((rc = bundle_read(in, magic, 8)) != 0)
		return (rc);
	if (memcmp(magic, BUNDLE_MAGIC, 8) != 0)
		return (bundle_fail(in, "not a bundle (no %s magic)",
		    BUNDLE_MAGIC));
	if ((rc = bundle_u32(in, &version)) != 0 ||
	    (rc = bundle_u32(in, count)) != 0)
		return (rc);
	if (version != BUNDLE_VERSION)
		return (bundle_fail(in, "unsupported version %u", version));
	if (*count > BUNDLE_MAX_ENTRIES)
		return (bundle_fail(in, "absurd entry count %u", *count));
	return (0);
}

/* CACHE_EIO with a message if the caller gave up (in->cancel), else 0. */
static int
bundle_cancelled(struct bundle_in *in)
{
	if (in->cancel == NULL || !__atomic_load_n(in->cancel,
	    __ATOMIC_ACQUIRE))
		return (0);
	snprintf(in->err, in->errlen, "import of bundle '%s' cancelled; "
	    "nothing imported", in->name);
	return (CACHE_EIO);
}

static int
bundle_key_cmp(const void *a, const void *b)
{
	return (memcmp(a, b, CACHE_KEY_LEN));
}

/* Pass 1: read everything, check every entry and the trailer. */
static int
bundle_check(struct bundle_in *in, uint64_t max_bytes, uint32_t *countp)
{
	struct bundle_entry	 be;
	uint8_t			 md[EVP_MAX_MD_SIZE], trailer[40];
	unsigned		 mdlen = 0;
	uint64_t		 total = 0;
	uint32_t		 count, i;
	char			*keys = NULL;
	ssize_t			 r;
	int			 rc;

	if ((in->md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(in->md, EVP_sha256(), NULL) != 1)
		abort();
	if ((rc = bundle_header(in, &count)) != 0)
		goto out;
	if ((uint64_t)count * (4 + 4 * BF_COUNT + 8) > in->size) {
		rc = bundle_fail(in, "%u entries cannot fit in %llu bytes",
		    count, (unsigned long long)in->size);
		goto out;
	}
	if ((keys = malloc((size_t)count * CACHE_KEY_LEN + 1)) == NULL)
		abort();
	for (i = 0; i < count; i++) {
		if ((rc = bundle_cancelled(in)) != 0 ||
		    (rc = bundle_entry_read(in, &be)) != 0)
			goto out;
		memcpy(keys + (size_t)i * CACHE_KEY_LEN, be.f[BF_KEY],
		    CACHE_KEY_LEN);
		total += be.blob_len;
		bundle_entry_free(&be);
	}
	if (in->off != in->size - 40) {
		rc = bundle_fail(in, "%llu stray bytes after the last entry",
		    (unsigned long long)(in->size - 40 - in->off));
		goto out;
	}
	qsort(keys, count, CACHE_KEY_LEN, bundle_key_cmp);
	for (i = 1; i < count; i++) {
		if (memcmp(keys + (size_t)(i - 1) * CACHE_KEY_LEN, keys +
		    (size_t)i * CACHE_KEY_LEN, CACHE_KEY_LEN) == 0) {
			rc = bundle_fail(in, "entry '%.64s' appears twice",
			    keys + (size_t)i * CACHE_KEY_LEN);
			goto out;
		}
	}
	do
		r = read(in->fd, trailer, sizeof trailer);
	while (r == -1 && errno == EINTR);
	if (r != (ssize_t)sizeof trailer || memcmp(trailer, BUNDLE_END, 8) !=
	    0) {
		rc = bundle_fail(in, "no %s trailer", BUNDLE_END);
		goto out;
	}
	if (EVP_DigestFinal_ex(in->md, md, &mdlen) != 1 || mdlen != 32)
		abort();
	if (memcmp(md, trailer + 8, 32) != 0) {
		rc = bundle_fail(in, "the SHA-256 of the bundle does not match "
		    "its trailer");
		goto out;
	}
	if (max_bytes > 0 && total > max_bytes) {
		rc = bundle_fail(in, "its %llu bytes of blobs exceed the cache "
		    "budget of %llu bytes (cache.max_bytes)",
		    (unsigned long long)total, (unsigned long long)max_bytes);
		goto out;
	}
	*countp = count;
out:
	free(keys);
	EVP_MD_CTX_free(in->md);
	in->md = NULL;
	return (rc);
}

/* Open (regular files only) and size a bundle for reading. */
static int
bundle_in_open(struct bundle_in *in, int fd)
{
	struct stat	sb;

	if (fstat(fd, &sb) == -1) {
		snprintf(in->err, in->errlen, "cannot read bundle '%s': %s",
		    in->name, strerror(errno));
		return (CACHE_EIO);
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(in->err, in->errlen, "cannot read bundle '%s': not a "
		    "regular file", in->name);
		return (CACHE_EIO);
	}
	if (lseek(fd, 0, SEEK_SET) == -1) {
		snprintf(in->err, in->errlen, "cannot read bundle '%s': %s",
		    in->name, strerror(errno));
		return (CACHE_EIO);
	}
	in->fd = fd;
	in->size = (uint64_t)sb.st_size;
	in->off = 0;
	return (0);
}

int
cache_bundle_verify_fd(int fd, const char *name, unsigned *count, char *err,
    size_t errlen)
{
	struct bundle_in	in = { -1, name, 0, 0, NULL, NULL, err, errlen };
	uint32_t		n = 0;
	int			rc;

	assert(fd >= 0 && name != NULL && count != NULL);
	*count = 0;
	if ((rc = bundle_in_open(&in, fd)) != 0 ||
	    (rc = bundle_check(&in, 0, &n)) != 0)
		return (rc);
	*count = n;
	return (0);
}

int
cache_bundle_import(struct cache *c, const char *path, unsigned *imported,
    unsigned *skipped, char *err, size_t errlen)
{
	int	fd, rc;

	*imported = *skipped = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "cannot read bundle '%s': %s", path,
		    strerror(errno));
		return (CACHE_EIO);
	}
	rc = cache_bundle_import_fd(c, fd, path, CACHE_OWNER_NONE, NULL,
	    imported, skipped, err, errlen);
	close(fd);
	return (rc);
}

int
cache_bundle_import_fd(struct cache *c, int fd, const char *name,
    int64_t owner, const volatile int *cancel, unsigned *imported,
    unsigned *skipped, char *err, size_t errlen)
{
	struct bundle_in	 in = { -1, name, 0, 0, NULL, cancel, err,
				    errlen };
	struct bundle_entry	 be;
	struct cache_entry	 e;
	sqlite3_stmt		*st;
	char			**gone = NULL, **made = NULL;
	size_t			 ngone = 0, nmade = 0, i;
	uint64_t		 entries0, bytes0;
	uint32_t		 count = 0, k;
	int			 rc, exists, isin, txn = 0;

	assert(c != NULL && fd >= 0 && name != NULL);
	*imported = *skipped = 0;
	if (c->readonly) {
		snprintf(err, errlen, "cannot import: %s",
		    cache_strerror(CACHE_EREADONLY));
		return (CACHE_EREADONLY);
	}
	if ((rc = bundle_in_open(&in, fd)) != 0)
		return (rc);
	if ((rc = bundle_check(&in, CACHE_ST(c, max_bytes), &count)) != 0)
		return (rc);

	/* Pass 2: store, in one transaction. */
	if (lseek(in.fd, 0, SEEK_SET) == -1) {
		snprintf(err, errlen, "cannot read bundle '%s': %s", name,
		    strerror(errno));
		return (CACHE_EIO);
	}
	in.off = 0;
	if ((rc = bundle_header(&in, &count)) != 0)
		return (rc);
	pthread_mutex_lock(&c->mu);
	entries0 = CACHE_ST(c, entries);
	bytes0 = CACHE_ST(c, bytes);
	if (cache_exec(c, "BEGIN IMMEDIATE") != SQLITE_OK) {
		snprintf(err, errlen, "cannot import: %s", sqlite3_errmsg(c->db));
		rc = CACHE_EDB;
		goto out_unlock;
	}
	txn = 1;
	for (k = 0; k < count; k++) {
		if ((rc = bundle_cancelled(&in)) != 0 ||
		    (rc = bundle_entry_read(&in, &be)) != 0)
			goto out_unlock;
		if (sqlite3_prepare_v2(c->db, "SELECT 1 FROM neff WHERE key = ?1",
		    -1, &st, NULL) != SQLITE_OK) {
			bundle_entry_free(&be);
			snprintf(err, errlen, "cannot import: %s",
			    sqlite3_errmsg(c->db));
			rc = CACHE_EDB;
			goto out_unlock;
		}
		sqlite3_bind_text(st, 1, be.f[BF_KEY], -1, SQLITE_STATIC);
		exists = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
		if (exists) {
			(*skipped)++;
			bundle_entry_free(&be);
			continue;
		}
		memset(&e, 0, sizeof e);
		snprintf(e.key, sizeof e.key, "%s", be.f[BF_KEY]);
		e.kernel = be.f[BF_KERNEL];
		e.format = be.f[BF_FORMAT];
		e.target = be.f[BF_TARGET];
		e.backend = be.f[BF_BACKEND];
		e.compiler_version = be.f[BF_COMPILER];
		e.options = be.f[BF_OPTIONS];
		e.failed = strcmp(be.f[BF_STATUS], "failed") == 0;
		e.log = be.f[BF_LOG];
		e.compile_ms = strtod(be.f[BF_COMPILE_MS], NULL);
		e.created = strtod(be.f[BF_CREATED], NULL);
		e.pinned = be.f[BF_PINNED][0] == '1';
		e.data = be.blob;
		e.len = be.blob_len;
		e.owner = owner;
		isin = e.failed || e.len <= c->inline_max;
		rc = 0;
		if (!isin && (rc = cache_blob_write(c, be.f[BF_DIGEST], e.data,
		    e.len)) == 0) {
			if ((made = realloc(made, (nmade + 1) * sizeof *made))
			    == NULL || (made[nmade++] = strdup(be.f[BF_DIGEST]))
			    == NULL)
				abort();
		}
		if (rc == 0)
			rc = cache_row_put(c, &e, e.failed ?
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" :
			    be.f[BF_DIGEST], isin, &gone, &ngone);
		bundle_entry_free(&be);
		if (rc != 0) {
			snprintf(err, errlen, "cannot import '%s': entry '%s': "
			    "%s; nothing imported", name, e.key,
			    cache_strerror(rc));
			goto out_unlock;
		}
		(*imported)++;
	}
	if ((rc = cache_sqlite_err(cache_exec(c, "COMMIT"))) != 0) {
		snprintf(err, errlen, "cannot import '%s': %s; nothing "
		    "imported", name, cache_strerror(rc));
		goto out_unlock;
	}
	txn = 0;
	for (i = 0; i < ngone; i++)
		cache_blob_unref(c, gone[i]);
out_unlock:
	if (txn) {
		cache_exec(c, "ROLLBACK");
		CACHE_ST_SET(c, entries, entries0);
		CACHE_ST_SET(c, bytes, bytes0);
		for (i = 0; i < nmade; i++)
			cache_blob_unref(c, made[i]);
		*imported = *skipped = 0;
	}
	pthread_mutex_unlock(&c->mu);
	for (i = 0; i < ngone; i++)
		free(gone[i]);
	free(gone);
	for (i = 0; i < nmade; i++)
		free(made[i]);
	free(made);
	return (rc);
}

/* ------------------------------------------------------------ helpers */

void
cache_crypto_init(void)
{
	static pthread_once_t	once = PTHREAD_ONCE_INIT;

	pthread_once(&once, cache_crypto_init_once);
}


int
cache_bundle_tmp_open(struct cache *c, char *err, size_t errlen)
{
	char	dir[PATH_MAX], path[PATH_MAX + 16];
	int	fd, e;

	assert(c != NULL);
	if (c->readonly) {
		snprintf(err, errlen, "cannot create a temp file in cache "
		    "'%s': %s", c->dir, cache_strerror(CACHE_EREADONLY));
		return (CACHE_EREADONLY);
	}
	snprintf(dir, sizeof dir, "%s/tmp", c->dir);
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd == -1 && (errno == EOPNOTSUPP || errno == EISDIR ||
	    errno == EINVAL)) {
		/* No O_TMPFILE here: a name, unlinked at once. */
		snprintf(path, sizeof path, "%s/bundle.XXXXXX", dir);
		if ((fd = mkostemp(path, O_CLOEXEC)) != -1)
			unlink(path);
	}
	if (fd == -1) {
		e = errno;
		snprintf(err, errlen, "cannot create a temp file in '%s': %s",
		    dir, strerror(e));
		return (e == ENOSPC || e == EDQUOT ? CACHE_ENOSPC : CACHE_EIO);
	}
	return (fd);
}
