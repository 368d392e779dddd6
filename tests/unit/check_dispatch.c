/* check_dispatch.c: the method table and handlers called directly with fake requests. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <grpc/grpc.h>
#include <uv.h>

#include "nkid.pb-c.h"

#include "daemon/config.h"
#include "daemon/daemon.h"
#include "cache/cache.h"
#include "daemon/dispatch.h"
#include "daemon/dispatch_error.h"
#include "daemon/job.h"
#include "tests/unit/fake_call.h"
#include "tests/unit/nkir_fixture.h"
#include "tests/unit/check_main.h"

static uv_loop_t	loop;
static struct daemon	d;

static void
setup(void)
{
	fake_daemon_open(&d, &loop, NULL, NULL);
}

static void
teardown(void)
{
	fake_daemon_close(&d);
}

CHECK_SUITE("dispatch", setup, teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(limits, 0);
CHECK_TCASE(errors, 0);
CHECK_TCASE(recovery, 0);

static uint64_t
method_calls(const char *name, uint64_t *errors)
{
	size_t	i = dispatch_method_index(dispatch_method_find(name));

	*errors = d.methods[i].errors;
	return (d.methods[i].calls);
}

CHECK_TEST(core, test_dispatch_table_sorted)
{
	const struct rpc_method		*m, *prev = NULL;
	const ProtobufCMethodDescriptor	*md;
	char				 path[128];
	size_t				 i;

	ck_assert_uint_eq(dispatch_method_count(),
	    nkid__v1__nkid__descriptor.n_methods);
	for (i = 0; i < dispatch_method_count(); i++) {
		m = dispatch_method(i);
		if (prev != NULL)
			ck_assert_int_lt(strcmp(prev->name, m->name), 0);
		snprintf(path, sizeof path, "/nkid.v1.Nkid/%s", m->name);
		ck_assert_str_eq(m->path, path);
		ck_assert_ptr_eq(dispatch_method_find(m->name), m);
		ck_assert_ptr_eq(dispatch_method_find(m->path), m);
		/* Every method is the service's: its messages resolve. */
		md = protobuf_c_service_descriptor_get_method_by_name(
		    &nkid__v1__nkid__descriptor, m->name);
		ck_assert_ptr_nonnull(md);
		ck_assert_ptr_eq(dispatch_method_proto(m), md);
		ck_assert_ptr_nonnull(m->handler);
		prev = m;
	}
	ck_assert_ptr_null(dispatch_method_find("Nope"));
	ck_assert_ptr_null(dispatch_method_find("/other.Svc/Ping"));
}
END_TEST

CHECK_TEST(core, test_dispatch_ping_echo)
{
	Nkid__V1__PingRequest	 req = NKID__V1__PING_REQUEST__INIT;
	Nkid__V1__PingReply	*rep;
	struct fake_call	 fc;

	req.payload.data = (uint8_t *)"hello";
	req.payload.len = 5;
	fake_call_msg(&fc, &d, "Ping", &req.base);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_OK);
	rep = nkid__v1__ping_reply__unpack(NULL, fc.reply_len, fc.reply);
	ck_assert_ptr_nonnull(rep);
	ck_assert_uint_eq(rep->payload.len, 5);
	ck_assert_int_eq(memcmp(rep->payload.data, "hello", 5), 0);
	nkid__v1__ping_reply__free_unpacked(rep, NULL);
	fake_call_release(&fc);
}
END_TEST

