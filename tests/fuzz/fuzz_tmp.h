/*
 * fuzz_tmp.h: a private directory under /tmp for a fuzz target's state,
 * removed with everything in it when the target exits.
 */
#ifndef NKID_FUZZ_TMP_H
#define NKID_FUZZ_TMP_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char	fuzz_tmp_dir[64];

static int
fuzz_tmp_rm_cb(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return (0);
}

static void
fuzz_tmp_rm(void)
{
	if (fuzz_tmp_dir[0] != '\0')
		nftw(fuzz_tmp_dir, fuzz_tmp_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Make the directory (once) and return its path; aborts on failure. */
static inline const char *
fuzz_tmp_make(const char *name)
{
	if (fuzz_tmp_dir[0] != '\0')
		return (fuzz_tmp_dir);
	snprintf(fuzz_tmp_dir, sizeof fuzz_tmp_dir, "/tmp/nkid-fuzz-%s.XXXXXX",
	    name);
	if (mkdtemp(fuzz_tmp_dir) == NULL)
		abort();
	atexit(fuzz_tmp_rm);
	return (fuzz_tmp_dir);
}

#endif /* NKID_FUZZ_TMP_H */
