/* ctl_kernel.h: kernel files as the Python tracer writes them, and what nkictl needs to know of a kernel's signature. */
#ifndef NKID_CTL_KERNEL_H
#define NKID_CTL_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "nkid.pb-c.h"

/* Largest kernel file accepted. */
#define CTL_KERNEL_MAX_BYTES	(256u << 20)

/* The saved-kernel format of the Python tracer (nkid.trace.save, see
 * docs/python.md): this magic, then one serialized nkid.v1.KernelRef. */
#define CTL_KERNEL_MAGIC	"NKIDKRF1"
#define CTL_KERNEL_MAGIC_LEN	8

/* Most dimensions of a parameter (nkir/1 allows 8). */
#define CTL_KERNEL_MAX_RANK	8

/* A kernel parameter: its name, wire dtype ("float32", ...) and shape. */
struct ctl_kernel_param {
	char		*name;
	const char	*dtype;		/* static; "": unknown */
	size_t		 rank;		/* 0: unknown */
	uint64_t	 shape[CTL_KERNEL_MAX_RANK];
};

/* The parameters in call order, when the kernel's format tells them. */
struct ctl_kernel_sig {
	int			 known;		/* 0: opaque (penguin) */
	size_t			 n_params;
	struct ctl_kernel_param	*params;
};

/*
 * Read the kernel file at path: the one place that knows the file format.
 * On success *out is a KernelRef with its kernel set (name, format, IR,
 * and the spec key, target and options it was traced with), freed by the
 * caller with ctl_kernel_free. On failure err holds "cannot read kernel
 * 'PATH': ..." and *out is NULL.
 */
int	 ctl_kernel_read(const char *path, Nkid__V1__KernelRef **out,
	    char *err, size_t errlen);
/* Free what ctl_kernel_read returned. NULL is a no-op. */
void	 ctl_kernel_free(Nkid__V1__KernelRef *ref);

/*
 * Fill sig from the kernel's IR: format "nkir/1" gives names, dtypes and
 * shapes;
 * any other format gives sig->known = 0. On malformed IR returns -1 with
 * err set. Release with ctl_kernel_sig_release.
 */
int	 ctl_kernel_sig_get(const Nkid__V1__Kernel *k,
	    struct ctl_kernel_sig *sig, char *err, size_t errlen);
void	 ctl_kernel_sig_release(struct ctl_kernel_sig *sig);

#endif /* NKID_CTL_KERNEL_H */
