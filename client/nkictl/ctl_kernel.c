/* ctl_kernel.c: kernel files and their signatures read, the one place in nkictl that knows the kernel file format. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nkir.pb-c.h"
#include "sim/sim.h"
#include "ctl_kernel.h"

int
ctl_kernel_read(const char *path, Nkid__V1__KernelRef **out, char *err,
    size_t errlen)
{
	Nkid__V1__KernelRef	*ref = NULL;
	const Nkid__V1__Kernel	*k;
	uint8_t			*buf = NULL;
	struct stat		 st;
	size_t			 got = 0;
	int			 fd, rc = -1;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);	/* a FIFO must not block */
	if (fd < 0) {
		snprintf(err, errlen, "cannot read kernel '%s': %s", path,
		    strerror(errno));
		return (-1);
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "cannot read kernel '%s': not a regular "
		    "file", path);
		goto out;
	}
	if ((unsigned long long)st.st_size > CTL_KERNEL_MAX_BYTES) {
		snprintf(err, errlen, "cannot read kernel '%s': %lld bytes "
		    "exceeds the limit of %u", path, (long long)st.st_size,
		    CTL_KERNEL_MAX_BYTES);
		goto out;
	}
	buf = malloc(st.st_size ? st.st_size : 1);
	if (buf == NULL) {
		snprintf(err, errlen, "cannot read kernel '%s': out of memory",
		    path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, errlen, "cannot read kernel '%s': %s",
			    path, r < 0 ? strerror(errno) : "file shrank");
			goto out;
		}
		got += r;
	}
	if (got < CTL_KERNEL_MAGIC_LEN || memcmp(buf, CTL_KERNEL_MAGIC,
	    CTL_KERNEL_MAGIC_LEN) != 0) {
		snprintf(err, errlen, "cannot read kernel '%s': not a saved "
		    "kernel (no %s magic; write it with python -m nkid.trace)",
		    path, CTL_KERNEL_MAGIC);
		goto out;
	}
	ref = nkid__v1__kernel_ref__unpack(NULL, got - CTL_KERNEL_MAGIC_LEN,
	    buf + CTL_KERNEL_MAGIC_LEN);
	if (ref == NULL) {
		snprintf(err, errlen, "cannot read kernel '%s': malformed "
		    "nkid.v1.KernelRef after the magic", path);
		goto out;
	}
	k = ref->kernel;
	if (k == NULL || *k->format == '\0' || k->ir.len == 0) {
		snprintf(err, errlen, "cannot read kernel '%s': no %s", path,
		    k == NULL ? "kernel" : *k->format == '\0' ? "format" :
		    "IR");
		ctl_kernel_free(ref);
		goto out;
	}
	*out = ref;
	rc = 0;
out:
	free(buf);
	close(fd);
	return (rc);
}

void
ctl_kernel_free(Nkid__V1__KernelRef *ref)
{
	if (ref != NULL)
		nkid__v1__kernel_ref__free_unpacked(ref, NULL);
}

int
ctl_kernel_sig_get(const Nkid__V1__Kernel *k, struct ctl_kernel_sig *sig,
    char *err, size_t errlen)
{
	Nkir__V1__Kernel	*ir;
	size_t			 i;

	memset(sig, 0, sizeof *sig);
	if (strcmp(k->format, "nkir/1") != 0)
		return (0);
	ir = nkir__v1__kernel__unpack(NULL, k->ir.len, k->ir.data);
	if (ir == NULL) {
		snprintf(err, errlen, "kernel '%s': malformed nkir/1 IR",
		    k->name);
		return (-1);
	}
	sig->params = calloc(ir->n_params ? ir->n_params : 1,
	    sizeof *sig->params);
	if (sig->params == NULL)
		goto nomem;
	for (i = 0; i < ir->n_params; i++) {
		const Nkir__V1__Param *p = ir->params[i];
		struct ctl_kernel_param *q = &sig->params[i];

		q->name = strdup(p->name);
		if (q->name == NULL)
			goto nomem;
		sig->n_params++;
		q->dtype = "";
		if (p->tensor < ir->n_tensors) {
			const Nkir__V1__Tensor *t = ir->tensors[p->tensor];
			size_t j;

			if (sim_dtype_name((int)t->dtype) != NULL)
				q->dtype = sim_dtype_name((int)t->dtype);
			if (t->n_shape <= CTL_KERNEL_MAX_RANK) {
				q->rank = t->n_shape;
				for (j = 0; j < t->n_shape; j++)
					q->shape[j] = t->shape[j];
			}
		}
	}
	sig->known = 1;
	nkir__v1__kernel__free_unpacked(ir, NULL);
	return (0);
nomem:
	nkir__v1__kernel__free_unpacked(ir, NULL);
	ctl_kernel_sig_release(sig);
	snprintf(err, errlen, "kernel '%s': out of memory", k->name);
	return (-1);
}

void
ctl_kernel_sig_release(struct ctl_kernel_sig *sig)
{
	size_t	i;

	for (i = 0; i < sig->n_params; i++)
		free(sig->params[i].name);
	free(sig->params);
	memset(sig, 0, sizeof *sig);
}
