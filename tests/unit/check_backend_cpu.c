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
	struct config	cfg;
	char		err[512];
	const char	*j = "{\"cpu\": {\"cores\": 2}}";

	grpc_init();
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_int_eq(config_load_string(&cfg, "t", j, strlen(j), NULL, err,
	    sizeof err), 0);
	ck_assert_msg(daemon_init(&d, &loop, &cfg, err, sizeof err) == 0,
	    "%s", err);
}

static void
teardown(void)
{
	daemon_release(&d);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	grpc_shutdown();
}

static void
fake_call_start(struct fake_call *fc, const char *name,
    const ProtobufCMessage *msg)
{
	size_t	 len = protobuf_c_message_get_packed_size(msg);
	uint8_t	*buf = malloc(len + 1);

	protobuf_c_message_pack(msg, buf);
	memset(fc, 0, sizeof *fc);
	fc->rc.d = &d;
	fc->rc.tr = &fake_transport;
	fc->rc.m = dispatch_method_find(name);
	dispatch_call_start(&fc->rc, buf, len);
	free(buf);
}

static void
fake_call_wait(struct fake_call *fc)
{
	while (!fc->sent && uv_run(&loop, UV_RUN_ONCE) != 0)
		;
	ck_assert_int_eq(fc->sent, 1);
}


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

static void
wire_inputs(Nkid__V1__Tensor *t, Nkid__V1__Tensor **tp, uint64_t *shape)
{
	int	i;

	inputs_fill();
	shape[0] = P;
	shape[1] = F;
	for (i = 0; i < 2; i++) {
		nkid__v1__tensor__init(&t[i]);
		t[i].name = i == 0 ? "a" : "b";
		t[i].dtype = "float32";
		t[i].n_shape = 2;
		t[i].shape = shape;
		t[i].data.data = (uint8_t *)(i == 0 ? in_a : in_b);
		t[i].data.len = sizeof in_a;
		tp[i] = &t[i];
	}
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

/* ------------------------------------------------------------ ops */

START_TEST(test_backend_cpu_compile_execute)
{
	struct backend		*b = d.backend;
	struct backend_program	*p = NULL;
	struct backend_exec	 x;
	struct sim_tensor		 in[2], out[1];
	void			*image = NULL;
	size_t			 len, image_len;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);
	char			 diag[BACKEND_DIAG_LEN] = "";
	int			 i;

	ck_assert_str_eq(b->ops->name, "cpu");
	ck_assert_uint_eq(b->ncores, 2);
	ck_assert_msg(b->ops->compile(b->state, ir, len, &image, &image_len,
	    diag) == 0, "%s", diag);
	ck_assert_uint_gt(image_len, 0);
	ck_assert_msg(b->ops->load(b->state, image, image_len, &p, diag) == 0,
	    "%s", diag);
	ck_assert_str_eq(p->name, "tensor_add");
	ck_assert_uint_eq(p->nparams, 2);
	ck_assert_uint_eq(p->noutputs, 1);
	ck_assert_str_eq(p->param(p, 0)->name, "a");

	inputs_fill();
	memset(in, 0, sizeof in);
	for (i = 0; i < 2; i++) {
		in[i].dtype = SIM_DT_FLOAT32;
		in[i].rank = 2;
		in[i].shape[0] = P;
		in[i].shape[1] = F;
		in[i].data = i == 0 ? in_a : in_b;
		in[i].nbytes = sizeof in_a;
	}
	memset(&x, 0, sizeof x);
	memset(out, 0, sizeof out);
	x.inputs = in;
	x.ninputs = 2;
	x.outputs = out;
	x.noutputs = 1;
	ck_assert_msg(b->ops->execute(b->state, p, 1, &x, diag) == 0, "%s",
	    diag);
	ck_assert_uint_eq(out[0].nbytes, sizeof in_a);
	for (i = 0; i < P * F; i++)
		ck_assert_float_eq(((float *)out[0].data)[i], in_a[i] + in_b[i]);
	sim_tensors_release(out, 1);

	b->ops->unload(b->state, p);
	free(image);
	free(ir);
}
END_TEST

