/*
 * fuzz_nkix.c: libFuzzer target for the cpu backend's executable image
 * ("NKIX", sim_program_load): the bytes as they come, then with the
 * header's length and checksum repaired so that the parser behind them is
 * reached; a loaded program is run on zero inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/fuzz/fuzz_sim.h"

#define FUZZ_NKIX_HEADER	32u	/* sim.c's SIM_IMAGE_HEADER */

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t
fuzz_nkix_fnv1a(const uint8_t *p, size_t n)
{
	uint64_t	h = 0xcbf29ce484222325ull;
	size_t		i;

	for (i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return (h);
}

static void
fuzz_nkix_put64(uint8_t *p, uint64_t v)
{
	int	i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
fuzz_nkix_load(const uint8_t *img, size_t len)
{
	struct sim_program	*p = NULL;
	struct sim_diag		 d;

	if (sim_program_load(img, len, &p, &d) == 0) {
		fuzz_sim_run(p);
		sim_program_free(p);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t	*img;

	fuzz_nkix_load(data, size);
	if (size < FUZZ_NKIX_HEADER)
		return (0);
	/* The same image with a consistent length and checksum. */
	if ((img = malloc(size)) == NULL)
		return (0);
	memcpy(img, data, size);
	memcpy(img, "NKIX", 4);
	fuzz_nkix_put64(img + 16, size - FUZZ_NKIX_HEADER);
	fuzz_nkix_put64(img + 24, fuzz_nkix_fnv1a(img + FUZZ_NKIX_HEADER,
	    size - FUZZ_NKIX_HEADER));
	fuzz_nkix_load(img, size);
	free(img);
	return (0);
}