CHECK_TEST(core, test_dispatch_status_fields)
{
	Nkid__V1__StatusRequest	 req = NKID__V1__STATUS_REQUEST__INIT;
	Nkid__V1__StatusReply	*rep;
	struct fake_call	 fc;
	size_t			 i;
	int			 seen = 0;

	fake_call_msg(&fc, &d, "Ping", &req.base);	/* empty is valid */
	fake_call_release(&fc);
	d.connections = 3;
	d.refused = 1;
	fake_call_msg(&fc, &d, "Status", &req.base);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_OK);
	rep = nkid__v1__status_reply__unpack(NULL, fc.reply_len, fc.reply);
	ck_assert_ptr_nonnull(rep);
	ck_assert_str_eq(rep->version, NKID_VERSION);
	ck_assert_uint_eq(rep->pid, (uint32_t)getpid());
	ck_assert(rep->uptime_s >= 0);
	ck_assert_str_eq(rep->backend, "cpu");
	ck_assert_str_eq(rep->socket, "/run/nkid/nkid.sock");
	ck_assert_str_eq(rep->state_dir, "/var/lib/nkid");
	ck_assert_uint_eq(rep->n_cores, 1);
	ck_assert_str_eq(rep->cores[0]->state, "idle");
	ck_assert_ptr_nonnull(rep->counters);
	ck_assert_uint_eq(rep->counters->connections, 3);
	ck_assert_uint_eq(rep->counters->refused, 1);
	ck_assert_uint_eq(rep->counters->n_methods, dispatch_method_count());
	for (i = 0; i < rep->counters->n_methods; i++) {
		if (strcmp(rep->counters->methods[i]->method, "Ping") == 0) {
			ck_assert_uint_eq(rep->counters->methods[i]->calls, 1);
			seen++;
		}
		if (strcmp(rep->counters->methods[i]->method, "Status") == 0) {
			ck_assert_uint_eq(rep->counters->methods[i]->calls, 1);
			seen++;
		}
	}
	ck_assert_int_eq(seen, 2);
	ck_assert_uint_eq(rep->n_backend_versions, 1);
	ck_assert_str_eq(rep->backend_versions[0]->key, "sim");
	ck_assert_ptr_nonnull(rep->cache);
	ck_assert_ptr_nonnull(rep->jobs);
	nkid__v1__status_reply__free_unpacked(rep, NULL);
	fake_call_release(&fc);
}
END_TEST

/*
 * A per-key RPC's reply is built by rpc_cache_keys_async from the method's
 * reply message: CachePin on a daemon with a disk cache counts the key it
 * pinned in "changed" and lists the unknown ones, in order, in "missing".
 */
CHECK_TEST(core, test_dispatch_cache_pin_reply)
{
	Nkid__V1__CompileRequest creq = NKID__V1__COMPILE_REQUEST__INIT;
	Nkid__V1__CachePinRequest preq = NKID__V1__CACHE_PIN_REQUEST__INIT;
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__Kernel	 k = NKID__V1__KERNEL__INIT;
	Nkid__V1__CompileReply	*crep;
	Nkid__V1__CachePinReply	*prep;
	char			 dir[64], json[128], *keys[3];
	uint8_t			*ir;
	size_t			 len;

	check_dir_make(dir, sizeof dir, "check_dispatch");
	snprintf(json, sizeof json, "{\"cache_dir\": \"%s\"}", dir);
	fake_daemon_close(&d);
	fake_daemon_open(&d, &loop, json, NULL);
	ir = ir_tensor_add(&len, 0, P);
	fake_kernel_ref(&ref, &k, "nkir/1", ir, len);
	creq.ref = &ref;
	crep = fake_call_reply(&d, "Compile", &creq.base,
	    &nkid__v1__compile_reply__descriptor);
	keys[0] = "00000000000000000000000000000000"
	    "00000000000000000000000000000000";
	keys[1] = crep->neff_key;
	keys[2] = "not a key";
	preq.keys = keys;
	preq.n_keys = 3;
	prep = fake_call_reply(&d, "CachePin", &preq.base,
	    &nkid__v1__cache_pin_reply__descriptor);
	ck_assert_uint_eq(prep->changed, 1);
	ck_assert_uint_eq(prep->n_missing, 2);
	ck_assert_str_eq(prep->missing[0], keys[0]);
	ck_assert_str_eq(prep->missing[1], keys[2]);
	nkid__v1__cache_pin_reply__free_unpacked(prep, NULL);
	nkid__v1__compile_reply__free_unpacked(crep, NULL);
	free(ir);
	fake_daemon_close(&d);
	check_dir_remove(dir);
	fake_daemon_open(&d, &loop, NULL, NULL);	/* for teardown */
}
END_TEST