START_TEST(test_backend_cpu_partition_limit)
{
	struct backend	*b = d.backend;
	void		*image = NULL;
	size_t		 len, image_len;
	uint8_t		*ir = ir_tensor_add(&len, 0, 256);
	char		 diag[BACKEND_DIAG_LEN] = "";

	ck_assert_int_eq(b->ops->compile(b->state, ir, len, &image, &image_len,
	    diag), BACKEND_EINVAL);
	ck_assert_ptr_null(image);
	ck_assert_msg(strstr(diag, "256") != NULL && strstr(diag, "128") !=
	    NULL, "%s", diag);
	free(ir);
}
END_TEST

START_TEST(test_backend_cpu_bad_args)
{
	struct backend		*b = d.backend;
	struct backend_program	*p = NULL;
	struct backend_exec	 x;
	struct sim_tensor		 in[2], out[1];
	void			*image = NULL;
	size_t			 len, image_len;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);
	char			 diag[BACKEND_DIAG_LEN] = "";

	ck_assert_int_eq(b->ops->compile(b->state, ir, len, &image, &image_len,
	    diag), 0);
	ck_assert_int_eq(b->ops->load(b->state, image, image_len, &p, diag),
	    0);
	memset(in, 0, sizeof in);
	in[0].dtype = in[1].dtype = SIM_DT_FLOAT32;
	in[0].rank = in[1].rank = 1;
	in[0].shape[0] = in[1].shape[0] = 4;
	in[0].data = in[1].data = in_a;
	in[0].nbytes = in[1].nbytes = 16;
	memset(&x, 0, sizeof x);
	memset(out, 0, sizeof out);
	x.inputs = in;
	x.ninputs = 2;
	x.outputs = out;
	x.noutputs = 1;
	ck_assert_int_eq(b->ops->execute(b->state, p, 0, &x, diag),
	    BACKEND_EARG);
	ck_assert_msg(strstr(diag, "a") != NULL, "%s", diag);
	b->ops->unload(b->state, p);
	free(image);
	free(ir);
}
END_TEST

START_TEST(test_backend_cpu_truncated_image)
{
	struct backend		*b = d.backend;
	struct backend_program	*p = NULL;
	void			*image = NULL;
	size_t			 len, image_len;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);
	char			 diag[BACKEND_DIAG_LEN] = "";

	ck_assert_int_eq(b->ops->compile(b->state, ir, len, &image, &image_len,
	    diag), 0);
	ck_assert_int_ne(b->ops->load(b->state, image, image_len / 2, &p,
	    diag), 0);
	ck_assert_ptr_null(p);
	/* Truncated IR too. */
	free(image);
	image = NULL;
	ck_assert_int_ne(b->ops->compile(b->state, ir, len / 2, &image,
	    &image_len, diag), 0);
	free(image);
	free(ir);
}
END_TEST

/* ------------------------------------------------------------ rpcs */

START_TEST(test_backend_cpu_compile_then_run_by_key)
{
	Nkid__V1__CompileRequest creq = NKID__V1__COMPILE_REQUEST__INIT;
	Nkid__V1__RunRequest	 rreq = NKID__V1__RUN_REQUEST__INIT;
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__Kernel	 k = NKID__V1__KERNEL__INIT;
	Nkid__V1__CompileReply	*crep;
	Nkid__V1__RunReply	*rrep;
	Nkid__V1__Tensor	 t[2], *tp[2];
	struct fake_call	 fc;
	uint64_t		 shape[2];
	char			 key[65];
	size_t			 len;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);

	k.name = "tensor_add";
	k.format = "nkir/1";
	k.ir.data = ir;
	k.ir.len = len;
	ref.kernel = &k;
	creq.ref = &ref;
	fake_call_start(&fc, "Compile", &creq.base);
	fake_call_wait(&fc);
	ck_assert_msg(fc.rc.status == GRPC_STATUS_OK, "%s", fc.rc.message);
	crep = nkid__v1__compile_reply__unpack(NULL, fc.reply_len, fc.reply);
	ck_assert_uint_eq(strlen(crep->neff_key), 64);
	ck_assert(!crep->cache_hit);
	ck_assert_str_eq(crep->kernel_name, "tensor_add");
	strcpy(key, crep->neff_key);
	nkid__v1__compile_reply__free_unpacked(crep, NULL);
	fake_call_release(&fc);

	/* Same IR again: a hit with the same key. */
	fake_call_start(&fc, "Compile", &creq.base);
	fake_call_wait(&fc);
	crep = nkid__v1__compile_reply__unpack(NULL, fc.reply_len, fc.reply);
	ck_assert(crep->cache_hit);
	ck_assert_str_eq(crep->neff_key, key);
	nkid__v1__compile_reply__free_unpacked(crep, NULL);
	fake_call_release(&fc);

	/* Run by key only. */
	ref.kernel = NULL;
	ref.neff_key = key;
	rreq.ref = &ref;
	rreq.core = -1;
	wire_inputs(t, tp, shape);
	rreq.n_inputs = 2;
	rreq.inputs = tp;
	fake_call_start(&fc, "Run", &rreq.base);
	fake_call_wait(&fc);
	ck_assert_msg(fc.rc.status == GRPC_STATUS_OK, "%s", fc.rc.message);
	rrep = nkid__v1__run_reply__unpack(NULL, fc.reply_len, fc.reply);
	ck_assert_uint_eq(rrep->n_outputs, 1);
	check_sum(rrep->outputs[0]);
	ck_assert(rrep->cache_hit);
	ck_assert_str_eq(rrep->neff_key, key);
	ck_assert_uint_gt(rrep->job_id, 0);
	nkid__v1__run_reply__free_unpacked(rrep, NULL);
	fake_call_release(&fc);
	free(ir);
}
END_TEST

