/*
 * cache_lookup.c: the benchmark's lookup figure: in a cache filled by
 * cache_fill, derive the NEFF key of COUNT random IR digests and read and
 * verify the entry (what nkid does for a Lookup and a disk hit), and print
 * the p50 and p99 in microseconds. Not part of nkid.
 *
 *	cache_lookup DIR N COUNT BACKEND COMPILER_VERSION [SEED [all]]
 *
 * SEED (default 7) picks the digests; with "all" every time is printed too,
 * one per line, before the summary (the benchmark interleaves several runs
 * with the Lookup RPC's and merges them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache.h"

static double
lookup_now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec * 1e6 + ts.tv_nsec / 1e3);
}

static int
lookup_cmp(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return ((x > y) - (x < y));
}

int
main(int argc, char **argv)
{
	struct cache_opts	 o = { 0 };
	struct cache		*c;
	struct cache_entry	 e;
	struct cache_key_input	 in = { 0 };
	char			 err[512], buf[64], digest[CACHE_KEY_LEN + 1];
	char			 neff[CACHE_KEY_LEN + 1];
	double			*t, t0;
	unsigned		 n, count, i, seed = 7;
	int			 all = 0;

	if (argc < 6 || argc > 8 ||
	    (n = (unsigned)strtoul(argv[2], NULL, 10)) == 0 ||
	    (count = (unsigned)strtoul(argv[3], NULL, 10)) == 0) {
		fprintf(stderr, "usage: cache_lookup DIR N COUNT BACKEND "
		    "COMPILER_VERSION [SEED [all]]\n");
		return (2);
	}
	if (argc > 6)
		seed = (unsigned)strtoul(argv[6], NULL, 10);
	all = argc > 7 && strcmp(argv[7], "all") == 0;
	o.dir = argv[1];
	o.backend = argv[4];
	o.compiler_version = argv[5];
	o.defer_check = 1;
	if (cache_open(&c, &o, err, sizeof err) != 0) {
		fprintf(stderr, "cache_lookup: %s\n", err);
		return (1);
	}
	t = calloc(count, sizeof *t);
	srand(seed);
	for (i = 0; i < count; i++) {
		int	k = snprintf(buf, sizeof buf, "ir-%u",
		    (unsigned)rand() % n);

		cache_digest_hex(buf, (size_t)k, digest);
		t0 = lookup_now_us();
		in.format = "nkir/1";
		in.ir_digest = digest;
		in.target = in.options = "";
		in.backend = argv[4];
		in.compiler_version = argv[5];
		cache_key_compute(&in, neff);
		if (cache_get(c, neff, CACHE_GET_DATA | CACHE_GET_TOUCH,
		    &e) != 0) {
			fprintf(stderr, "cache_lookup: %s missing\n", neff);
			cache_close(c);
			return (1);
		}
		t[i] = lookup_now_us() - t0;
		cache_entry_release(&e);
	}
	for (i = 0; all && i < count; i++)
		printf("%.1f\n", t[i]);
	qsort(t, count, sizeof *t, lookup_cmp);
	printf("p50 %.1f p99 %.1f us\n", t[count / 2], t[count * 99 / 100]);
	free(t);
	cache_close(c);
	return (0);
}
