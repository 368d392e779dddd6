/*
 * fuzz_nkir.c: libFuzzer target for the NKIR executor: parse, validate and
 * lower arbitrary bytes, then load the image and run it on zero inputs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

/* Kernels with bigger inputs or more work are not run (only compiled). */
#define FUZZ_RUN_BYTES_MAX  (1u << 22)
#define FUZZ_RUN_COST_MAX   (1u << 24)

static void
fuzz_nkir_print_cb(void *arg, const char *text, size_t len)
{
	(void)arg;
	(void)text;
	(void)len;
}

static void
fuzz_nkir_run(const struct sim_program *p)
{
	size_t np = sim_program_nparams(p), no = sim_program_noutputs(p);
	struct sim_tensor *in = calloc(np + 1, sizeof(*in));
	struct sim_tensor *out = calloc(no + 1, sizeof(*out));
	struct sim_run_opts opts = { .print_cb = fuzz_nkir_print_cb };
	size_t total = 0;
	struct sim_diag d;

	if (in == NULL || out == NULL || sim_program_cost(p) > FUZZ_RUN_COST_MAX)
		goto done;
	for (size_t i = 0; i < np; i++) {
		const struct sim_sig *s = sim_program_param(p, i);
		size_t n = sim_dtype_size(s->dtype);

		in[i].dtype = s->dtype;
		in[i].rank = s->rank;
		for (int k = 0; k < s->rank; k++) {
			in[i].shape[k] = s->shape[k];
			n *= s->shape[k];
		}
		total += n;
		if (n > FUZZ_RUN_BYTES_MAX || total > FUZZ_RUN_BYTES_MAX)
			goto done;
		in[i].nbytes = n;
		in[i].data = calloc(1, n ? n : 1);
		if (in[i].data == NULL)
			goto done;
	}
	if (sim_run(p, in, np, out, no, &opts, &d) == 0)
		sim_tensors_release(out, no);
done:
	for (size_t i = 0; in != NULL && i < np; i++)
		free(in[i].data);
	free(in);
	free(out);
}

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
		fuzz_nkir_run(p);
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
