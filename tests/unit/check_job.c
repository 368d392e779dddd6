/* check_job.c: the kernel RPCs' requests decoded by their fields' names into what the pipeline takes. */
#include <check.h>

#include "nkid.pb-c.h"

#include "daemon/dispatch.h"
#include "daemon/job.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("job", NULL, NULL, NULL);
CHECK_TCASE(core, 0);

/*
 * Each kernel request filled with values of its own (core 2, 3, 1; class
 * batch where it has one) decodes to exactly those: a field renamed in
 * proto/nkid.proto, or missing from the decode, leaves its zero and fails.
 */
CHECK_TEST(core, test_job_args_decode_by_name)
{
	Nkid__V1__KernelRef	 ref = NKID__V1__KERNEL_REF__INIT;
	Nkid__V1__ShmRegion	 shm = NKID__V1__SHM_REGION__INIT;
	Nkid__V1__Tensor	 t0 = NKID__V1__TENSOR__INIT;
	Nkid__V1__Tensor	 t1 = NKID__V1__TENSOR__INIT;
	Nkid__V1__Tensor	*in[] = { &t0, &t1 };
	Nkid__V1__RunRequest	 run = NKID__V1__RUN_REQUEST__INIT;
	Nkid__V1__SimulateRequest sim = NKID__V1__SIMULATE_REQUEST__INIT;
	Nkid__V1__BenchmarkRequest bench = NKID__V1__BENCHMARK_REQUEST__INIT;
	Nkid__V1__ProfileRequest prof = NKID__V1__PROFILE_REQUEST__INIT;
	struct job_args		 a;
	size_t			 i;
	const struct {
		const char		*method;
		const ProtobufCMessage	*req;
		const Nkid__V1__ShmRegion *output_shm;
		int			 core;
		int			 job_class;
	} want[] = {
		{ "Run", &run.base, &shm, 2,
		    NKID__V1__JOB_CLASS__JOB_CLASS_BATCH },
		{ "Simulate", &sim.base, &shm, 0, 0 },
		{ "Benchmark", &bench.base, NULL, 3, 0 },
		{ "Profile", &prof.base, &shm, 1, 0 },
	};

	run.ref = sim.ref = bench.ref = prof.ref = &ref;
	run.inputs = sim.inputs = bench.inputs = prof.inputs = in;
	run.n_inputs = sim.n_inputs = bench.n_inputs = prof.n_inputs = 2;
	run.output_shm = sim.output_shm = prof.output_shm = &shm;
	run.core = 2;
	bench.core = 3;
	prof.core = 1;
	run.job_class = NKID__V1__JOB_CLASS__JOB_CLASS_BATCH;
	for (i = 0; i < sizeof want / sizeof want[0]; i++) {
		/* The request each kernel RPC's handler is given. */
		ck_assert_ptr_eq(dispatch_method_proto(dispatch_method_find(
		    want[i].method))->input, want[i].req->descriptor);
		ck_assert_ptr_eq(dispatch_method_find(want[i].method)->handler,
		    job_rpc);
		job_args_decode(want[i].req, &a);
		ck_assert_ptr_eq(a.ref, &ref);
		ck_assert_ptr_eq(a.inputs, in);
		ck_assert_uint_eq(a.ninputs, 2);
		ck_assert_ptr_eq(a.output_shm, want[i].output_shm);
		ck_assert_int_eq(a.core, want[i].core);
		ck_assert_int_eq(a.job_class, want[i].job_class);
	}
}
END_TEST
