/* job_output.h: where a kernel job's outputs go (the client's shared memory, written in place or copied; warm pooled buffers; the executor's own memory) and who frees them. */
#ifndef NKID_JOB_OUTPUT_H
#define NKID_JOB_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

struct backend_program;
struct shm_set;
struct sim_tensor;

/*
 * The ownership rule: the bytes of output i belong to exactly one of
 *  - the client's region: bufs[i] mapped there (pooled == NULL), or the
 *    outputs copied there (in_shm); nkid never frees them;
 *  - the pool: bufs[i] with pooled[i] != 0, returned by job_output_release
 *    (after the reply, which may read them inline);
 *  - the executor: any other outputs[i].data, freed by job_output_release
 *    while filled is set.
 * Nothing else frees an output's bytes.
 */
struct job_output {
	struct shm_set	*shm;		/* borrowed; NULL: no regions */
	int		 region;	/* output_shm in shm; -1: none */
	uint64_t	 offset;	/* output_shm's range */
	uint64_t	 size;
	size_t		 n;		/* outputs, from job_output_plan */
	uint64_t	*offsets;	/* in the region, if all fit */
	uint64_t	*sizes;
	void		**bufs;		/* where the executor writes; NULL:
					 * anywhere (entries NULL too) */
	size_t		*pooled;	/* set: bufs are the pool's, lengths */
	int		 filled;	/* outputs[] hold the executor's bytes */
	int		 in_shm;	/* the outputs are in the region */
};

/*
 * Start o for outputs that go to region (an index in shm, or -1 for
 * inline) at [offset, offset + size). shm is borrowed and must outlive o.
 */
void	job_output_init(struct job_output *o, struct shm_set *shm, int region,
	    uint64_t offset, uint64_t size);
/*
 * Decide where each output of p goes before the execution: when the
 * region holds them all, map each one's place read-write (o->bufs) so
 * that the executor writes there; else, when in_place (one execution
 * whose outputs travel inline), give the large ones warm buffers from the
 * pool. Any failure leaves o->bufs NULL: the outputs then go where the
 * executor puts them and are copied (job_output_done) or sent inline.
 */
void	job_output_plan(struct job_output *o, const struct backend_program *p,
	    int in_place);
/*
 * After the execution, on its thread: ok says whether outputs[0 .. n-1]
 * were filled. Moves them into the region when they fit and are not there
 * yet (o->in_shm set, the executor's bytes freed); else they stay for an
 * inline reply. Returns -1 with a message in err when the region shrank
 * while nkid used it (the outputs must not be trusted), else 0.
 */
int	job_output_done(struct job_output *o, struct sim_tensor *outputs,
	    int ok, char *err, size_t errlen);
/* Free what o holds and the bytes of outputs (n entries, may be NULL)
 * that are nkid's, by the rule above; o may be released twice. */
void	job_output_release(struct job_output *o, struct sim_tensor *outputs);

#endif /* NKID_JOB_OUTPUT_H */
