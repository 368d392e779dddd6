/* check_shm.c: shared-memory regions: names, ranges, ownership, file types, mappings, writes and the SIGBUS guard. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "daemon/shm.h"
#include "tests/unit/check_main.h"

static char	err[512];

CHECK_SUITE("shm", check_dir_setup, check_dir_teardown, NULL);
CHECK_TCASE(core, 0);

/* A file dir/name of size bytes: byte i = i % 251. */
static void
make(const char *name, size_t size)
{
	char	path[256];
	uint8_t	*b;
	size_t	 i;
	int	 fd;

	snprintf(path, sizeof path, "%s/%s", check_dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	b = malloc(size + 1);
	for (i = 0; i < size; i++)
		b[i] = (uint8_t)(i % 251);
	ck_assert_int_eq(write(fd, b, size), (ssize_t)size);
	free(b);
	close(fd);
}

CHECK_TEST(core, test_shm_names)
{
	static const char *good[] = { "nkid.0.123.abcdef", "nkid.x",
	    "nkid.A-b_c.9", "nkid..", "nkid...." };
	static const char *bad[] = { "", "nkid.", "nkid", "x.nkid.1", "..",
	    ".", "nkid./etc", "nkid.a/b", "../nkid.a", "/dev/shm/nkid.a",
	    "nkid.a b", "nkid.a\n", "nkid.\xc3\xa9", "NKID.a" };
	char	 longname[SHM_NAME_MAX + 2];
	size_t	 i;

	for (i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(shm_name_check(good[i], err, sizeof err) == 0,
		    "%s: %s", good[i], err);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(shm_name_check(bad[i], err, sizeof err) ==
		    SHM_EINVAL, "'%s' accepted", bad[i]);
	ck_assert_int_eq(shm_name_check(NULL, err, sizeof err), SHM_EINVAL);
	memset(longname, 'a', sizeof longname);
	memcpy(longname, "nkid.", 5);
	longname[SHM_NAME_MAX] = '\0';
	ck_assert_int_eq(shm_name_check(longname, err, sizeof err), 0);
	longname[SHM_NAME_MAX] = 'a';
	longname[SHM_NAME_MAX + 1] = '\0';
	ck_assert_int_eq(shm_name_check(longname, err, sizeof err),
	    SHM_EINVAL);
}
END_TEST

CHECK_TEST(core, test_shm_ranges)
{
	ck_assert_int_eq(shm_range_check("r", 0, 100, 100, err, sizeof err), 0);
	ck_assert_int_eq(shm_range_check("r", 100, 0, 100, err, sizeof err),
	    0);
	ck_assert_int_eq(shm_range_check("r", 1, 100, 100, err, sizeof err),
	    SHM_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "too small"));
	ck_assert_int_eq(shm_range_check("r", UINT64_MAX, 2, UINT64_MAX, err,
	    sizeof err), SHM_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "overflows"));
	ck_assert_int_eq(shm_range_check("r", 1, UINT64_MAX, UINT64_MAX, err,
	    sizeof err), SHM_EINVAL);
}
END_TEST

