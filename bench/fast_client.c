/*
 * fast_client.c: the benchmark's fast-path client: COUNT calls of a
 * method over nkid's fast path (client/libnkid), printing p50 and p99
 * round trips in microseconds, as echo_client does over gRPC.
 *
 *	fast_client SOCKET METHOD COUNT [REQUEST_FILE]
 *
 * METHOD is a fast-path method's name (Ping, Run, ...); the request is
 * empty, or the bytes of REQUEST_FILE (e.g. a serialized RunRequest).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/libnkid/nkid_fastpath.h"

static double
fast_now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec * 1e6 + ts.tv_nsec / 1e3);
}

static int
fast_cmp(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return ((x > y) - (x < y));
}

int
main(int argc, char **argv)
{
	static const char *names[] = { "", "Ping", "Run", "Simulate",
	    "Lookup", "Compile", "Status" };
	struct nkid_fastpath		*fp;
	struct nkid_fastpath_reply	 r;
	char				 err[512];
	char				*req = NULL;
	double				*lat, t0;
	long				 n = 0;
	unsigned			 method = 0, i;
	int				 count, failed = 0, rc;
	FILE				*f;

	if ((argc != 4 && argc != 5) || (count = atoi(argv[3])) <= 0) {
		fprintf(stderr, "usage: fast_client SOCKET METHOD COUNT "
		    "[REQUEST_FILE]\n");
		return (2);
	}
	for (i = 1; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(argv[2], names[i]) == 0)
			method = i;
	if (method == 0) {
		fprintf(stderr, "fast_client: '%s' is not on the fast path\n",
		    argv[2]);
		return (2);
	}
	if (argc == 5) {
		if ((f = fopen(argv[4], "rb")) == NULL ||
		    fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
		    fseek(f, 0, SEEK_SET) != 0 ||
		    (req = malloc(n > 0 ? (size_t)n : 1)) == NULL ||
		    fread(req, 1, (size_t)n, f) != (size_t)n) {
			fprintf(stderr, "fast_client: cannot read '%s'\n",
			    argv[4]);
			return (1);
		}
		fclose(f);
	}
	if (nkid_fastpath_open(argv[1], &fp, err, sizeof err) != 0) {
		fprintf(stderr, "fast_client: %s\n", err);
		return (1);
	}
	lat = calloc((size_t)count, sizeof *lat);
	for (i = 0; i < (unsigned)count; i++) {
		t0 = fast_now_us();
		rc = nkid_fastpath_call(fp, method, req, (size_t)n, 0, &r);
		lat[i] = fast_now_us() - t0;
		if (rc != 0) {
			fprintf(stderr, "fast_client: %s\n",
			    nkid_fastpath_strerror(rc));
			return (1);
		}
		if (r.status != 0) {
			if (failed++ == 0)
				fprintf(stderr, "fast_client: status %d: %.*s\n",
				    r.status, (int)r.message_len, r.message);
		}
	}
	qsort(lat, (size_t)count, sizeof *lat, fast_cmp);
	printf("count %d failed %d p50 %.1f p99 %.1f us\n", count, failed,
	    lat[count / 2], lat[(int)(count * 0.99)]);
	free(lat);
	free(req);
	nkid_fastpath_close(fp);
	return (failed ? 1 : 0);
}
