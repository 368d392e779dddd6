/* check_backend_cpu.c: the cpu backend through its ops, and Compile/Run/Simulate end to end through dispatch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <grpc/grpc.h>
#include <uv.h>

#include "nkid.pb-c.h"
#include "nkir.pb-c.h"

#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "tests/unit/fake_call.h"
#include "tests/unit/nkir_fixture.h"
#include "tests/unit/check_main.h"

static uv_loop_t	loop;
static struct daemon	d;

/* ------------------------------------------------------------ fixtures */

static void
setup(void)
{
	fake_daemon_open(&d, &loop, "{\"cpu\": {\"cores\": 2}}", NULL);
}

static void
teardown(void)
{
	fake_daemon_close(&d);
}

CHECK_SUITE("backend_cpu", setup, teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(limits, 0);
CHECK_TCASE(errors, 0);
CHECK_TCASE(recovery, 0);

static float	in_a[P * F], in_b[P * F];

static void
inputs_fill(void)
{
	int	i;

	for (i = 0; i < P * F; i++) {
		in_a[i] = (float)i * 0.5f;
		in_b[i] = 1000.0f - (float)i;
	}
}

/* tensor_add's IR and its inputs a and b on the wire, for a kernel RPC. */
struct wire_kernel {
	Nkid__V1__KernelRef	 ref;
	Nkid__V1__Kernel	 k;
	Nkid__V1__Tensor	 t[2], *tp[2];
	uint64_t		 shape[2];
	uint8_t			*ir;
	size_t			 len;
};

/* Point the kernel request req (Run, Simulate, ...) at w. */
#define WIRE_REQUEST_SET(req, w) do {					\
	(req)->ref = &(w)->ref;						\
	(req)->n_inputs = 2;						\
	(req)->inputs = (w)->tp;					\
} while (0)

/* Fill w; ir_tensor_add()'s arguments.  wire_kernel_release() frees. */
static void
wire_kernel_init(struct wire_kernel *w, int with_print, int partitions)
{
	int	i;

	nkid__v1__kernel_ref__init(&w->ref);
	nkid__v1__kernel__init(&w->k);
	w->ir = ir_tensor_add(&w->len, with_print, partitions);
	fake_kernel_ref(&w->ref, &w->k, "nkir/1", w->ir, w->len);
	inputs_fill();
	w->shape[0] = P;
	w->shape[1] = F;
	for (i = 0; i < 2; i++) {
		nkid__v1__tensor__init(&w->t[i]);
		w->t[i].name = i == 0 ? "a" : "b";
		w->t[i].dtype = "float32";
		w->t[i].n_shape = 2;
		w->t[i].shape = w->shape;
		w->t[i].data.data = (uint8_t *)(i == 0 ? in_a : in_b);
		w->t[i].data.len = sizeof in_a;
		w->tp[i] = &w->t[i];
	}
}

static void
wire_kernel_release(struct wire_kernel *w)
{
	free(w->ir);
}

static void
check_sum(const Nkid__V1__Tensor *out)
{
	const float	*o;
	int		 i;

	ck_assert_str_eq(out->name, "out");
	ck_assert_str_eq(out->dtype, "float32");
	ck_assert_uint_eq(out->n_shape, 2);
	ck_assert_uint_eq(out->shape[0], P);
	ck_assert_uint_eq(out->data.len, sizeof in_a);
	o = (const float *)out->data.data;
	for (i = 0; i < P * F; i++)
		ck_assert_float_eq(o[i], in_a[i] + in_b[i]);
}

/*
 * The tensor_add program loaded on the cpu backend, and its inputs a and b
 * executed into one output.
 */
struct prog {
	struct backend		*b;
	struct backend_program	*p;
	void			*image;
	struct sim_tensor	 in[2], out[1];
	struct backend_exec	 x;
	char			 diag[BACKEND_DIAG_LEN];
};

/*
 * Compile and load tensor_add into g and fill its inputs: [P, F] float32,
 * with their data unless shapes_only.  prog_unload() undoes it.
 */
