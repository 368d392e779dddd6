/*
 * check_ctl_npy.c: the .npy reader and writer of nkictl (client/nkictl/npy.c):
 * round trips of every dtype, and every kind of malformed, truncated or
 * overflowing file rejected with a message that names the file.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/nkictl/npy.h"
#include "tests/unit/check_main.h"

static char tmpdir[64];
static char path[512];

static void
setup(void)
{
	check_dir_make(tmpdir, sizeof tmpdir, "check_ctl_npy");
	snprintf(path, sizeof path, "%s/a.npy", tmpdir);
}

static void
teardown(void)
{
	check_dir_remove(tmpdir);
}

CHECK_SUITE("ctl_npy", setup, teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(errors, 0);
/* Thousands of files written and read: slow on a loaded machine. */
CHECK_TCASE(limits, 60);

static void
file_put(const char *p, const void *data, size_t len)
{
	int	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* An .npy image: version major, header dict (padded to 64 with '\n'),
 * then ndata bytes of 0xab. Returns its length; *out is malloc'd. */
static size_t
npy_image(int major, const char *dict, size_t ndata, unsigned char **out)
{
	size_t		 prefix = major == 1 ? 10 : 12, dlen = strlen(dict);
	size_t		 hlen, len;
	unsigned char	*b;

	hlen = (prefix + dlen + 1 + 63) / 64 * 64 - prefix;
	len = prefix + hlen + ndata;
	b = malloc(len);
	ck_assert_ptr_nonnull(b);
	memcpy(b, "\x93NUMPY", 6);
	b[6] = major;
	b[7] = 0;
	b[8] = hlen & 0xff;
	b[9] = hlen >> 8 & 0xff;
	if (major != 1) {
		b[10] = hlen >> 16 & 0xff;
		b[11] = hlen >> 24 & 0xff;
	}
	memcpy(b + prefix, dict, dlen);
	memset(b + prefix + dlen, ' ', hlen - dlen - 1);
	b[prefix + hlen - 1] = '\n';
	memset(b + prefix + hlen, 0xab, ndata);
	*out = b;
	return (len);
}

/* Parse an image both in memory and from a file; the two agree. Returns
 * the code; err holds the file variant's message. */
static int
parse_both(const unsigned char *b, size_t len, struct npy_array *a, char *err,
    size_t errlen)
{
	struct npy_array	m;
	char			merr[1024];
	int			rc1, rc2;

	rc1 = npy_array_parse(b, len, path, &m, merr, sizeof merr);
	file_put(path, b, len);
	rc2 = npy_array_read(path, a, err, errlen);
	ck_assert_msg(rc1 == rc2, "memory %d (%s) vs file %d (%s)", rc1,
	    rc1 ? merr : "", rc2, rc2 ? err : "");
	if (rc1 == 0) {
		ck_assert_int_eq(m.nbytes, a->nbytes);
		ck_assert(m.nbytes == 0 || memcmp(m.data, a->data,
		    m.nbytes) == 0);
	} else {
		ck_assert_msg(strstr(merr, path) != NULL, "'%s' names no file",
		    merr);
		ck_assert_msg(strstr(err, path) != NULL, "'%s' names no file",
		    err);
	}
	npy_array_release(&m);
	return (rc2);
}

/* parse_both() on the image of a version major file of dict and ndata bytes. */
static int
parse_dict(int major, const char *dict, size_t ndata, struct npy_array *a,
    char *err, size_t errlen)
{
	unsigned char	*b;
	size_t		 len = npy_image(major, dict, ndata, &b);
	int		 rc;

	rc = parse_both(b, len, a, err, errlen);
	free(b);
	return (rc);
}

/*
 * The image b of len bytes (described by label) must fail with code and a
 * message containing what (NULL: any message).
 */
static void
expect_image_fail(const char *label, const unsigned char *b, size_t len,
    int code, const char *what)
{
	struct npy_array	 a;
	char			 err[1024];
	int			 rc;

	rc = parse_both(b, len, &a, err, sizeof err);
	ck_assert_msg(rc == code, "%s: got %d (%s), want %d", label, rc, err,
	    code);
	ck_assert_msg(what == NULL || strstr(err, what) != NULL,
	    "'%s' lacks '%s'", err, what);
	ck_assert_ptr_null(a.data);
}

/* The dict must fail with code and a message containing what. */
static void
expect_fail(int major, const char *dict, size_t ndata, int code,
    const char *what)
{
	unsigned char	*b;
	size_t		 len = npy_image(major, dict, ndata, &b);

	expect_image_fail(dict, b, len, code, what);
	free(b);
}

static void
expect_ok(int major, const char *dict, size_t ndata, const char *dtype,
    int rank)
{
	struct npy_array	 a;
	char			 err[1024];

	ck_assert_msg(parse_dict(major, dict, ndata, &a, err, sizeof err) == 0,
	    "%s: %s", dict, err);
	ck_assert_str_eq(a.dtype, dtype);
	ck_assert_int_eq(a.rank, rank);
	ck_assert_uint_eq(a.nbytes, ndata);
	npy_array_release(&a);
}

/* ------------------------------------------------------------ core */

CHECK_TEST(core, test_npy_roundtrip_dtypes)
{
	static const char *const dtypes[] = {
		"float32", "float16", "bfloat16", "int8", "int16", "int32",
		"uint8", "uint16", "uint32", "bool", "float64", "int64",
		"uint64",
	};
	uint64_t shape[3] = { 2, 3, 5 };
	unsigned char data[2 * 3 * 5 * 8];
	size_t i, k;

	for (k = 0; k < sizeof data; k++)
		data[k] = (unsigned char)(k * 7 + 1);
	for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
		size_t			isz = npy_dtype_size(dtypes[i]);
		struct npy_array	a;
		char			err[1024];

		ck_assert_uint_gt(isz, 0);
		ck_assert_int_eq(npy_array_write(path, dtypes[i], 3, shape,
		    data, 30 * isz, err, sizeof err), 0);
		ck_assert_msg(npy_array_read(path, &a, err, sizeof err) == 0,
		    "%s", err);
		ck_assert_str_eq(a.dtype, dtypes[i]);
		ck_assert_int_eq(a.rank, 3);
		ck_assert_uint_eq(a.shape[0], 2);
		ck_assert_uint_eq(a.shape[2], 5);
		ck_assert_uint_eq(a.itemsize, isz);
		ck_assert_uint_eq(a.nbytes, 30 * isz);
		ck_assert_mem_eq(a.data, data, 30 * isz);
		npy_array_release(&a);
	}
}
END_TEST

