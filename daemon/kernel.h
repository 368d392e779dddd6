/* kernel.h: a request's KernelRef checked and turned into a request of the kernel cache (daemon/kcache.h). */
#ifndef NKID_KERNEL_H
#define NKID_KERNEL_H

#include <stddef.h>

#include <grpc/status.h>

#include "nkid.pb-c.h"

struct daemon;
struct kcache_request;

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