/* A read-only cache refuses an export (built in its tmp/) as it refuses
 * an import: the daemon's state, not a fault. */
CHECK_TEST(errors, test_dispatch_cache_bundle_statuses)
{
	ck_assert_int_eq(dispatch_status_cache_export(CACHE_EREADONLY),
	    GRPC_STATUS_FAILED_PRECONDITION);
	ck_assert_int_eq(dispatch_status_cache_import(CACHE_EREADONLY),
	    GRPC_STATUS_FAILED_PRECONDITION);
	ck_assert_int_eq(dispatch_status_cache_export(CACHE_ENOSPC),
	    GRPC_STATUS_RESOURCE_EXHAUSTED);
	ck_assert_int_eq(dispatch_status_cache_export(CACHE_EIO),
	    GRPC_STATUS_INTERNAL);
}
END_TEST

CHECK_TEST(errors, test_dispatch_unknown_method)
{
	struct fake_call	fc;

	fake_call_run(&fc, &d, "/nkid.v1.Nkid/Frobnicate", NULL, 0);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_UNIMPLEMENTED);
	ck_assert_ptr_nonnull(strstr(fc.rc.message,
	    "unknown method '/nkid.v1.Nkid/Frobnicate'"));
	fake_call_release(&fc);
}
END_TEST

CHECK_TEST(limits, test_dispatch_oversized_refused_before_unpack)
{
	struct fake_call	 fc;
	uint64_t		 cap = config_cap_bytes(&d.cfg,
				    CONFIG_CAP_CONTROL), errors;
	uint8_t			*big = calloc(1, cap + 1);
	char			 want[128];

	/* Not protobuf at all: the cap must answer first. */
	memset(big, 0xff, cap + 1);
	fake_call_run(&fc, &d, "Ping", big, cap + 1);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_RESOURCE_EXHAUSTED);
	snprintf(want, sizeof want, "Ping request of %llu bytes exceeds the "
	    "method's limit of %llu bytes", (unsigned long long)cap + 1,
	    (unsigned long long)cap);
	ck_assert_ptr_nonnull(strstr(fc.rc.message, want));
	ck_assert_ptr_null(fc.rc.req);
	ck_assert_uint_eq(method_calls("Ping", &errors), 1);
	ck_assert_uint_eq(errors, 1);
	fake_call_release(&fc);
	free(big);
}
END_TEST

CHECK_TEST(limits, test_dispatch_cap_per_method)
{
	Nkid__V1__PingRequest	 req = NKID__V1__PING_REQUEST__INIT;
	struct fake_call	 fc;
	size_t			 n = 1024 * 1024 + 16;
	uint8_t			*payload = calloc(1, n);

	/* The same bytes are over Ping's cap... */
	req.payload.data = payload;
	req.payload.len = n;
	fake_call_expect(&d, "Ping", &req.base, GRPC_STATUS_RESOURCE_EXHAUSTED,
	    NULL);
	/* ...and within Run's, which then parses and validates. */
	fake_call_msg(&fc, &d, "Run", &req.base);
	ck_assert_int_ne(fc.rc.status, GRPC_STATUS_RESOURCE_EXHAUSTED);
	fake_call_release(&fc);
	free(payload);
}
END_TEST

CHECK_TEST(errors, test_dispatch_malformed_protobuf)
{
	struct fake_call	fc;

	fake_call_run(&fc, &d, "Ping", "\xff\xff\xff", 3);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(fc.rc.message, "malformed Ping request"));
	fake_call_release(&fc);
	/* Truncated length-delimited field. */
	fake_call_run(&fc, &d, "Status", "\x0a\x10" "ab", 4);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_INVALID_ARGUMENT);
	fake_call_release(&fc);
}
END_TEST

/* Compiling len bytes ir as tensor_add in format is refused with want. */
static void
compile_refused(const char *format, const void *ir, size_t len,
    const char *want)
{
	Nkid__V1__CompileRequest req = NKID__V1__COMPILE_REQUEST__INIT;
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__Kernel	 k = NKID__V1__KERNEL__INIT;

	fake_kernel_ref(&ref, &k, format, ir, len);
	req.ref = &ref;
	fake_call_expect(&d, "Compile", &req.base, GRPC_STATUS_INVALID_ARGUMENT,
	    want);
}