CHECK_TEST(core, test_npy_header_numpy_layout)
{
	uint64_t	shape[2] = { 2, 3 };
	char		buf[256];
	long		n;

	/* byte for byte what np.save writes for float32 (2, 3) */
	n = npy_header_format("float32", 2, shape, buf, sizeof buf);
	ck_assert_int_eq(n, 128);
	ck_assert_mem_eq(buf, "\x93NUMPY\x01\x00\x76\x00", 10);
	ck_assert_mem_eq(buf + 10, "{'descr': '<f4', 'fortran_order': False, "
	    "'shape': (2, 3), }", 59);
	ck_assert_int_eq(buf[127], '\n');
	ck_assert_int_eq(buf[126], ' ');
	/* (5,) and () as Python writes tuples; bf16 as '<V2' */
	n = npy_header_format("bfloat16", 1, (uint64_t[]){ 5 }, buf,
	    sizeof buf);
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf + 10, "'descr': '<V2'"));
	ck_assert_ptr_nonnull(strstr(buf + 10, "'shape': (5,)"));
	n = npy_header_format("int8", 0, NULL, buf, sizeof buf);
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf + 10, "'descr': '|i1'"));
	ck_assert_ptr_nonnull(strstr(buf + 10, "'shape': ()"));
	ck_assert_int_eq(n % 64, 0);
	/* too small a buffer, unknown dtype */
	ck_assert_int_eq(npy_header_format("int8", 0, NULL, buf, 16), 0);
	ck_assert_int_eq(npy_header_format("complex64", 0, NULL, buf,
	    sizeof buf), NPY_EDTYPE);
}
END_TEST