START_TEST(test_backend_cpu_simulate_prints)
{
	Nkid__V1__SimulateRequest req = NKID__V1__SIMULATE_REQUEST__INIT;
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__Kernel	 k = NKID__V1__KERNEL__INIT;
	Nkid__V1__SimulateReply	*rep;
	Nkid__V1__Tensor	 t[2], *tp[2];
	struct fake_call	 fc;
	uint64_t		 shape[2];
	size_t			 len;
	uint8_t			*ir = ir_tensor_add(&len, 1, P);

	k.name = "tensor_add";
	k.format = "nkir/1";
	k.ir.data = ir;
	k.ir.len = len;
	ref.kernel = &k;
	req.ref = &ref;
	wire_inputs(t, tp, shape);
	req.n_inputs = 2;
	req.inputs = tp;
	fake_call_start(&fc, "Simulate", &req.base);
	fake_call_wait(&fc);
	ck_assert_msg(fc.rc.status == GRPC_STATUS_OK, "%s", fc.rc.message);
	rep = nkid__v1__simulate_reply__unpack(NULL, fc.reply_len, fc.reply);
	ck_assert_uint_eq(rep->n_outputs, 1);
	check_sum(rep->outputs[0]);
	ck_assert_msg(strstr(rep->device_print, "sum") != NULL, "'%s'",
	    rep->device_print);
	nkid__v1__simulate_reply__free_unpacked(rep, NULL);
	fake_call_release(&fc);
	free(ir);
}
END_TEST

START_TEST(test_backend_cpu_run_compile_error_message)
{
	Nkid__V1__RunRequest	 req = NKID__V1__RUN_REQUEST__INIT;
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__Kernel	 k = NKID__V1__KERNEL__INIT;
	Nkid__V1__Tensor	 t[2], *tp[2];
	struct fake_call	 fc;
	uint64_t		 shape[2];
	size_t			 len;
	uint8_t			*ir = ir_tensor_add(&len, 0, 256);

	k.name = "tensor_add";
	k.format = "nkir/1";
	k.ir.data = ir;
	k.ir.len = len;
	ref.kernel = &k;
	req.ref = &ref;
	req.core = -1;
	wire_inputs(t, tp, shape);
	req.n_inputs = 2;
	req.inputs = tp;
	fake_call_start(&fc, "Run", &req.base);
	fake_call_wait(&fc);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_INVALID_ARGUMENT);
	ck_assert_msg(strncmp(fc.rc.message, "cannot compile 'tensor_add': ",
	    29) == 0, "%s", fc.rc.message);
	ck_assert_msg(strstr(fc.rc.message, "kernel.py:7") != NULL, "%s",
	    fc.rc.message);
	fake_call_release(&fc);
	free(ir);
}
END_TEST