CHECK_TEST(errors, test_dispatch_compile_bad_format)
{
	Nkid__V1__CompileRequest req = NKID__V1__COMPILE_REQUEST__INIT;

	compile_refused("penguin", "x", 1, "format 'penguin'");
	/* No kernel at all. */
	fake_call_expect(&d, "Compile", &req.base, GRPC_STATUS_INVALID_ARGUMENT,
	    NULL);
}
END_TEST

CHECK_TEST(errors, test_dispatch_compile_malformed_ir)
{
	compile_refused("nkir/1", "\xff\xfe garbage", 10,
	    "cannot compile 'tensor_add': ");
}
END_TEST

CHECK_TEST(errors, test_dispatch_run_tensor_checked)
{
	Nkid__V1__RunRequest	 req = NKID__V1__RUN_REQUEST__INIT;
	Nkid__V1__Tensor	 t = NKID__V1__TENSOR__INIT, *tp = &t;
	uint64_t		 shape[2] = { 4, 4 }, huge[2] = { 1ULL << 62,
				    1ULL << 62 };
	uint8_t			 data[60] = { 0 };
	struct fake_call	 fc;

	t.name = "a";
	t.dtype = "float32";
	t.n_shape = 2;
	t.shape = shape;
	t.data.data = data;
	t.data.len = sizeof data;
	req.n_inputs = 1;
	req.inputs = &tp;
	fake_call_msg(&fc, &d, "Run", &req.base);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_INVALID_ARGUMENT);
	ck_assert_str_eq(fc.rc.message, "input 'a': shape and dtype 'float32' "
	    "need 64 bytes, data has 60");
	fake_call_release(&fc);

	t.shape = huge;
	fake_call_expect(&d, "Run", &req.base, GRPC_STATUS_INVALID_ARGUMENT,
	    "overflows");

	t.shape = shape;
	t.dtype = "complex128";
	fake_call_msg(&fc, &d, "Run", &req.base);
	ck_assert_int_eq(fc.rc.status, GRPC_STATUS_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(fc.rc.message, "unknown dtype "
	    "'complex128'"));
	fake_call_release(&fc);

	req.core = 7;
	fake_call_expect(&d, "Run", &req.base, GRPC_STATUS_INVALID_ARGUMENT,
	    "core 7 does not exist");

	/* A job class that is not one: refused, never taken as interactive. */
	req.core = -1;
	req.job_class = 99;
	fake_call_expect(&d, "Run", &req.base, GRPC_STATUS_INVALID_ARGUMENT,
	    "job_class 99 is not");
	req.job_class = -5;
	fake_call_expect(&d, "Run", &req.base, GRPC_STATUS_INVALID_ARGUMENT,
	    "job_class -5 is not");
}
END_TEST

CHECK_TEST(errors, test_dispatch_run_neff_key_miss)
{
	Nkid__V1__RunRequest	 req = NKID__V1__RUN_REQUEST__INIT;
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;

	ref.neff_key = "0123";
	req.ref = &ref;
	fake_call_expect(&d, "Run", &req.base, GRPC_STATUS_NOT_FOUND,
	    "neff key '0123'");
}
END_TEST

CHECK_TEST(recovery, test_dispatch_serves_after_errors)
{
	Nkid__V1__PingRequest	req = NKID__V1__PING_REQUEST__INIT;
	struct fake_call	fc;
	uint64_t		errors;
	int			i;

	for (i = 0; i < 3; i++) {
		fake_call_run(&fc, &d, "Ping", "\xff", 1);
		fake_call_release(&fc);
	}
	fake_call_expect(&d, "Ping", &req.base, GRPC_STATUS_OK, NULL);
	ck_assert_uint_eq(method_calls("Ping", &errors), 4);
	ck_assert_uint_eq(errors, 3);
}
END_TEST
