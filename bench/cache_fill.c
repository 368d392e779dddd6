/*
 * cache_fill.c: the benchmark's fixture: fill a cache directory with N
 * entries (1 KiB blobs, inline) under the keys nkid's cpu backend derives,
 * for the figures by cache size (1,000 to 1,000,000 entries). Not part of
 * nkid.
 *
 *	cache_fill DIR N BACKEND COMPILER_VERSION
 *
 * Entry i stands for an IR whose digest is the hex SHA-256 of "ir-<i>"
 * (format nkir/1, no target, no options): its NEFF key is what nkid
 * derives from that digest (cache_key_compute).
 *
 * One cache_put per entry costs one transaction (~16 page writes): a
 * million of them take many minutes. So the entries are written as
 * bundles (docs/cache.md, "Bundles") of up to FILL_CHUNK entries in DIR's
 * tmp/, each imported in one transaction (cache_bundle_import), which
 * checks them as any import would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cache/cache.h"

#define FILL_CHUNK	100000
#define FILL_BLOB	1024

struct fill_out {
	FILE		*f;
	EVP_MD_CTX	*md;
};

static void
fill_key(unsigned i, const char *backend, const char *compiler, char *key)
{
	struct cache_key_input	 in = { 0 };
	char			 buf[64], digest[CACHE_KEY_LEN + 1];
	int			 n = snprintf(buf, sizeof buf, "ir-%u", i);

	cache_digest_hex(buf, (size_t)n, digest);
	in.format = "nkir/1";
	in.ir_digest = digest;
	in.target = "";
	in.options = "";
	in.backend = backend;
	in.compiler_version = compiler;
	cache_key_compute(&in, key);
}

static void
fill_write(struct fill_out *o, const void *p, size_t n)
{
	if (fwrite(p, 1, n, o->f) != n) {
		perror("cache_fill: write");
		exit(1);
	}
	EVP_DigestUpdate(o->md, p, n);
}

static void
fill_u32(struct fill_out *o, uint32_t v)
{
	unsigned char	b[4] = { v, v >> 8, v >> 16, v >> 24 };

	fill_write(o, b, sizeof b);
}

static void
fill_u64(struct fill_out *o, uint64_t v)
{
	fill_u32(o, (uint32_t)v);
	fill_u32(o, (uint32_t)(v >> 32));
}

static void
fill_field(struct fill_out *o, const char *s)
{
	fill_u32(o, (uint32_t)strlen(s));
	fill_write(o, s, strlen(s));
}

/* Entries first .. first + n - 1 as a bundle at path. */
static void
fill_bundle(const char *path, unsigned first, unsigned n, const char *backend,
    const char *compiler)
{
	struct fill_out	 o;
	unsigned char	 blob[FILL_BLOB], sum[EVP_MAX_MD_SIZE];
	char		 key[CACHE_KEY_LEN + 1], digest[CACHE_KEY_LEN + 1];
	const char	*fields[13];
	unsigned	 i, k, sumlen;
	uint32_t	 meta;

	if ((o.f = fopen(path, "wb")) == NULL) {
		perror(path);
		exit(1);
	}
	o.md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(o.md, EVP_sha256(), NULL);
	fill_write(&o, "NKIDBDL1", 8);
	fill_u32(&o, 1);
	fill_u32(&o, n);
	for (i = first; i < first + n; i++) {
		memset(blob, (int)(i & 0xff), sizeof blob);
		memcpy(blob, &i, sizeof i);
		fill_key(i, backend, compiler, key);
		cache_digest_hex(blob, sizeof blob, digest);
		fields[0] = key;
		fields[1] = "bench";
		fields[2] = "nkir/1";
		fields[3] = "";
		fields[4] = backend;
		fields[5] = compiler;
		fields[6] = "";
		fields[7] = digest;
		fields[8] = "ok";
		fields[9] = "";
		fields[10] = "0";
		fields[11] = "0";
		fields[12] = "0";
		for (meta = 0, k = 0; k < 13; k++)
			meta += 4 + (uint32_t)strlen(fields[k]);
		fill_u32(&o, meta);
		for (k = 0; k < 13; k++)
			fill_field(&o, fields[k]);
		fill_u64(&o, sizeof blob);
		fill_write(&o, blob, sizeof blob);
	}
	EVP_DigestFinal_ex(o.md, sum, &sumlen);
	EVP_MD_CTX_free(o.md);
	if (fwrite("NKIDEND1", 1, 8, o.f) != 8 ||
	    fwrite(sum, 1, sumlen, o.f) != sumlen || fclose(o.f) != 0) {
		perror(path);
		exit(1);
	}
}

int
main(int argc, char **argv)
{
	struct cache_opts	 o = { 0 };
	struct cache		*c;
	char			 err[512], path[4096];
	unsigned		 n, i, chunk, imported, skipped;

	if (argc != 5 || (n = (unsigned)strtoul(argv[2], NULL, 10)) == 0) {
		fprintf(stderr, "usage: cache_fill DIR N BACKEND "
		    "COMPILER_VERSION\n");
		return (2);
	}
	o.dir = argv[1];
	o.backend = argv[3];
	o.compiler_version = argv[4];
	if (cache_open(&c, &o, err, sizeof err) != 0) {
		fprintf(stderr, "cache_fill: %s\n", err);
		return (1);
	}
	snprintf(path, sizeof path, "%s/tmp/cache_fill.bundle", argv[1]);
	for (i = 0; i < n; i += chunk) {
		chunk = n - i < FILL_CHUNK ? n - i : FILL_CHUNK;
		fill_bundle(path, i, chunk, argv[3], argv[4]);
		if (cache_bundle_import(c, path, &imported, &skipped, err,
		    sizeof err) != 0 || imported != chunk) {
			fprintf(stderr, "cache_fill: %s\n", err);
			unlink(path);
			cache_close(c);
			return (1);
		}
	}
	unlink(path);
	cache_close(c);
	return (0);
}