START_TEST(test_backend_cpu_run_cancelled_before_start)
{
	Nkid__V1__RunRequest	 req = NKID__V1__RUN_REQUEST__INIT;
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__Kernel	 k = NKID__V1__KERNEL__INIT;
	Nkid__V1__Tensor	 t[2], *tp[2];
	struct fake_call	 fc;
	uint64_t		 shape[2];
	size_t			 len;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);

	k.name = "tensor_add";
	k.format = "nkir/1";
	k.ir.data = ir;
	k.ir.len = len;
	ref.kernel = &k;
	req.ref = &ref;
	req.core = 0;
	wire_inputs(t, tp, shape);
	req.n_inputs = 2;
	req.inputs = tp;
	fake_call_start(&fc, "Run", &req.base);
	/* The client goes away while the kernel compiles. */
	dispatch_call_cancel(&fc.rc);
	fake_call_wait(&fc);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_CANCELLED);
	fake_call_release(&fc);
	free(ir);
}
END_TEST

START_TEST(test_backend_cpu_serves_after_bad_kernel)
{
	Nkid__V1__SimulateRequest req = NKID__V1__SIMULATE_REQUEST__INIT;
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__Kernel	 k = NKID__V1__KERNEL__INIT;
	Nkid__V1__Tensor	 t[2], *tp[2];
	struct fake_call	 fc;
	uint64_t		 shape[2];
	size_t			 len;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);

	k.name = "tensor_add";
	k.format = "nkir/1";
	k.ir.data = ir;
	k.ir.len = len / 3;		/* truncated */
	ref.kernel = &k;
	req.ref = &ref;
	wire_inputs(t, tp, shape);
	req.n_inputs = 2;
	req.inputs = tp;
	fake_call_start(&fc, "Simulate", &req.base);
	fake_call_wait(&fc);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_INVALID_ARGUMENT);
	fake_call_release(&fc);

	k.ir.len = len;
	fake_call_start(&fc, "Simulate", &req.base);
	fake_call_wait(&fc);
	ck_assert_msg(fc.rc.status == GRPC_STATUS_OK, "%s", fc.rc.message);
	fake_call_release(&fc);
	free(ir);
}
END_TEST


/* ------------------------------------------------------------ benchmark, profile */

/* Load the tensor_add program; the caller unloads it and frees *image. */
static struct backend_program *
program_load(void **image)
{
	struct backend		*b = d.backend;
	struct backend_program	*p = NULL;
	size_t			 len, image_len;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);
	char			 diag[BACKEND_DIAG_LEN] = "";

	ck_assert_msg(b->ops->compile(b->state, ir, len, image, &image_len,
	    diag) == 0, "%s", diag);
	ck_assert_msg(b->ops->load(b->state, *image, image_len, &p, diag) == 0,
	    "%s", diag);
	free(ir);
	return (p);
}

START_TEST(test_backend_cpu_benchmark_shapes_only)
{
	struct backend		*b = d.backend;
	struct backend_program	*p;
	struct backend_exec	 x;
	struct sim_tensor		 in[2], out[1], out2[1];
	double			 samples[5];
	void			*image = NULL;
	char			 diag[BACKEND_DIAG_LEN] = "";
	int			 i;

	p = program_load(&image);
	memset(in, 0, sizeof in);
	for (i = 0; i < 2; i++) {
		in[i].dtype = SIM_DT_FLOAT32;
		in[i].rank = 2;
		in[i].shape[0] = P;
		in[i].shape[1] = F;
		in[i].data = NULL;		/* shapes only */
		in[i].nbytes = sizeof in_a;
	}
	memset(&x, 0, sizeof x);
	memset(out, 0, sizeof out);
	x.inputs = in;
	x.ninputs = 2;
	x.outputs = out;
	x.noutputs = 1;
	for (i = 0; i < 5; i++)
		samples[i] = -1;
	ck_assert_msg(b->ops->benchmark(b->state, p, 0, &x, 3, 5, samples,
	    diag) == 0, "%s", diag);
	for (i = 0; i < 5; i++)
		ck_assert(samples[i] > 0);
	/* The backend's values: deterministic, in [-1, 1), a + b in [-2, 2). */
	for (i = 0; i < P * F; i++)
		ck_assert(fabsf(((float *)out[0].data)[i]) < 2.0f);
	x.outputs = out2;
	memset(out2, 0, sizeof out2);
	ck_assert(b->ops->benchmark(b->state, p, 1, &x, 0, 1, samples,
	    diag) == 0);
	ck_assert_mem_eq(out[0].data, out2[0].data, out[0].nbytes);
	ck_assert(in[0].data == NULL);
	sim_tensors_release(out, 1);
	sim_tensors_release(out2, 1);
	b->ops->unload(b->state, p);
	free(image);
}
END_TEST

