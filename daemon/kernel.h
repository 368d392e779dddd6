/* kernel.h: from a KernelRef to a loaded kernel: NEFF key lookup, else compile off the loop. */
#ifndef NKID_KERNEL_H
#define NKID_KERNEL_H

#include "nkid.pb-c.h"

struct kcache_entry;
struct rpc_call;

/* Called on the loop thread with a referenced entry that the callee
 * releases with kcache_entry_unref. */
typedef void (*kernel_resolve_cb)(struct rpc_call *c, struct kcache_entry *e,
    int cache_hit, double compile_ms);

/*
 * Find or build the kernel ref names, for call c: a neff_key present in
 * the table is used; else the kernel's IR (format checked, size bounded)
 * is keyed and looked up, and compiled on the thread pool on a miss. On
 * success cb runs (maybe before this returns); on failure the call is
 * answered with rpc_fail and cb never runs. ref must live until then
 * (it belongs to c->req).
 */
void	kernel_resolve(struct rpc_call *c, const Nkid__V1__KernelRef *ref,
	    kernel_resolve_cb cb);
/* The name to use in messages for ref: the kernel's name or "kernel". */
const char *kernel_ref_name(const Nkid__V1__KernelRef *ref);

#endif /* NKID_KERNEL_H */
