/* kernel.h: a request's KernelRef checked and turned into a request of the kernel cache (daemon/kcache.h), resolved for its caller (kernel_view.c: which entries a caller may see). */
#ifndef NKID_KERNEL_H
#define NKID_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/status.h>

#include "nkid.pb-c.h"

#include "daemon/kcache.h"

struct daemon;
struct kernel_grants;
struct rpc_call;

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

/*
 * Whose cache entries call c sees (kernel_view.c): CACHE_VIEW_ALL when
 * access.cache_visibility is "shared" or c is an administrator's, else
 * its uid (cache_entry_visible: the entries it stored, and those pinned
 * by an administrator). A request with IR is served whoever stored its
 * kernel: the key comes from the caller's own IR.
 */
int64_t	kernel_viewer(const struct rpc_call *c);

/*
 * kcache_resolve(rq) for call c, as c's uid (rq->owner), on the loop
 * thread. Under owner visibility, a key c names (KernelRef.neff_key) is
 * served only if c sees its entry or proved it holds the kernel's IR
 * since nkid started (a request with that IR, or a Lookup of its digest:
 * kernel_grant); else done gets KCACHE_ENOENT, as for a key nkid does
 * not have. A key named beside the IR is then ignored (the IR decides).
 * rq is copied; its strings are borrowed until done runs, which runs
 * exactly once.
 */
void	kernel_resolve(struct rpc_call *c, const struct kcache_request *rq,
	    kcache_done_cb done, void *arg);

/*
 * Record that uid proved it holds the IR of key's kernel (it sent the IR,
 * or looked its digest up): later requests by key alone are served to it
 * under owner visibility. In memory, on the loop thread; the table starts
 * again from empty past its bound (a later request proves it again).
 * A key that is not a key is ignored.
 */
void	kernel_grant(struct daemon *d, uint32_t uid, const char *key);
/* Nonzero if kernel_grant recorded uid and key. */
int	kernel_granted(struct daemon *d, uint32_t uid, const char *key);
/* Forget every grant (after an unpin: what an administrator's pin
 * showed may be hidden now). */
void	kernel_grants_clear(struct daemon *d);
/* Free a grant table (NULL: nothing); daemon_release's. */
void	kernel_grants_free(struct kernel_grants *g);

#endif /* NKID_KERNEL_H */