CHECK_TEST(core, test_npy_accepts_numpy_variants)
{
	expect_ok(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
	    24, "float32", 2);
	/* versions 2.0 and 3.0 */
	expect_ok(2, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }",
	    16, "int32", 1);
	expect_ok(3, "{'descr': '<u2', 'fortran_order': False, 'shape': (4,), }",
	    8, "uint16", 1);
	/* scalar, empty, keys in another order, double quotes, no trailing
	 * comma, Python 2 long suffix */
	expect_ok(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }",
	    2, "float16", 0);
	expect_ok(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }",
	    0, "float32", 2);
	expect_ok(1, "{\"shape\": (3,), \"fortran_order\": False, \"descr\": "
	    "\"|u1\"}", 3, "uint8", 1);
	expect_ok(1, "{'descr':'<i2','fortran_order':False,'shape':(2L,3L)}",
	    12, "int16", 2);
	/* 1-byte types with any byte order mark; bool */
	expect_ok(1, "{'descr': '<i1', 'fortran_order': False, 'shape': (3,), }",
	    3, "int8", 1);
	expect_ok(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }",
	    3, "int8", 1);
	expect_ok(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
	    3, "bool", 1);
	/* ml_dtypes: bfloat16 is '<V2'; '|V1' (float8) is ambiguous */
	expect_ok(1, "{'descr': '<V2', 'fortran_order': False, 'shape': (2, 3), }",
	    12, "bfloat16", 2);
	expect_ok(1, "{'descr': '|V1', 'fortran_order': False, 'shape': (3,), }",
	    3, NPY_DTYPE_AMBIGUOUS, 1);
	/* fortran order of a 1-D array is the same layout */
	expect_ok(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }",
	    12, "float32", 1);
}
END_TEST

/* ------------------------------------------------------------ errors */

CHECK_TEST(errors, test_npy_rejects_bad_headers)
{
	expect_fail(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }",
	    24, NPY_EDTYPE, "unsupported dtype '<c8'");
	expect_fail(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }",
	    12, NPY_EDTYPE, "big-endian");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
	    24, NPY_EDTYPE, "fortran_order");
	expect_fail(1, "{'descr': [('a', '<f4')], 'fortran_order': False, "
	    "'shape': (3,), }", 12, NPY_EDTYPE, "structured");
	expect_fail(1, "{'descr': '<U4', 'fortran_order': False, 'shape': (3,), }",
	    48, NPY_EDTYPE, "unsupported dtype");
	expect_fail(1, "{'descr': 'f4', 'fortran_order': False, 'shape': (3,), }",
	    12, NPY_EDTYPE, "unsupported dtype");
	expect_fail(1, "{'descr': '<f', 'fortran_order': False, 'shape': (3,), }",
	    12, NPY_EDTYPE, "unsupported dtype");
	expect_fail(1, "{'descr': '<f4', 'shape': (3,), }", 12, NPY_EFORMAT,
	    "missing 'fortran_order'");
	expect_fail(1, "{'fortran_order': False, 'shape': (3,), }", 12,
	    NPY_EFORMAT, "missing 'descr'");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False}", 12,
	    NPY_EFORMAT, "missing 'shape'");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), "
	    "'extra': 1}", 12, NPY_EFORMAT, "unknown key 'extra'");
	expect_fail(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
	    "'shape': (3,)}", 12, NPY_EFORMAT, "repeated key 'descr'");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,)}",
	    12, NPY_EFORMAT, "fortran_order");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}",
	    12, NPY_EFORMAT, "shape");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (a,)}",
	    12, NPY_EFORMAT, "shape");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,,)}",
	    12, NPY_EFORMAT, "shape");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [3]}",
	    12, NPY_EFORMAT, "shape");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)",
	    12, NPY_EFORMAT, "malformed header");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} x",
	    12, NPY_EFORMAT, "trailing");
	expect_fail(1, "['descr', '<f4']", 12, NPY_EFORMAT, "expected '{'");
	expect_fail(1, "{'descr\\x': '<f4'}", 12, NPY_EFORMAT,
	    "malformed header");
	expect_fail(1, "{'descr': '<f4", 12, NPY_EFORMAT, "malformed header");
	expect_fail(1, "", 0, NPY_EFORMAT, "malformed header");
}
END_TEST