CHECK_TEST(core, test_shm_open_checks)
{
	struct shm_set	*s, *other;
	char		 path[256], target[256];
	int		 i, j;

	make("nkid.a", 4096);
	s = shm_set_new(check_dir, getuid());
	i = shm_set_open(s, "nkid.a", 0, 0, 4096, err, sizeof err);
	ck_assert_msg(i >= 0, "%s", err);
	ck_assert_int_eq(shm_set_file_size(s, i), 4096);
	ck_assert_str_eq(shm_set_name(s, i), "nkid.a");
	/* The same region and mode is reused; another mode is not. */
	ck_assert_int_eq(shm_set_open(s, "nkid.a", 0, 100, 10, err,
	    sizeof err), i);
	j = shm_set_open(s, "nkid.a", 1, 0, 1, err, sizeof err);
	ck_assert_int_ge(j, 0);
	ck_assert_int_ne(i, j);
	/* Too small, reused or not. */
	ck_assert_int_eq(shm_set_open(s, "nkid.a", 0, 1, 4096, err,
	    sizeof err), SHM_EINVAL);
	/* Missing. */
	ck_assert_int_eq(shm_set_open(s, "nkid.none", 0, 0, 0, err,
	    sizeof err), SHM_ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "nkid.none"));
	/* A symlink to our own file. */
	snprintf(path, sizeof path, "%s/nkid.link", check_dir);
	snprintf(target, sizeof target, "%s/nkid.a", check_dir);
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_eq(shm_set_open(s, "nkid.link", 0, 0, 1, err,
	    sizeof err), SHM_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
	/* A FIFO: refused without blocking; a directory. */
	snprintf(path, sizeof path, "%s/nkid.fifo", check_dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(shm_set_open(s, "nkid.fifo", 0, 0, 0, err,
	    sizeof err), SHM_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
	snprintf(path, sizeof path, "%s/nkid.dir", check_dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_lt(shm_set_open(s, "nkid.dir", 0, 0, 0, err,
	    sizeof err), 0);
	/* A bad name never reaches open. */
	ck_assert_int_eq(shm_set_open(s, "nkid.a/../nkid.a", 0, 0, 0, err,
	    sizeof err), SHM_EINVAL);
	shm_set_free(s);

	/* Ownership: the file is ours, the caller is someone else. */
	other = shm_set_new(check_dir, getuid() + 1);
	ck_assert_int_eq(shm_set_open(other, "nkid.a", 0, 0, 1, err,
	    sizeof err), SHM_EPERM);
	ck_assert_ptr_nonnull(strstr(err, "nkid.a"));
	ck_assert_ptr_nonnull(strstr(err, "not to the caller"));
	shm_set_free(other);
}
END_TEST

CHECK_TEST(core, test_shm_region_cap)
{
	struct shm_set	*s;
	char		 name[32];
	int		 i;

	s = shm_set_new(check_dir, getuid());
	for (i = 0; i <= SHM_MAX_REGIONS; i++) {
		snprintf(name, sizeof name, "nkid.r%d", i);
		make(name, 1);
		if (i < SHM_MAX_REGIONS)
			ck_assert_int_eq(shm_set_open(s, name, 0, 0, 1, err,
			    sizeof err), i);
		else
			ck_assert_int_eq(shm_set_open(s, name, 0, 0, 1, err,
			    sizeof err), SHM_ELIMIT);
	}
	shm_set_free(s);
}
END_TEST

CHECK_TEST(core, test_shm_map_and_write)
{
	struct shm_set	*s;
	const uint8_t	*p, *q;
	uint8_t		 out[100], back[100];
	char		 path[256];
	size_t		 k;
	int		 i, w, fd;

	make("nkid.m", 3 * 4096 + 17);
	s = shm_set_new(check_dir, getuid());
	i = shm_set_open(s, "nkid.m", 0, 4097, 8192, err, sizeof err);
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(shm_set_map(s, i, 4097, 8192, (const void **)&p, err,
	    sizeof err), 0);
	for (k = 0; k < 8192; k++)
		ck_assert_int_eq(p[k], (4097 + k) % 251);
	ck_assert_int_eq(shm_set_map(s, i, 5, 0, (const void **)&q, err,
	    sizeof err), 0);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(shm_maps_active(), 1);
	/* Writes go through pwrite, at any offset. */
	w = shm_set_open(s, "nkid.m", 1, 0, 3 * 4096 + 17, err, sizeof err);
	ck_assert_int_ge(w, 0);
	for (k = 0; k < sizeof out; k++)
		out[k] = (uint8_t)(255 - k);
	ck_assert_int_eq(shm_set_write(s, w, 3 * 4096, out, sizeof out, err,
	    sizeof err), 0);
	ck_assert_int_eq(shm_set_write(s, i, 0, out, 1, err, sizeof err),
	    SHM_ESYS);		/* read-only region */
	ck_assert_ptr_null(shm_set_damaged(s));
	shm_set_close(s);
	ck_assert_int_eq(shm_set_write(s, w, 0, out, 1, err, sizeof err),
	    SHM_ESYS);
	shm_set_free(s);
	ck_assert_uint_eq(shm_maps_active(), 0);
	snprintf(path, sizeof path, "%s/nkid.m", check_dir);
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(pread(fd, back, sizeof back, 3 * 4096), sizeof back);
	close(fd);
	ck_assert_mem_eq(back, out, sizeof out);
}
END_TEST

CHECK_TEST(core, test_shm_sigbus_guard)
{
	struct shm_set		*s;
	const volatile uint8_t	*p;
	char			 path[256];
	unsigned		 sum = 0;
	size_t			 k;
	int			 i;

	make("nkid.t", 4 * 4096);
	s = shm_set_new(check_dir, getuid());
	i = shm_set_open(s, "nkid.t", 0, 0, 4 * 4096, err, sizeof err);
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(shm_set_map(s, i, 0, 4 * 4096, (const void **)&p,
	    err, sizeof err), 0);
	ck_assert_int_eq(p[4097], 4097 % 251);
	/* The client shrinks its region while nkid reads it. */
	snprintf(path, sizeof path, "%s/nkid.t", check_dir);
	ck_assert_int_eq(truncate(path, 100), 0);
	for (k = 0; k < 4 * 4096; k++)
		sum += p[k];		/* would be SIGBUS past page 0 */
	(void)sum;
	ck_assert_int_eq(p[3 * 4096], 0);
	ck_assert_str_eq(shm_set_damaged(s), "nkid.t");
	shm_set_free(s);
	ck_assert_uint_eq(shm_maps_active(), 0);
}
END_TEST
