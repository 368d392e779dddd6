/*
 * cache_fill.c: the benchmark's fixture: fill a cache directory with N
 * entries (1 KiB blobs, inline) under the keys nkid's cpu backend derives,
 * for the 100,000-entry figures. Not part of nkid.
 *
 *	cache_fill DIR N BACKEND COMPILER_VERSION
 *
 * Entry i stands for an IR whose digest is the hex SHA-256 of "ir-<i>"
 * (format nkir/1, no target, no options): its NEFF key is what nkid
 * derives from that digest (cache_key_compute).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"

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

int
main(int argc, char **argv)
{
	struct cache_opts	 o = { 0 };
	struct cache		*c;
	char			 err[512], neff[CACHE_KEY_LEN + 1];
	unsigned char		 blob[1024];
	unsigned		 n, i;

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
	for (i = 0; i < n; i++) {
		struct cache_entry	e = { 0 };

		memset(blob, (int)(i & 0xff), sizeof blob);
		memcpy(blob, &i, sizeof i);
		fill_key(i, argv[3], argv[4], neff);
		memcpy(e.key, neff, sizeof e.key);
		e.kernel = "bench";
		e.format = "nkir/1";
		e.data = blob;
		e.len = sizeof blob;
		if (cache_put(c, &e) != 0) {
			fprintf(stderr, "cache_fill: cannot store entry %u\n", i);
			cache_close(c);
			return (1);
		}
	}
	cache_close(c);
	return (0);
}
