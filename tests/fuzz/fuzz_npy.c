/*
 * fuzz_npy.c: libFuzzer target for nkictl's .npy reader (npy_array_parse):
 * any bytes get an array or a message, never a crash; a parsed array
 * written back and parsed again gives the same array.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/nkictl/npy.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Arrays larger than this are not written back (a round trip per input). */
#define FUZZ_NPY_WRITE_MAX	(1u << 20)

static char	fuzz_npy_path[64];

static void
fuzz_npy_roundtrip(const struct npy_array *a)
{
	struct npy_array	b;
	char			err[512];

	if (a->nbytes > FUZZ_NPY_WRITE_MAX || a->dtype[0] == '\0')
		return;
	if (fuzz_npy_path[0] == '\0')
		snprintf(fuzz_npy_path, sizeof fuzz_npy_path,
		    "/tmp/nkid-fuzz-npy.%ld.npy", (long)getpid());
	if (npy_array_write(fuzz_npy_path, a->dtype, a->rank, a->shape,
	    a->data, a->nbytes, err, sizeof err) != 0)
		return;		/* e.g. /tmp full: not the parser's fault */
	if (npy_array_read(fuzz_npy_path, &b, err, sizeof err) != 0) {
		fprintf(stderr, "fuzz_npy: written array unreadable: %s\n",
		    err);
		abort();
	}
	if (strcmp(a->dtype, b.dtype) != 0 || a->rank != b.rank ||
	    a->nbytes != b.nbytes || memcmp(a->shape, b.shape,
	    sizeof(a->shape[0]) * (size_t)a->rank) != 0 ||
	    (a->nbytes > 0 && memcmp(a->data, b.data, a->nbytes) != 0)) {
		fprintf(stderr, "fuzz_npy: round trip changed the array\n");
		abort();
	}
	npy_array_release(&b);
	unlink(fuzz_npy_path);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct npy_array	a;
	char			err[512];

	memset(&a, 0, sizeof a);
	if (npy_array_parse(data, size, "fuzz.npy", &a, err, sizeof err) !=
	    0) {
		if (err[0] == '\0')
			abort();	/* a failure must say why */
		return (0);
	}
	fuzz_npy_roundtrip(&a);
	npy_array_release(&a);
	return (0);
}