CHECK_TEST(errors, test_npy_rejects_bad_prefix)
{
	unsigned char *b;
	size_t len = npy_image(1, "{'descr': '<f4', 'fortran_order': False, "
	    "'shape': (3,), }", 12, &b);

	/* bad magic, bad versions */
	b[1] = 'X';
	expect_image_fail("magic", b, len, NPY_EFORMAT, "bad magic");
	b[1] = 'N';
	b[6] = 4;
	expect_image_fail("version 4", b, len, NPY_EFORMAT, "version 4.0");
	b[6] = 1;
	b[7] = 1;
	expect_image_fail("version 1.1", b, len, NPY_EFORMAT, NULL);
	b[7] = 0;
	/* a header length over the bound, and past the end of the file */
	b[8] = 0xff;
	b[9] = 0xff;
	expect_image_fail("header length", b, len, NPY_ESIZE,
	    "truncated header");
	b[6] = 2;
	b[10] = 0xff;
	b[11] = 0x7f;
	expect_image_fail("header length", b, len, NPY_EFORMAT,
	    "exceeds the limit");
	/* a NUL inside the header */
	free(b);
	len = npy_image(1, "{'descr': '<f4', 'fortran_order': False, "
	    "'shape': (3,), }", 12, &b);
	b[20] = '\0';
	expect_image_fail("NUL", b, len, NPY_EFORMAT, "NUL");
	/* too short to be anything */
	expect_image_fail("5 bytes", b, 5, NPY_EFORMAT, NULL);
	expect_image_fail("0 bytes", b, 0, NPY_EFORMAT, NULL);
	free(b);
}
END_TEST

CHECK_TEST(errors, test_npy_rejects_size_mismatch)
{
	/* truncated data, trailing data, data in a 0-element file */
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
	    11, NPY_ESIZE, "truncated: header says 12 data bytes, file has 11");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
	    13, NPY_ESIZE, "trailing data");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }",
	    4, NPY_ESIZE, "trailing data");
	expect_fail(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
	    0, NPY_ESIZE, "truncated");
}
END_TEST

CHECK_TEST(errors, test_npy_rejects_files_it_cannot_read)
{
	struct npy_array	a;
	char			err[1024];

	ck_assert_int_eq(npy_array_read("/nonexistent/x.npy", &a, err,
	    sizeof err), NPY_EIO);
	ck_assert_str_eq(err, "cannot read '/nonexistent/x.npy': No such file "
	    "or directory");
	ck_assert_int_eq(npy_array_read(tmpdir, &a, err, sizeof err),
	    NPY_EIO);
	ck_assert_ptr_nonnull(strstr(err, "is a directory"));
}
END_TEST

CHECK_TEST(errors, test_npy_write_errors)
{
	uint64_t	shape[2] = { 2, 3 };
	char		data[24] = { 0 }, err[1024], p[600];

	ck_assert_int_eq(npy_array_write(path, "complex64", 2, shape, data,
	    24, err, sizeof err), NPY_EDTYPE);
	ck_assert_ptr_nonnull(strstr(err, "unsupported dtype 'complex64'"));
	ck_assert_int_eq(npy_array_write(path, "float32", 2, shape, data, 20,
	    err, sizeof err), NPY_ESIZE);
	ck_assert_ptr_nonnull(strstr(err, path));
	snprintf(p, sizeof p, "%s/no/such/dir/x.npy", tmpdir);
	ck_assert_int_eq(npy_array_write(p, "float32", 2, shape, data, 24,
	    err, sizeof err), NPY_EIO);
	ck_assert_ptr_nonnull(strstr(err, "No such file or directory"));
	/* nothing was left behind */
	ck_assert_int_ne(access(path, F_OK), 0);
	/* the ambiguous '|V1' cannot be written without its float8 name */
	ck_assert_int_eq(npy_array_write(path, NPY_DTYPE_AMBIGUOUS, 2, shape,
	    data, 6, err, sizeof err), NPY_EDTYPE);
	ck_assert_int_eq(npy_array_write(path, "float8_e5m2", 2, shape, data,
	    6, err, sizeof err), 0);
}
END_TEST

