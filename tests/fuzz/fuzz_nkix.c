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

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	if (size < SIM_IMAGE_HEADER)
		return (0);
	/* The same image with a consistent magic, length and checksum. */
	if ((img = malloc(size)) == NULL)
		return (0);
	memcpy(img, data, size);
	sim_image_seal(img, size);
	fuzz_nkix_load(img, size);
	free(img);
	return (0);
}