START_TEST(test_backend_cpu_profile_traces)
{
	struct backend		*b = d.backend;
	struct backend_program	*p;
	struct backend_exec	 x;
	struct backend_trace	*t = NULL;
	struct sim_tensor		 in[2], out[1];
	size_t			 nt = 0;
	void			*image = NULL;
	char			 diag[BACKEND_DIAG_LEN] = "", *s;
	int			 i;

	p = program_load(&image);
	inputs_fill();
	memset(in, 0, sizeof in);
	for (i = 0; i < 2; i++) {
		in[i].dtype = SIM_DT_FLOAT32;
		in[i].rank = 2;
		in[i].shape[0] = P;
		in[i].shape[1] = F;
		in[i].data = i == 0 ? in_a : in_b;
		in[i].nbytes = sizeof in_a;
	}
	memset(&x, 0, sizeof x);
	memset(out, 0, sizeof out);
	x.inputs = in;
	x.ninputs = 2;
	x.outputs = out;
	x.noutputs = 1;
	ck_assert_msg(b->ops->profile(b->state, p, 0, &x, 7, 3, &t, &nt,
	    diag) == 0, "%s", diag);
	ck_assert_uint_eq(nt, 2);
	ck_assert_uint_eq(t[0].execution, 3);
	ck_assert_uint_eq(t[1].execution, 6);
	for (i = 0; i < P * F; i++)
		ck_assert_float_eq(((float *)out[0].data)[i], in_a[i] + in_b[i]);
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
	sim_tensors_release(out, 1);

	/* num_execs < profile_nth: profile_nth's execution alone. */
	memset(out, 0, sizeof out);
	ck_assert(b->ops->profile(b->state, p, 1, &x, 1, 4, &t, &nt,
	    diag) == 0);
	ck_assert_uint_eq(nt, 1);
	ck_assert_uint_eq(t[0].execution, 4);
	backend_traces_free(t, nt);
	sim_tensors_release(out, 1);
	ck_assert_int_eq(b->ops->profile(b->state, p, 0, &x, 1, 0, &t, &nt,
	    diag), BACKEND_EARG);
	b->ops->unload(b->state, p);
	free(image);
}
END_TEST

static void
kernel_ref_init(Nkid__V1__KernelRef *ref, Nkid__V1__Kernel *k, uint8_t *ir,
    size_t len)
{
	k->name = "tensor_add";
	k->format = "nkir/1";
	k->ir.data = ir;
	k->ir.len = len;
	ref->kernel = k;
}