/* ------------------------------------------------------------ limits */

CHECK_TEST(limits, test_npy_rejects_overflowing_shapes)
{
	size_t	n;

	/* a dimension over 64 bits, a product over 64 bits, over the bound */
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, "
	    "'shape': (99999999999999999999,), }", 0, NPY_ETOOBIG,
	    "overflows");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, "
	    "'shape': (4294967296, 4294967296), }", 0, NPY_ETOOBIG, "exceeds");
	expect_fail(1, "{'descr': '<f8', 'fortran_order': False, "
	    "'shape': (65536, 65536), }", 0, NPY_ETOOBIG, "exceeds");
	expect_fail(1, "{'descr': '<f4', 'fortran_order': False, "
	    "'shape': (0, 18446744073709551615), }", 0, NPY_ETOOBIG, "exceeds");
	/* the bound itself */
	ck_assert_int_eq(npy_shape_bytes(1, (uint64_t[]){ NPY_MAX_BYTES }, 1,
	    &n), 0);
	ck_assert_uint_eq(n, NPY_MAX_BYTES);
	ck_assert_int_eq(npy_shape_bytes(1, (uint64_t[]){ NPY_MAX_BYTES }, 2,
	    &n), NPY_ETOOBIG);
	ck_assert_int_eq(npy_shape_bytes(2, (uint64_t[]){ 1ULL << 32,
	    1ULL << 32 }, 1, &n), NPY_ETOOBIG);
	ck_assert_int_eq(npy_shape_bytes(0, NULL, 4, &n), 0);
	ck_assert_uint_eq(n, 4);
}
END_TEST

CHECK_TEST(limits, test_npy_rank_limit)
{
	char	dict[512];
	size_t	n;
	int	i;

	n = snprintf(dict, sizeof dict, "{'descr': '|u1', 'fortran_order': "
	    "False, 'shape': (");
	for (i = 0; i < NPY_MAX_RANK; i++)
		n += snprintf(dict + n, sizeof dict - n, "1, ");
	snprintf(dict + n, sizeof dict - n, "), }");
	expect_ok(1, dict, 1, "uint8", NPY_MAX_RANK);
	snprintf(dict + n, sizeof dict - n, "1, ), }");
	expect_fail(1, dict, 1, NPY_ETOOBIG, "rank over");
}
END_TEST

/* Every truncation and every single-byte corruption of a valid file is
 * answered with a code, never a crash (run under ASan/valgrind too). */
CHECK_TEST(limits, test_npy_truncations_and_flips)
{
	uint64_t		 shape[2] = { 3, 4 };
	float			 data[12] = { 0 };
	unsigned char		*img;
	struct npy_array	 a;
	char			 err[1024];
	struct stat		 st;
	size_t			 len, i;
	int			 fd;

	ck_assert_int_eq(npy_array_write(path, "float32", 2, shape, data,
	    sizeof data, err, sizeof err), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	len = st.st_size;
	img = malloc(len);
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(read(fd, img, len), (ssize_t)len);
	close(fd);
	for (i = 0; i < len; i++) {
		ck_assert_int_lt(parse_both(img, i, &a, err, sizeof err), 0);
		ck_assert_ptr_null(a.data);
	}
	for (i = 0; i < 128; i++) {
		static const unsigned char subst[] = { 0, '\'', '(', ')', ',',
		    '9', 'x', 0xff, '}', '{', ':' };
		size_t s;

		for (s = 0; s < sizeof subst; s++) {
			unsigned char keep = img[i];

			img[i] = subst[s];
			if (parse_both(img, len, &a, err, sizeof err) == 0)
				npy_array_release(&a);
			img[i] = keep;
		}
	}
	free(img);
}
END_TEST
