/*
 * ctl_kargs.c: parsing the command line of the commands that send a
 * kernel, and the KernelRef they build from it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_kargs.h"

#define CTL_KARGS_MAX_INPUTS 4096

/* Parse into ka; CTL_EXIT_OK with ka->kernel set to go on. */
static int
ctl_kargs_parse_opts(ctl_ctx *ctx, int argc, char **argv, unsigned flags,
    ctl_kargs *ka)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output-dir", required_argument, NULL, 'o' },
		{ "core", required_argument, NULL, 'c' },
		{ "batch", no_argument, NULL, 'B' },
		{ "target", required_argument, NULL, 't' },
		{ "options", required_argument, NULL, 'O' },
		{ "retry-failed", no_argument, NULL, 'R' },
		{ "neff", required_argument, NULL, 'N' },
		CTL_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long v;
	int c, rc;

	memset(ka, 0, sizeof(*ka));
	ka->outdir = ".";
	ka->target = "";
	ka->options = "";
	ka->core = -1;
	ka->specs = calloc(argc + 1, sizeof(*ka->specs));
	if (ka->specs == NULL) {
		ctl_errorf(ctx, "%s: out of memory", ctx->cmd->name);
		return CTL_EXIT_FAIL;
	}
	while ((c = ctl_opt_next(ctx, argc, argv, "i:o:c:t:", longopts,
	    &rc)) != -1) {
		unsigned need = c == 'i' || c == 'o' ? CTL_KARGS_INPUTS :
		    c == 'c' || c == 'B' ? CTL_KARGS_CORE :
		    c == 'N' ? CTL_KARGS_NEFF : 0;

		if (c == CTL_OPT_DONE)
			return rc;
		if (need != 0 && !(flags & need))
			return ctl_usage_fail(ctx, "unknown option '%s'",
			    c == 'i' ? "-i" : c == 'o' ? "-o" : c == 'c' ?
			    "-c" : c == 'B' ? "--batch" : "--neff");
		switch (c) {
		case 'i':
			if (ka->nspecs == CTL_KARGS_MAX_INPUTS)
				return ctl_usage_fail(ctx, "more than %d "
				    "inputs", CTL_KARGS_MAX_INPUTS);
			ka->specs[ka->nspecs++] = optarg;
			break;
		case 'o':
			if (*optarg == '\0')
				return ctl_usage_fail(ctx, "empty output "
				    "directory");
			ka->outdir = optarg;
			break;
		case 'c':
			if (ctl_parse_uint(optarg, 0, 65535, &v) < 0)
				return ctl_usage_fail(ctx, "bad core '%s': want "
				    "a core index", optarg);
			ka->core = (int)v;
			break;
		case 'B':
			ka->batch = 1;
			break;
		case 't':
			ka->target = optarg;
			break;
		case 'O':
			ka->options = optarg;
			break;
		case 'R':
			ka->retry_failed = 1;
			break;
		case 'N':
			if (*optarg == '\0')
				return ctl_usage_fail(ctx, "empty --neff path");
			ka->neff = optarg;
			break;
		}
	}
	if (optind >= argc)
		return ctl_usage_fail(ctx, "missing KERNEL (a traced kernel "
		    "file)");
	ka->kernel = argv[optind++];
	if (optind < argc)
		return ctl_usage_fail(ctx, "unexpected argument '%s'%s",
		    argv[optind], flags & CTL_KARGS_INPUTS ?
		    " (inputs go as -i NAME=FILE.npy)" : "");
	return CTL_EXIT_OK;
}

int
ctl_kargs_parse(ctl_ctx *ctx, int argc, char **argv, unsigned flags,
    ctl_kargs *ka, int *rc)
{
	*rc = ctl_kargs_parse_opts(ctx, argc, argv, flags, ka);
	return ka->kernel != NULL && *rc == CTL_EXIT_OK ? 0 : -1;
}

void
ctl_kargs_release(ctl_kargs *ka)
{
	free(ka->specs);
	memset(ka, 0, sizeof(*ka));
}

void
ctl_kargs_ref(const ctl_kargs *ka, const Nkid__V1__KernelRef *saved,
    Nkid__V1__KernelRef *ref)
{
	ref->kernel = saved->kernel;
	ref->neff_key = saved->neff_key;
	ref->target = *ka->target ? (char *)ka->target : saved->target;
	ref->options = *ka->options ? (char *)ka->options : saved->options;
	ref->retry_failed = ka->retry_failed || saved->retry_failed;
}

int
ctl_kargs_write_file(ctl_ctx *ctx, const char *path, const void *data,
    size_t len)
{
	const char *p = data;
	char *tmp;
	int fd;

	if (asprintf(&tmp, "%s.tmp", path) < 0) {
		ctl_errorf(ctx, "%s: out of memory", ctx->cmd->name);
		return CTL_EXIT_FAIL;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;

			close(fd);
			unlink(tmp);
			errno = e;
			goto fail;
		}
		p += w;
		len -= w;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;

		unlink(tmp);
		errno = e;
		goto fail;
	}
	free(tmp);
	return CTL_EXIT_OK;
fail:
	ctl_errorf(ctx, "%s: cannot write '%s': %s", ctx->cmd->name, path,
	    strerror(errno));
	free(tmp);
	return CTL_EXIT_FAIL;
}