START_TEST(test_backend_cpu_rpc_benchmark)
{
	Nkid__V1__BenchmarkRequest req = NKID__V1__BENCHMARK_REQUEST__INIT;
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__Kernel	 k = NKID__V1__KERNEL__INIT;
	Nkid__V1__BenchmarkReply *rep;
	Nkid__V1__Tensor	 t[2], *tp[2];
	struct fake_call	 fc;
	uint64_t		 shape[2];
	size_t			 len, i;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);

	kernel_ref_init(&ref, &k, ir, len);
	wire_inputs(t, tp, shape);
	t[1].data.data = NULL;		/* shapes only */
	t[1].data.len = 0;
	req.ref = &ref;
	req.inputs = tp;
	req.n_inputs = 2;
	req.warmup = 2;
	req.iters = 9;
	req.core = -1;
	fake_call_start(&fc, "Benchmark", &req.base);
	fake_call_wait(&fc);
	ck_assert_msg(fc.rc.status == GRPC_STATUS_OK, "%s", fc.rc.message);
	rep = nkid__v1__benchmark_reply__unpack(NULL, fc.reply_len, fc.reply);
	ck_assert_uint_eq(rep->n_samples_us, 9);
	ck_assert_uint_eq(rep->n_percentiles, 8);
	ck_assert_double_eq(rep->percentiles[0]->p, 0);
	ck_assert_double_eq(rep->percentiles[7]->p, 100);
	for (i = 1; i < 8; i++)
		ck_assert(rep->percentiles[i]->us >= rep->percentiles[i - 1]->us);
	ck_assert_uint_gt(rep->job_id, 0);
	ck_assert_uint_eq(strlen(rep->neff_key), 64);
	nkid__v1__benchmark_reply__free_unpacked(rep, NULL);
	fake_call_release(&fc);

	/* One timed execution: no percentiles. */
	req.iters = 1;
	fake_call_start(&fc, "Benchmark", &req.base);
	fake_call_wait(&fc);
	rep = nkid__v1__benchmark_reply__unpack(NULL, fc.reply_len, fc.reply);
	ck_assert_uint_eq(rep->n_percentiles, 0);
	ck_assert_uint_eq(rep->n_samples_us, 1);
	nkid__v1__benchmark_reply__free_unpacked(rep, NULL);
	fake_call_release(&fc);

	req.iters = 0;
	fake_call_start(&fc, "Benchmark", &req.base);
	fake_call_wait(&fc);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(fc.rc.message, "iters must be 1 to"));
	fake_call_release(&fc);
	free(ir);
}
END_TEST

START_TEST(test_backend_cpu_rpc_profile)
{
	Nkid__V1__ProfileRequest req = NKID__V1__PROFILE_REQUEST__INIT;
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__Kernel	 k = NKID__V1__KERNEL__INIT;
	Nkid__V1__ProfileReply	*rep;
	Nkid__V1__Tensor	 t[2], *tp[2];
	struct fake_call	 fc;
	uint64_t		 shape[2];
	size_t			 len;
	uint8_t			*ir = ir_tensor_add(&len, 0, P);

	kernel_ref_init(&ref, &k, ir, len);
	wire_inputs(t, tp, shape);
	req.ref = &ref;
	req.inputs = tp;
	req.n_inputs = 2;
	req.num_execs = 4;
	req.profile_nth = 2;
	req.core = -1;
	fake_call_start(&fc, "Profile", &req.base);
	fake_call_wait(&fc);
	ck_assert_msg(fc.rc.status == GRPC_STATUS_OK, "%s", fc.rc.message);
	rep = nkid__v1__profile_reply__unpack(NULL, fc.reply_len, fc.reply);
	ck_assert_uint_eq(rep->n_traces, 2);
	ck_assert_uint_eq(rep->traces[0]->execution, 2);
	ck_assert_uint_eq(rep->traces[1]->execution, 4);
	ck_assert_uint_gt(rep->traces[0]->trace.len, 0);
	ck_assert_uint_gt(rep->traces[0]->summary_json.len, 0);
	ck_assert_uint_gt(rep->neff.len, 0);
	ck_assert_uint_eq(rep->n_outputs, 1);
	check_sum(rep->outputs[0]);
	nkid__v1__profile_reply__free_unpacked(rep, NULL);
	fake_call_release(&fc);

	req.num_execs = 100000;
	fake_call_start(&fc, "Profile", &req.base);
	fake_call_wait(&fc);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_INVALID_ARGUMENT);
	fake_call_release(&fc);
	free(ir);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("backend_cpu");

	check_tcase_add(s, "core", setup, teardown, 0,
	    test_backend_cpu_compile_execute,
	    test_backend_cpu_compile_then_run_by_key,
	    test_backend_cpu_simulate_prints,
	    test_backend_cpu_benchmark_shapes_only,
	    test_backend_cpu_profile_traces, test_backend_cpu_rpc_benchmark,
	    test_backend_cpu_rpc_profile, NULL);
	check_tcase_add(s, "limits", setup, teardown, 0,
	    test_backend_cpu_partition_limit, NULL);
	check_tcase_add(s, "errors", setup, teardown, 0,
	    test_backend_cpu_bad_args, test_backend_cpu_truncated_image,
	    test_backend_cpu_run_compile_error_message, NULL);
	check_tcase_add(s, "recovery", setup, teardown, 0,
	    test_backend_cpu_run_cancelled_before_start,
	    test_backend_cpu_serves_after_bad_kernel, NULL);
	return (check_main(s));
}