static void
prog_load(struct prog *g, int shapes_only)
{
	size_t	 len, image_len;
	uint8_t	*ir = ir_tensor_add(&len, 0, P);
	int	 i;

	memset(g, 0, sizeof *g);
	g->b = d.backend;
	ck_assert_msg(backend_compile(g->b, ir, len, "", "", &g->image,
	    &image_len, g->diag) == 0, "%s", g->diag);
	ck_assert_uint_gt(image_len, 0);
	ck_assert_msg(g->b->ops->load(g->b->state, g->image, image_len, &g->p,
	    g->diag) == 0, "%s", g->diag);
	free(ir);
	inputs_fill();
	for (i = 0; i < 2; i++) {
		g->in[i].dtype = SIM_DT_FLOAT32;
		g->in[i].rank = 2;
		g->in[i].shape[0] = P;
		g->in[i].shape[1] = F;
		if (!shapes_only)
			g->in[i].data = i == 0 ? in_a : in_b;
		g->in[i].nbytes = sizeof in_a;
	}
	g->x.inputs = g->in;
	g->x.ninputs = 2;
	g->x.outputs = g->out;
	g->x.noutputs = 1;
}

static void
prog_unload(struct prog *g)
{
	g->b->ops->unload(g->b->state, g->p);
	free(g->image);
}

/* The backend's output out holds a + b. */
static void
check_sim_sum(const struct sim_tensor *out)
{
	int	i;

	ck_assert_uint_eq(out->nbytes, sizeof in_a);
	for (i = 0; i < P * F; i++)
		ck_assert_float_eq(((float *)out->data)[i], in_a[i] + in_b[i]);
}

/* ------------------------------------------------------------ ops */

CHECK_TEST(core, test_backend_cpu_compile_execute)
{
	struct prog	g;

	ck_assert_str_eq(d.backend->ops->name, "cpu");
	ck_assert_uint_eq(d.backend->ncores, 2);
	prog_load(&g, 0);
	ck_assert_str_eq(g.p->name, "tensor_add");
	ck_assert_uint_eq(g.p->nparams, 2);
	ck_assert_uint_eq(g.p->noutputs, 1);
	ck_assert_str_eq(g.p->param(g.p, 0)->name, "a");

	ck_assert_msg(g.b->ops->execute(g.b->state, g.p, 1, &g.x, g.diag) == 0,
	    "%s", g.diag);
	check_sim_sum(&g.out[0]);
	sim_tensors_release(g.out, 1);
	prog_unload(&g);
}
END_TEST

CHECK_TEST(limits, test_backend_cpu_partition_limit)
{
	struct backend	*b = d.backend;
	void		*image = NULL;
	size_t		 len, image_len;
	uint8_t		*ir = ir_tensor_add(&len, 0, 256);
	char		 diag[BACKEND_DIAG_LEN] = "";

	ck_assert_int_eq(backend_compile(b, ir, len, "", "", &image, &image_len,
	    diag), BACKEND_EINVAL);
	ck_assert_ptr_null(image);
	ck_assert_msg(strstr(diag, "256") != NULL && strstr(diag, "128") !=
	    NULL, "%s", diag);
	free(ir);
}
END_TEST

CHECK_TEST(errors, test_backend_cpu_bad_args)
{
	struct prog	g;
	int		i;

	prog_load(&g, 0);
	for (i = 0; i < 2; i++) {
		g.in[i].rank = 1;
		g.in[i].shape[0] = 4;
		g.in[i].shape[1] = 0;
		g.in[i].data = in_a;
		g.in[i].nbytes = 16;
	}
	ck_assert_int_eq(g.b->ops->execute(g.b->state, g.p, 0, &g.x, g.diag),
	    BACKEND_EARG);
	ck_assert_msg(strstr(g.diag, "a") != NULL, "%s", g.diag);
	prog_unload(&g);
}
END_TEST

CHECK_TEST(errors, test_backend_cpu_truncated_image)
{
	struct backend		*b = d.backend;
	struct backend_program	*p = NULL;
	void			*image = NULL;
	size_t			 len, image_len;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);
	char			 diag[BACKEND_DIAG_LEN] = "";

	ck_assert_int_eq(backend_compile(b, ir, len, "", "", &image, &image_len,
	    diag), 0);
	ck_assert_int_ne(b->ops->load(b->state, image, image_len / 2, &p,
	    diag), 0);
	ck_assert_ptr_null(p);
	/* Truncated IR too. */
	free(image);
	image = NULL;
	ck_assert_int_ne(backend_compile(b, ir, len / 2, "", "", &image,
	    &image_len, diag), 0);
	free(image);
	free(ir);
}
END_TEST

/* ------------------------------------------------------------ rpcs */

