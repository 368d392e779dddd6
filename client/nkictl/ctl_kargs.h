/*
 * ctl_kargs.h: the command line shared by the commands that send a kernel
 * (compile, run, simulate, later benchmark, profile, warmup):
 *   KERNEL [-i [NAME=]FILE.npy]... [-o DIR] [-c CORE] [--batch]
 *          [--target T] [--options OPTS] [--retry-failed] [--neff FILE]
 */
#ifndef NKID_CTL_KARGS_H
#define NKID_CTL_KARGS_H

#include <stddef.h>

#include "nkid.pb-c.h"
#include "ctl.h"

/* Which options a command takes besides KERNEL, --target, --options and
 * --retry-failed. */
enum {
	CTL_KARGS_INPUTS = 1 << 0,    /* -i, -o */
	CTL_KARGS_CORE = 1 << 1,      /* -c CORE, --batch */
	CTL_KARGS_NEFF = 1 << 2,      /* --neff FILE */
};

typedef struct ctl_kargs {
	const char *kernel;       /* the kernel file */
	char **specs;             /* -i values (borrowed from argv) */
	size_t nspecs;
	const char *outdir;       /* -o, default "." */
	const char *target;       /* "" if not given */
	const char *options;      /* "" if not given */
	const char *neff;         /* --neff FILE, NULL if not given */
	int retry_failed;
	int core;                 /* -1: any */
	int batch;
} ctl_kargs;

/*
 * Parse argv (argv[0] the command word) for the options in flags. Returns
 * 0 to go on, or -1 when the command must return *rc now (after --help: 0;
 * a usage error, printed: 2). Release ka with ctl_kargs_release in both
 * cases.
 */
int ctl_kargs_parse(ctl_ctx *ctx, int argc, char **argv, unsigned flags,
    ctl_kargs *ka, int *rc);

void ctl_kargs_release(ctl_kargs *ka);

/* Fill ref (initialized by the caller) for a request: the kernel, spec key,
 * target and options of the file's ref, --target and --options when given
 * instead, --retry-failed. Everything is borrowed from saved and ka. */
void ctl_kargs_ref(const ctl_kargs *ka, const Nkid__V1__KernelRef *saved,
    Nkid__V1__KernelRef *ref);

/* Write bytes to path (temp + rename); prints and returns CTL_EXIT_FAIL on
 * failure. */
int ctl_kargs_write_file(ctl_ctx *ctx, const char *path, const void *data,
    size_t len);

#endif
