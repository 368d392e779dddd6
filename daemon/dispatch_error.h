/* dispatch_error.h: the one place where errors of the modules below the wire (kernel cache, backends, scheduler, tensors, shared memory) become a gRPC status and the words a user reads. */
#ifndef NKID_DISPATCH_ERROR_H
#define NKID_DISPATCH_ERROR_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/status.h>

struct kcache_result;
struct rpc_call;
struct sched_job;

/*
 * Answer c for a resolve that failed (r->error != KCACHE_OK): NOT_FOUND
 * for a key nkid does not have, FAILED_PRECONDITION for a cached failure
 * (with its log) or a kernel the device will not load, else the status of
 * the backend's error, with "cannot compile 'NAME': DIAG".
 */
void	dispatch_fail_kcache(struct rpc_call *c, const struct kcache_result *r);
/* The same status and words into msg (len bytes), answering nothing. */
grpc_status_code dispatch_kcache_error(const struct kcache_result *r,
	    char *msg, size_t len);

/*
 * Answer c for an execution of job sj that failed with backend error
 * (BACKEND_E*) and diag, verb ("run") and name naming it: "cannot VERB
 * 'NAME': DIAG", or CANCELLED saying who stopped it (sj->stop_reason).
 */
void	dispatch_fail_exec(struct rpc_call *c, const struct sched_job *sj,
	    const char *verb, const char *name, int error, const char *diag);

/*
 * Answer c for job sj that never ran (its done ran with outcome !=
 * SCHED_RAN): DEADLINE_EXCEEDED, CANCELLED or UNAVAILABLE, naming the
 * job, kernel and wait.
 */
void	dispatch_fail_unrun(struct rpc_call *c, const struct sched_job *sj,
	    int outcome, const char *verb, const char *name);

/* The status of a backend error (BACKEND_E*). */
grpc_status_code dispatch_status_backend(int error);
/* The status of a tensor error (TENSOR_E*, daemon/tensor.h). */
grpc_status_code dispatch_status_tensor(int error);
/* The status of a shared-memory error (SHM_E*, daemon/shm.h). */
grpc_status_code dispatch_status_shm(int error);
/* The status of a scheduler admission error (SCHED_E*). */
grpc_status_code dispatch_status_sched(int error);
/* The status of a cache error (CACHE_E*, cache/cache.h) in building a
 * bundle (CacheExport). */
grpc_status_code dispatch_status_cache_export(int error);
/* The status of a cache error in importing a bundle (CacheImport). */
grpc_status_code dispatch_status_cache_import(int error);

#endif /* NKID_DISPATCH_ERROR_H */
