/* check_job_output.c: where a kernel job's outputs go (in place, copied, inline, pooled, a region shrunk during the job) and that only nkid's own bytes are ever freed. */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "daemon/backend.h"
#include "daemon/job_output.h"
#include "daemon/outpool.h"
#include "daemon/shm.h"
#include "sim/sim.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("job_output", check_dir_setup, check_dir_teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(errors, 0);

#define REGION	"nkid.test.out"

/* A program of two float32 outputs of n0 and n1 elements. */
struct fake_prog {
	struct backend_program	p;
	struct sim_sig		out[2];
};

static const struct sim_sig *
fake_output(const struct backend_program *p, size_t i)
{
	return (&((const struct fake_prog *)p)->out[i]);
}

static void
fake_prog_init(struct fake_prog *f, uint64_t n0, uint64_t n1)
{
	memset(f, 0, sizeof *f);
	f->p.name = "k";
	f->p.noutputs = 2;
	f->p.output = fake_output;
	f->out[0].dtype = f->out[1].dtype = SIM_DT_FLOAT32;
	f->out[0].rank = f->out[1].rank = 1;
	f->out[0].shape[0] = n0;
	f->out[1].shape[0] = n1;
}

/* A region of size zero bytes in the test's directory, opened writable
 * in a new set; returns its index. */
static int
region_open(struct shm_set **s, uint64_t size)
{
	char	path[512], err[512];
	int	fd, ri;

	snprintf(path, sizeof path, "%s/%s", check_dir, REGION);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
	*s = shm_set_new(check_dir, getuid());
	ri = shm_set_open(*s, REGION, 1, 0, size, err, sizeof err);
	ck_assert_msg(ri >= 0, "%s", err);
	return (ri);
}

/* Byte off of the region file. */
static uint8_t
region_byte(uint64_t off)
{
	char	path[512];
	uint8_t	b = 0xee;
	int	fd;

	snprintf(path, sizeof path, "%s/%s", check_dir, REGION);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &b, 1, (off_t)off), 1);
	close(fd);
	return (b);
}

/* The executor: output i filled with byte v + i, written into bufs[i]
 * when given, else into memory of its own (malloc, as sim_run). */
static void
fake_exec(struct fake_prog *f, struct job_output *o, struct sim_tensor *t,
    uint8_t v)
{
	size_t	i;

	for (i = 0; i < 2; i++) {
		t[i].dtype = SIM_DT_FLOAT32;
		t[i].rank = 1;
		t[i].shape[0] = f->out[i].shape[0];
		t[i].nbytes = f->out[i].shape[0] * 4;
		t[i].data = o->bufs != NULL && o->bufs[i] != NULL ?
		    o->bufs[i] : malloc(t[i].nbytes);
		memset(t[i].data, v + (int)i, t[i].nbytes);
	}
}

CHECK_TEST(core, test_job_output_in_place)
{
	struct fake_prog	 f;
	struct job_output	 o;
	struct sim_tensor	 t[2];
	struct shm_set		*s;
	char			 err[512];
	int			 ri;

	fake_prog_init(&f, 16, 32);
	ri = region_open(&s, 4096);
	job_output_init(&o, s, ri, 0, 4096);
	job_output_plan(&o, &f.p, 1);
	ck_assert_ptr_nonnull(o.bufs);		/* mapped */
	ck_assert_ptr_null(o.pooled);
	ck_assert_uint_eq(o.offsets[1] % SHM_ALIGN, 0);
	fake_exec(&f, &o, t, 7);
	ck_assert_int_eq(job_output_done(&o, t, 1, err, sizeof err), 0);
	ck_assert_int_eq(o.in_shm, 1);
	ck_assert_int_eq(o.filled, 0);
	ck_assert_uint_eq(region_byte(o.offsets[0]), 7);
	ck_assert_uint_eq(region_byte(o.offsets[1] + 127), 8);
	/* The region's bytes are the client's: release frees none. */
	ck_assert_ptr_null(t[0].data);
	job_output_release(&o, t);
	shm_set_free(s);
}
END_TEST

CHECK_TEST(core, test_job_output_copied)
{
	struct fake_prog	 f;
	struct job_output	 o;
	struct sim_tensor	 t[2];
	struct shm_set		*s;
	char			 err[512];
	int			 ri;

	/* Benchmark and Profile run many times: never mapped, copied. */
	fake_prog_init(&f, 16, 32);
	ri = region_open(&s, 4096);
	job_output_init(&o, s, ri, 0, 4096);
	job_output_plan(&o, &f.p, 0);
	ck_assert_ptr_null(o.bufs);
	ck_assert_ptr_nonnull(o.offsets);
	fake_exec(&f, &o, t, 3);
	ck_assert_int_eq(job_output_done(&o, t, 1, err, sizeof err), 0);
	ck_assert_int_eq(o.in_shm, 1);
	ck_assert_uint_eq(region_byte(o.offsets[1]), 4);
	ck_assert_uint_eq(t[1].nbytes, 128);	/* sizes stay for the reply */
	job_output_release(&o, t);
	shm_set_free(s);
}
END_TEST

