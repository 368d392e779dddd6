/* ctl_manifest.h: kernel manifests (docs/cache.md), the lists of kernel files that warmup compiles and cache verify checks. */
#ifndef NKID_CTL_MANIFEST_H
#define NKID_CTL_MANIFEST_H

#include <stddef.h>

#include "nkid.pb-c.h"
#include "ctl.h"

/* Largest manifest accepted. */
#define CTL_MANIFEST_MAX_BYTES	(16u << 20)

/* One kernel of a manifest: its file, read, with the manifest's target
 * and options applied. */
struct ctl_manifest_item {
	char			*path;
	Nkid__V1__KernelRef	*ref;		/* ctl_kernel_read's, or NULL */
	char			*target;	/* NULL: the file's */
	char			*options;	/* NULL: the file's */
	char			*err;		/* why not read */
};

struct ctl_manifest {
	struct ctl_manifest_item	*items;
	size_t				 n;
	size_t				 unreadable; /* items with err */
};

/*
 * Read a manifest: {"target": T, "options": O, "kernels": ["file.nkir" |
 * {"path": P, "target": T, "options": O}, ...]} with paths relative to
 * the manifest's directory, and every kernel file it names. Returns 0, or
 * -1 with err saying why (m is then released): a manifest that is not
 * valid JSON names the line and column where it goes wrong.
 */
int	 ctl_manifest_read(const char *path, struct ctl_manifest *m,
	    char *err, size_t errlen);
/*
 * ctl_manifest_read, except that a kernel file that cannot be read does
 * not fail the manifest: its item keeps why in err (ref NULL), counted in
 * m->unreadable. A manifest that is not valid JSON, or an entry that names
 * no path, still fails it.
 */
int	 ctl_manifest_read_all(const char *path, struct ctl_manifest *m,
	    char *err, size_t errlen);
void	 ctl_manifest_release(struct ctl_manifest *m);
/* The effective KernelRef of item i, borrowing from m. */
void	 ctl_manifest_ref(const struct ctl_manifest *m, size_t i,
	    Nkid__V1__KernelRef *ref);
/*
 * Send the n items of a manifest's request (warmup, cache pull) to method
 * in batches of at most batch: req's repeated field "items" is set to
 * each batch in turn, and fn(ctx, reply, first, count, arg) takes nkid's
 * reply for items first .. first + count - 1 (freed after). Returns
 * CTL_EXIT_OK, or the failure of a call (printed as ctl_call does; the
 * batches after it are not sent).
 */
int	 ctl_manifest_send(struct ctl_ctx *ctx, const char *method,
	    ProtobufCMessage *req, const ProtobufCMessageDescriptor *reply_desc,
	    ProtobufCMessage **items, size_t n, size_t batch,
	    void (*fn)(struct ctl_ctx *, const ProtobufCMessage *, size_t,
	    size_t, void *), void *arg);

#endif /* NKID_CTL_MANIFEST_H */