CHECK_TEST(core, test_backend_cpu_compile_then_run_by_key)
{
	Nkid__V1__CompileRequest creq = NKID__V1__COMPILE_REQUEST__INIT;
	Nkid__V1__RunRequest	 rreq = NKID__V1__RUN_REQUEST__INIT;
	Nkid__V1__CompileReply	*crep;
	Nkid__V1__RunReply	*rrep;
	struct wire_kernel	 w;
	char			 key[65];

	wire_kernel_init(&w, 0, P);
	creq.ref = &w.ref;
	crep = fake_call_reply(&d, "Compile", &creq.base,
	    &nkid__v1__compile_reply__descriptor);
	ck_assert_uint_eq(strlen(crep->neff_key), 64);
	ck_assert(!crep->cache_hit);
	ck_assert_str_eq(crep->kernel_name, "tensor_add");
	strcpy(key, crep->neff_key);
	nkid__v1__compile_reply__free_unpacked(crep, NULL);

	/* Same IR again: a hit with the same key. */
	crep = fake_call_reply(&d, "Compile", &creq.base,
	    &nkid__v1__compile_reply__descriptor);
	ck_assert(crep->cache_hit);
	ck_assert_str_eq(crep->neff_key, key);
	nkid__v1__compile_reply__free_unpacked(crep, NULL);

	/* Run by key only. */
	w.ref.kernel = NULL;
	w.ref.neff_key = key;
	WIRE_REQUEST_SET(&rreq, &w);
	rreq.core = -1;
	rrep = fake_call_reply(&d, "Run", &rreq.base,
	    &nkid__v1__run_reply__descriptor);
	ck_assert_uint_eq(rrep->n_outputs, 1);
	check_sum(rrep->outputs[0]);
	ck_assert(rrep->cache_hit);
	ck_assert_str_eq(rrep->neff_key, key);
	ck_assert_uint_gt(rrep->job_id, 0);
	nkid__v1__run_reply__free_unpacked(rrep, NULL);
	wire_kernel_release(&w);
}
END_TEST

CHECK_TEST(core, test_backend_cpu_simulate_prints)
{
	Nkid__V1__SimulateRequest req = NKID__V1__SIMULATE_REQUEST__INIT;
	Nkid__V1__SimulateReply	*rep;
	struct wire_kernel	 w;

	wire_kernel_init(&w, 1, P);
	WIRE_REQUEST_SET(&req, &w);
	rep = fake_call_reply(&d, "Simulate", &req.base,
	    &nkid__v1__simulate_reply__descriptor);
	ck_assert_uint_eq(rep->n_outputs, 1);
	check_sum(rep->outputs[0]);
	ck_assert_msg(strstr(rep->device_print, "sum") != NULL, "'%s'",
	    rep->device_print);
	nkid__v1__simulate_reply__free_unpacked(rep, NULL);
	wire_kernel_release(&w);
}
END_TEST

CHECK_TEST(errors, test_backend_cpu_run_compile_error_message)
{
	Nkid__V1__RunRequest	 req = NKID__V1__RUN_REQUEST__INIT;
	struct wire_kernel	 w;
	struct fake_call	 fc;

	wire_kernel_init(&w, 0, 256);
	WIRE_REQUEST_SET(&req, &w);
	req.core = -1;
	fake_call_msg(&fc, &d, "Run", &req.base);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_INVALID_ARGUMENT);
	ck_assert_msg(strncmp(fc.rc.message, "cannot compile 'tensor_add': ",
	    29) == 0, "%s", fc.rc.message);
	ck_assert_msg(strstr(fc.rc.message, "kernel.py:7") != NULL, "%s",
	    fc.rc.message);
	fake_call_release(&fc);
	wire_kernel_release(&w);
}
END_TEST

CHECK_TEST(recovery, test_backend_cpu_run_cancelled_before_start)
{
	Nkid__V1__RunRequest	 req = NKID__V1__RUN_REQUEST__INIT;
	struct wire_kernel	 w;
	struct fake_call	 fc;

	wire_kernel_init(&w, 0, P);
	WIRE_REQUEST_SET(&req, &w);
	req.core = 0;
	fake_call_start_msg(&fc, &d, "Run", &req.base);
	/* The client goes away while the kernel compiles. */
	dispatch_call_cancel(&fc.rc);
	fake_call_wait(&fc);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_CANCELLED);
	fake_call_release(&fc);
	wire_kernel_release(&w);
}
END_TEST

