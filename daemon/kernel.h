/* kernel.h: from a KernelRef to a loaded kernel: validation, then the cache's compile path (daemon/kcache.h). */
#ifndef NKID_KERNEL_H
#define NKID_KERNEL_H

#include <stddef.h>

#include <grpc/status.h>

#include "nkid.pb-c.h"

struct daemon;
struct kcache_entry;
struct kcache_request;
struct rpc_call;

/* Called on the loop thread with a referenced entry that the callee
 * releases with kcache_entry_unref. */
typedef void (*kernel_resolve_cb)(struct rpc_call *c, struct kcache_entry *e,
    int cache_hit, double compile_ms);

/*
 * Find or build the kernel ref names, for call c: a neff_key present in
 * the cache is used; else the kernel's IR (format checked, size bounded)
 * is keyed and looked up, and compiled on the thread pool on a miss
 * (kcache_resolve: single-flight, stored, failures cached). On success cb
 * runs (maybe before this returns); on failure the call is answered with
 * rpc_fail and cb never runs. ref must live until then (it belongs to
 * c->req). The compile step of Run, Simulate, Benchmark and Profile.
 */
void	kernel_resolve(struct rpc_call *c, const Nkid__V1__KernelRef *ref,
	    kernel_resolve_cb cb);
/*
 * Check ref for d's backend and fill rq (borrowing from ref) for
 * kcache_resolve. method names the RPC in messages. On a bad ref returns
 * -1 with *code and msg set; nothing is answered.
 */
int	kernel_request_init(struct daemon *d, const char *method,
	    const Nkid__V1__KernelRef *ref, struct kcache_request *rq,
	    grpc_status_code *code, char *msg, size_t len);
/* The name to use in messages for ref: the kernel's name or "kernel". */
const char *kernel_ref_name(const Nkid__V1__KernelRef *ref);

#endif /* NKID_KERNEL_H */
