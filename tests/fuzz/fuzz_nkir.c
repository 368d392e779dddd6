/*
 * fuzz_nkir.c: libFuzzer target for the NKIR executor: parse, validate and
 * lower arbitrary bytes, then load the image and run it on zero inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/fuzz/fuzz_sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_program *p = NULL;
	size_t ilen = 0;
	void *img = NULL;
	struct sim_diag d;

	if (sim_compile(data, size, &img, &ilen, &d) != 0)
		return 0;
	if (sim_program_load(img, ilen, &p, &d) == 0) {
		fuzz_sim_run(p);
		sim_program_free(p);
	}
	/* a flipped image byte must be rejected, never crash */
	if (ilen > 0) {
		((uint8_t *)img)[size % ilen] ^= 0x5a;
		if (sim_program_load(img, ilen, &p, &d) == 0)
			sim_program_free(p);
	}
	free(img);
	return 0;
}