CHECK_TEST(recovery, test_backend_cpu_serves_after_bad_kernel)
{
	Nkid__V1__SimulateRequest req = NKID__V1__SIMULATE_REQUEST__INIT;
	struct wire_kernel	 w;

	wire_kernel_init(&w, 0, P);
	WIRE_REQUEST_SET(&req, &w);
	w.k.ir.len = w.len / 3;		/* truncated */
	fake_call_expect(&d, "Simulate", &req.base,
	    GRPC_STATUS_INVALID_ARGUMENT, NULL);
	w.k.ir.len = w.len;
	fake_call_expect(&d, "Simulate", &req.base, GRPC_STATUS_OK, NULL);
	wire_kernel_release(&w);
}
END_TEST

/* ------------------------------------------------------------ benchmark, profile */

CHECK_TEST(core, test_backend_cpu_benchmark_shapes_only)
{
	struct prog		 g;
	struct sim_tensor	 out2[1];
	double			 samples[5];
	int			 i;

	prog_load(&g, 1);
	for (i = 0; i < 5; i++)
		samples[i] = -1;
	ck_assert_msg(g.b->ops->benchmark(g.b->state, g.p, 0, &g.x, 3, 5,
	    samples, g.diag) == 0, "%s", g.diag);
	for (i = 0; i < 5; i++)
		ck_assert(samples[i] > 0);
	/* The backend's values: deterministic, in [-1, 1), a + b in [-2, 2). */
	for (i = 0; i < P * F; i++)
		ck_assert(fabsf(((float *)g.out[0].data)[i]) < 2.0f);
	g.x.outputs = out2;
	memset(out2, 0, sizeof out2);
	ck_assert(g.b->ops->benchmark(g.b->state, g.p, 1, &g.x, 0, 1, samples,
	    g.diag) == 0);
	ck_assert_mem_eq(g.out[0].data, out2[0].data, g.out[0].nbytes);
	ck_assert(g.in[0].data == NULL);
	sim_tensors_release(g.out, 1);
	sim_tensors_release(out2, 1);
	prog_unload(&g);
}
END_TEST

CHECK_TEST(core, test_backend_cpu_profile_traces)
{
	struct prog		 g;
	struct backend_trace	*t = NULL;
	size_t			 nt = 0;
	char			*s;

	prog_load(&g, 0);
	ck_assert_msg(g.b->ops->profile(g.b->state, g.p, 0, &g.x, 7, 3, &t,
	    &nt, g.diag) == 0, "%s", g.diag);
	ck_assert_uint_eq(nt, 2);
	ck_assert_uint_eq(t[0].execution, 3);
	ck_assert_uint_eq(t[1].execution, 6);
	check_sim_sum(&g.out[0]);
	s = strndup(t[0].trace, t[0].trace_len);
	ck_assert_ptr_nonnull(strstr(s, "\"traceEvents\":["));
	ck_assert_ptr_nonnull(strstr(s, "\"name\":\"thread_name\""));
	ck_assert_ptr_nonnull(strstr(s, "\"name\":\"load\",\"cat\":\"dma\","
	    "\"ph\":\"X\""));
	ck_assert_ptr_nonnull(strstr(s, "\"file\":\"kernel.py\""));
	ck_assert(s[t[0].trace_len - 2] == '}');
	free(s);
	ck_assert_ptr_nonnull(strstr(t[0].summary_json, "\"execution\":3"));
	ck_assert_ptr_nonnull(strstr(t[0].summary_json, "{\"op\":\"load\","
	    "\"engine\":\"dma\",\"file\":\"kernel.py\""));
	backend_traces_free(t, nt);
	sim_tensors_release(g.out, 1);

	/* num_execs < profile_nth: profile_nth's execution alone. */
	memset(g.out, 0, sizeof g.out);
	ck_assert(g.b->ops->profile(g.b->state, g.p, 1, &g.x, 1, 4, &t, &nt,
	    g.diag) == 0);
	ck_assert_uint_eq(nt, 1);
	ck_assert_uint_eq(t[0].execution, 4);
	backend_traces_free(t, nt);
	sim_tensors_release(g.out, 1);
	ck_assert_int_eq(g.b->ops->profile(g.b->state, g.p, 0, &g.x, 1, 0, &t,
	    &nt, g.diag), BACKEND_EARG);
	prog_unload(&g);
}
END_TEST

