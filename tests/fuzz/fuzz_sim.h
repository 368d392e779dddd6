/*
 * fuzz_sim.h: run a loaded program on zero inputs, as the fuzz targets of
 * the executor do, when its inputs and work are small enough.
 */
#ifndef NKID_FUZZ_SIM_H
#define NKID_FUZZ_SIM_H

#include <stdlib.h>

#include "sim/sim.h"

/* Kernels with bigger inputs or more work are not run (only loaded). */
#define FUZZ_RUN_BYTES_MAX	(1u << 22)
#define FUZZ_RUN_COST_MAX	(1u << 24)

static void
fuzz_sim_print_cb(void *arg, const char *text, size_t len)
{
	(void)arg;
	(void)text;
	(void)len;
}

static inline void
fuzz_sim_run(const struct sim_program *p)
{
	size_t			 np = sim_program_nparams(p);
	size_t			 no = sim_program_noutputs(p);
	struct sim_tensor	*in = calloc(np + 1, sizeof(*in));
	struct sim_tensor	*out = calloc(no + 1, sizeof(*out));
	struct sim_run_opts	 opts = { .print_cb = fuzz_sim_print_cb };
	size_t			 i, n, total = 0;
	struct sim_diag		 d;
	int			 k;

	if (in == NULL || out == NULL || sim_program_cost(p) >
	    FUZZ_RUN_COST_MAX)
		goto done;
	for (i = 0; i < np; i++) {
		const struct sim_sig *s = sim_program_param(p, i);

		n = sim_dtype_size(s->dtype);
		in[i].dtype = s->dtype;
		in[i].rank = s->rank;
		for (k = 0; k < s->rank; k++) {
			in[i].shape[k] = s->shape[k];
			n *= s->shape[k];
		}
		total += n;
		if (n > FUZZ_RUN_BYTES_MAX || total > FUZZ_RUN_BYTES_MAX)
			goto done;
		in[i].nbytes = n;
		if ((in[i].data = calloc(1, n ? n : 1)) == NULL)
			goto done;
	}
	if (sim_run(p, in, np, out, no, &opts, &d) == 0)
		sim_tensors_release(out, no);
done:
	for (i = 0; in != NULL && i < np; i++)
		free(in[i].data);
	free(in);
	free(out);
}

#endif /* NKID_FUZZ_SIM_H */