CHECK_TEST(core, test_job_output_inline_when_the_region_is_small)
{
	struct fake_prog	 f;
	struct job_output	 o;
	struct sim_tensor	 t[2];
	struct shm_set		*s;
	char			 err[512];
	int			 ri;

	fake_prog_init(&f, 16, 32);
	ri = region_open(&s, 128);		/* needs 64 + 128 */
	job_output_init(&o, s, ri, 0, 128);
	job_output_plan(&o, &f.p, 1);
	ck_assert_ptr_null(o.offsets);
	ck_assert_ptr_null(o.bufs);		/* small: not pooled */
	fake_exec(&f, &o, t, 1);
	ck_assert_int_eq(job_output_done(&o, t, 1, err, sizeof err), 0);
	ck_assert_int_eq(o.in_shm, 0);
	ck_assert_int_eq(o.filled, 1);		/* the executor's: freed */
	ck_assert_uint_eq(((uint8_t *)t[0].data)[0], 1);
	job_output_release(&o, t);
	ck_assert_int_eq(o.filled, 0);
	job_output_release(&o, t);		/* twice: harmless */
	shm_set_free(s);
}
END_TEST

CHECK_TEST(core, test_job_output_pooled)
{
	struct fake_prog	 f;
	struct job_output	 o;
	struct sim_tensor	 t[2];
	char			 err[512];
	void			*big;

	/* No region: the large output gets a warm buffer, the small one
	 * the executor's memory; both travel inline. */
	fake_prog_init(&f, OUTPOOL_MIN / 4, 8);
	job_output_init(&o, NULL, -1, 0, 0);
	job_output_plan(&o, &f.p, 1);
	ck_assert_ptr_nonnull(o.pooled);
	ck_assert_uint_eq(o.pooled[0], OUTPOOL_MIN);
	ck_assert_ptr_null(o.bufs[1]);
	big = o.bufs[0];
	fake_exec(&f, &o, t, 9);
	ck_assert_ptr_eq(t[0].data, big);
	ck_assert_int_eq(job_output_done(&o, t, 1, err, sizeof err), 0);
	ck_assert_int_eq(o.in_shm, 0);
	ck_assert_uint_eq(((uint8_t *)t[0].data)[100], 9);
	job_output_release(&o, t);
	/* Back in the pool: the next job of that size takes it. */
	ck_assert_ptr_eq(outpool_get(OUTPOOL_MIN), big);
	outpool_put(big, OUTPOOL_MIN);
	outpool_drain();
}
END_TEST

CHECK_TEST(errors, test_job_output_failed_execution_keeps_nothing)
{
	struct fake_prog	 f;
	struct job_output	 o;
	struct sim_tensor	 t[2];
	struct shm_set		*s;
	char			 err[512];
	int			 ri;

	fake_prog_init(&f, 16, 32);
	ri = region_open(&s, 4096);
	job_output_init(&o, s, ri, 0, 4096);
	job_output_plan(&o, &f.p, 1);
	memset(t, 0, sizeof t);
	ck_assert_int_eq(job_output_done(&o, t, 0, err, sizeof err), 0);
	ck_assert_int_eq(o.in_shm, 0);
	ck_assert_int_eq(o.filled, 0);
	job_output_release(&o, t);
	shm_set_free(s);
}
END_TEST

CHECK_TEST(errors, test_job_output_region_shrunk_during_the_job)
{
	struct fake_prog	 f;
	struct job_output	 o;
	struct sim_tensor	 t[2];
	struct shm_set		*s;
	char			 path[512], err[512];
	int			 ri;

	fake_prog_init(&f, 16, 32);
	ri = region_open(&s, 4096);
	job_output_init(&o, s, ri, 0, 4096);
	job_output_plan(&o, &f.p, 1);
	ck_assert_ptr_nonnull(o.bufs);
	/* The client truncates its region while the executor writes. */
	snprintf(path, sizeof path, "%s/%s", check_dir, REGION);
	ck_assert_int_eq(truncate(path, 0), 0);
	fake_exec(&f, &o, t, 5);
	ck_assert_int_eq(job_output_done(&o, t, 1, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "'" REGION "' shrank"));
	ck_assert_int_eq(o.in_shm, 0);
	job_output_release(&o, t);
	shm_set_free(s);
}
END_TEST