CHECK_TEST(core, test_backend_cpu_rpc_benchmark)
{
	Nkid__V1__BenchmarkRequest req = NKID__V1__BENCHMARK_REQUEST__INIT;
	Nkid__V1__BenchmarkReply *rep;
	struct wire_kernel	 w;
	size_t			 i;

	wire_kernel_init(&w, 0, P);
	w.t[1].data.data = NULL;	/* shapes only */
	w.t[1].data.len = 0;
	WIRE_REQUEST_SET(&req, &w);
	req.warmup = 2;
	req.iters = 9;
	req.core = -1;
	rep = fake_call_reply(&d, "Benchmark", &req.base,
	    &nkid__v1__benchmark_reply__descriptor);
	ck_assert_uint_eq(rep->n_samples_us, 9);
	ck_assert_uint_eq(rep->n_percentiles, 8);
	ck_assert_double_eq(rep->percentiles[0]->p, 0);
	ck_assert_double_eq(rep->percentiles[7]->p, 100);
	for (i = 1; i < 8; i++)
		ck_assert(rep->percentiles[i]->us >=
		    rep->percentiles[i - 1]->us);
	ck_assert_uint_gt(rep->job_id, 0);
	ck_assert_uint_eq(strlen(rep->neff_key), 64);
	nkid__v1__benchmark_reply__free_unpacked(rep, NULL);

	/* One timed execution: no percentiles. */
	req.iters = 1;
	rep = fake_call_reply(&d, "Benchmark", &req.base,
	    &nkid__v1__benchmark_reply__descriptor);
	ck_assert_uint_eq(rep->n_percentiles, 0);
	ck_assert_uint_eq(rep->n_samples_us, 1);
	nkid__v1__benchmark_reply__free_unpacked(rep, NULL);

	req.iters = 0;
	fake_call_expect(&d, "Benchmark", &req.base,
	    GRPC_STATUS_INVALID_ARGUMENT, "iters must be 1 to");
	wire_kernel_release(&w);
}
END_TEST

CHECK_TEST(core, test_backend_cpu_rpc_profile)
{
	Nkid__V1__ProfileRequest req = NKID__V1__PROFILE_REQUEST__INIT;
	Nkid__V1__ProfileReply	*rep;
	struct wire_kernel	 w;

	wire_kernel_init(&w, 0, P);
	WIRE_REQUEST_SET(&req, &w);
	req.num_execs = 4;
	req.profile_nth = 2;
	req.core = -1;
	rep = fake_call_reply(&d, "Profile", &req.base,
	    &nkid__v1__profile_reply__descriptor);
	ck_assert_uint_eq(rep->n_traces, 2);
	ck_assert_uint_eq(rep->traces[0]->execution, 2);
	ck_assert_uint_eq(rep->traces[1]->execution, 4);
	ck_assert_uint_gt(rep->traces[0]->trace.len, 0);
	ck_assert_uint_gt(rep->traces[0]->summary_json.len, 0);
	ck_assert_uint_gt(rep->neff.len, 0);
	ck_assert_uint_eq(rep->n_outputs, 1);
	check_sum(rep->outputs[0]);
	nkid__v1__profile_reply__free_unpacked(rep, NULL);

	req.num_execs = 100000;
	fake_call_expect(&d, "Profile", &req.base,
	    GRPC_STATUS_INVALID_ARGUMENT, NULL);
	wire_kernel_release(&w);
}
END_TEST

/* compile for a target: one NKI names is written into the image, so the
 * model costs that NeuronCore; another is refused with the list; bad IR is
 * still refused by sim/'s bounded parse first. */
CHECK_TEST(core, test_backend_cpu_compile_target)
{
	struct backend		*b = d.backend;
	struct backend_program	*p = NULL;
	void			*image = NULL;
	size_t			 len, image_len;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);
	char			 diag[BACKEND_DIAG_LEN] = "", target[16];
	double			 us;

	ck_assert_msg(backend_compile(b, ir, len, "gen3", "",
	    &image, &image_len, diag) == 0, "%s", diag);
	ck_assert_msg(b->ops->load(b->state, image, image_len, &p, diag) == 0,
	    "%s", diag);
	ck_assert_int_eq(b->ops->model(b->state, p, &us, target, diag), 0);
	ck_assert_str_eq(target, "trn2");
	ck_assert(us > 0);
	b->ops->unload(b->state, p);
	free(image);
	image = NULL;
	ck_assert_int_eq(backend_compile(b, ir, len, "trn7", "",
	    &image, &image_len, diag), BACKEND_EINVAL);
	ck_assert_ptr_null(image);
	ck_assert_msg(strstr(diag, "unknown target 'trn7': NKI names trn1 "
	    "(inf2, gen2), trn2 (gen3), trn3 (gen4)") != NULL, "%s", diag);
	ck_assert_int_ne(backend_compile(b, ir, len / 2, "trn2",
	    "", &image, &image_len, diag), 0);
	ck_assert_ptr_null(image);
	free(ir);
}
END_TEST
