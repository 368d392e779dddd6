/* npy.c: a strict reader and writer of numpy's .npy format for the dtypes that travel as nkid.v1.Tensor (npy.h: the bfloat16 convention). */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c assumes a little-endian host"
#endif

static const char npy_magic[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

/* descr kind + size -> wire name; the writer uses the first row of a name. */
static const struct npy_dtype {
	char		 kind;		/* numpy type character */
	unsigned	 size;
	const char	*name;
	const char	*descr;		/* what the writer puts in the header */
} npy_dtypes[] = {
	{ 'f', 4, "float32",       "<f4" },
	{ 'f', 2, "float16",       "<f2" },
	{ 'f', 8, "float64",       "<f8" },
	{ 'V', 2, "bfloat16",      "<V2" },
	{ 'i', 1, "int8",          "|i1" },
	{ 'i', 2, "int16",         "<i2" },
	{ 'i', 4, "int32",         "<i4" },
	{ 'i', 8, "int64",         "<i8" },
	{ 'u', 1, "uint8",         "|u1" },
	{ 'u', 2, "uint16",        "<u2" },
	{ 'u', 4, "uint32",        "<u4" },
	{ 'u', 8, "uint64",        "<u8" },
	{ 'b', 1, "bool",          "|b1" },
	{ 'V', 1, NPY_DTYPE_AMBIGUOUS, "<V1" },
	{ 'V', 1, "float8_e4m3fn", "<V1" },
	{ 'V', 1, "float8_e5m2",   "<V1" },
	{ 'V', 1, "float8_e8m0fnu", "<V1" },
	/* NKI 0.6's packed MX types: written as the unsigned integers of
	 * their size (as nkid's Python client returns them); read back as
	 * such (the rows above come first) */
	{ 'u', 4, "float8_e5m2_x4", "<u4" },
	{ 'u', 4, "float8_e4m3fn_x4", "<u4" },
	{ 'u', 2, "float4_e2m1fn_x4", "<u2" },
};

const char *
npy_strerror(int err)
{
	static const char *const msgs[] = {
		"success", "input/output error", "not a valid .npy file",
		"unsupported dtype or layout", "array too large",
		"file size does not match its header", "out of memory",
	};

	if (err > 0 || -err >= (int)(sizeof msgs / sizeof msgs[0]))
		return ("unknown error");
	return (msgs[-err]);
}

/* Format "cannot VERB 'NAME': ..." into err (if any); returns code. */
static int
npy_vfail(int code, char *err, size_t errlen, const char *verb,
    const char *name, const char *fmt, va_list ap)
{
	int	n;

	if (err == NULL || errlen == 0)
		return (code);
	n = snprintf(err, errlen, "cannot %s '%s': ", verb, name);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - n, fmt, ap);
	return (code);
}

static int __attribute__((format(printf, 6, 7)))
npy_fail(int code, char *err, size_t errlen, const char *verb,
    const char *name, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	npy_vfail(code, err, errlen, verb, name, fmt, ap);
	va_end(ap);
	return (code);
}

size_t
npy_dtype_size(const char *dtype)
{
	size_t	i;

	if (dtype == NULL || *dtype == '\0')
		return (0);
	for (i = 0; i < sizeof npy_dtypes / sizeof npy_dtypes[0]; i++)
		if (strcmp(npy_dtypes[i].name, dtype) == 0)
			return (npy_dtypes[i].size);
	return (0);
}

int
npy_shape_bytes(int rank, const uint64_t *shape, size_t itemsize,
    size_t *nbytes)
{
	uint64_t	n = itemsize;
	int		i, zero = itemsize == 0;

	assert(rank >= 0 && rank <= NPY_MAX_RANK);
	for (i = 0; i < rank; i++) {
		if (shape[i] > NPY_MAX_BYTES)
			return (NPY_ETOOBIG);
		if (shape[i] == 0)
			zero = 1;
	}
	if (zero) {
		*nbytes = 0;
		return (NPY_OK);
	}
	for (i = 0; i < rank; i++) {
		if (shape[i] > NPY_MAX_BYTES / n)
			return (NPY_ETOOBIG);
		n *= shape[i];
	}
	if (n > NPY_MAX_BYTES)
		return (NPY_ETOOBIG);
	*nbytes = (size_t)n;
	return (NPY_OK);
}

void
npy_array_release(struct npy_array *a)
{
	if (a == NULL)
		return;
	free(a->data);
	memset(a, 0, sizeof *a);
}

/* ------------------------------------------------------------ header parse */

/* The header is a Python dict literal; this is a parser of just the subset
 * that numpy writes: string keys, string / True / False / tuple-of-int
 * values, optional trailing commas, blanks. */
struct npy_lex {
	const char	*p;
	const char	*end;
	const char	*name;		/* of the file, for messages */
	char		*err;
	size_t		 errlen;
};

static void
npy_lex_blank(struct npy_lex *lx)
{
	while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' ||
	    *lx->p == '\n' || *lx->p == '\r'))
		lx->p++;
}

static int
npy_lex_char(struct npy_lex *lx, char c)
{
	npy_lex_blank(lx);
	if (lx->p < lx->end && *lx->p == c) {
		lx->p++;
		return (1);
	}
	return (0);
}

/* A quoted string without escapes into buf. 0 ok, -1 malformed. */
static int
npy_lex_string(struct npy_lex *lx, char *buf, size_t cap)
{
	char	q;
	size_t	n = 0;

	npy_lex_blank(lx);
	if (lx->p >= lx->end || (*lx->p != '\'' && *lx->p != '"'))
		return (-1);
	q = *lx->p++;
	while (lx->p < lx->end && *lx->p != q) {
		if (*lx->p == '\\' || *lx->p == '\n' || n + 1 >= cap)
			return (-1);
		buf[n++] = *lx->p++;
	}
	if (lx->p >= lx->end)
		return (-1);
	lx->p++;
	buf[n] = '\0';
	return (0);
}

/* A bare word (True, False, ...) into buf. */
static int
npy_lex_word(struct npy_lex *lx, char *buf, size_t cap)
{
	size_t	n = 0;

	npy_lex_blank(lx);
	while (lx->p < lx->end && ((*lx->p >= 'A' && *lx->p <= 'Z') ||
	    (*lx->p >= 'a' && *lx->p <= 'z'))) {
		if (n + 1 >= cap)
			return (-1);
		buf[n++] = *lx->p++;
	}
	buf[n] = '\0';
	return (n > 0 ? 0 : -1);
}

/* A non-negative decimal integer (an optional Python 2 'L' suffix). */
static int
npy_lex_uint(struct npy_lex *lx, uint64_t *v)
{
	uint64_t	x = 0;
	int		digits = 0;

	npy_lex_blank(lx);
	while (lx->p < lx->end && *lx->p >= '0' && *lx->p <= '9') {
		unsigned d = *lx->p++ - '0';

		if (x > (UINT64_MAX - d) / 10)
			return (-2);
		x = x * 10 + d;
		digits++;
	}
	if (digits == 0)
		return (-1);
	if (lx->p < lx->end && *lx->p == 'L')
		lx->p++;
	*v = x;
	return (0);
}

/* Find the dtype row for a descr string. */
static int
npy_descr_lookup(const char *descr, const struct npy_dtype **out)
{
	char		 order = descr[0], kind;
	char		*end;
	unsigned long	 size;
	size_t		 i;

	if (strchr("<>|=", order) == NULL || descr[1] == '\0')
		return (NPY_EDTYPE);
	kind = descr[1];
	errno = 0;
	size = strtoul(descr + 2, &end, 10);
	if (descr[2] < '0' || descr[2] > '9' || *end != '\0' || errno != 0)
		return (NPY_EDTYPE);
	if (order == '>' && size > 1)
		return (NPY_EDTYPE);
	for (i = 0; i < sizeof npy_dtypes / sizeof npy_dtypes[0]; i++) {
		if (npy_dtypes[i].kind == kind && npy_dtypes[i].size == size) {
			*out = &npy_dtypes[i];
			return (NPY_OK);
		}
	}
	return (NPY_EDTYPE);
}

/* "cannot read 'NAME': ..." of the header being parsed; returns code. */
static int __attribute__((format(printf, 3, 4)))
npy_lex_fail(struct npy_lex *lx, int code, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	npy_vfail(code, lx->err, lx->errlen, "read", lx->name, fmt, ap);
	va_end(ap);
	return (code);
}

/* The value of 'shape': a tuple of dimensions, into a. */
static int
npy_header_shape(struct npy_lex *lx, struct npy_array *a)
{
	uint64_t	v;
	int		rc;

	if (!npy_lex_char(lx, '('))
		return (npy_lex_fail(lx, NPY_EFORMAT, "malformed header: bad "
		    "'shape'"));
	a->rank = 0;
	while (!npy_lex_char(lx, ')')) {
		if (a->rank == NPY_MAX_RANK)
			return (npy_lex_fail(lx, NPY_ETOOBIG, "rank over %d",
			    NPY_MAX_RANK));
		if ((rc = npy_lex_uint(lx, &v)) == -2)
			return (npy_lex_fail(lx, NPY_ETOOBIG, "shape dimension "
			    "overflows"));
		if (rc < 0)
			return (npy_lex_fail(lx, NPY_EFORMAT, "malformed "
			    "header: bad 'shape'"));
		a->shape[a->rank++] = v;
		if (!npy_lex_char(lx, ',')) {
			if (!npy_lex_char(lx, ')'))
				return (npy_lex_fail(lx, NPY_EFORMAT,
				    "malformed header: bad 'shape'"));
			break;
		}
	}
	return (NPY_OK);
}

/* Parse the header dict into a (dtype, shape); names the file in err. */
static int
npy_header_parse(const char *hdr, size_t len, const char *name,
    struct npy_array *a, char *err, size_t errlen)
{
	struct npy_lex		 lx = { hdr, hdr + len, name, err, errlen };
	const struct npy_dtype	*dt;
	char			 key[32], word[16], descr[16];
	int			 have_descr = 0, have_order = 0;
	int			 have_shape = 0, fortran = 0, rc;

	if (!npy_lex_char(&lx, '{'))
		return (npy_lex_fail(&lx, NPY_EFORMAT, "malformed header: "
		    "expected '{'"));
	while (!npy_lex_char(&lx, '}')) {
		if (npy_lex_string(&lx, key, sizeof key) < 0)
			return (npy_lex_fail(&lx, NPY_EFORMAT, "malformed "
			    "header: expected a key at offset %zu",
			    (size_t)(lx.p - hdr)));
		if (!npy_lex_char(&lx, ':'))
			return (npy_lex_fail(&lx, NPY_EFORMAT, "malformed "
			    "header: expected ':' after '%s'", key));
		if (strcmp(key, "descr") == 0 && !have_descr) {
			npy_lex_blank(&lx);
			if (lx.p < lx.end && *lx.p == '[')
				return (npy_lex_fail(&lx, NPY_EDTYPE,
				    "structured dtypes are not supported"));
			if (npy_lex_string(&lx, descr, sizeof descr) < 0)
				return (npy_lex_fail(&lx, NPY_EFORMAT,
				    "malformed header: bad 'descr'"));
			have_descr = 1;
		} else if (strcmp(key, "fortran_order") == 0 && !have_order) {
			if (npy_lex_word(&lx, word, sizeof word) < 0 ||
			    (strcmp(word, "True") != 0 &&
			    strcmp(word, "False") != 0))
				return (npy_lex_fail(&lx, NPY_EFORMAT,
				    "malformed header: bad 'fortran_order'"));
			fortran = strcmp(word, "True") == 0;
			have_order = 1;
		} else if (strcmp(key, "shape") == 0 && !have_shape) {
			if ((rc = npy_header_shape(&lx, a)) < 0)
				return (rc);
			have_shape = 1;
		} else
			return (npy_lex_fail(&lx, NPY_EFORMAT, "malformed "
			    "header: %s key '%s'",
			    strcmp(key, "descr") == 0 ||
			    strcmp(key, "fortran_order") == 0 ||
			    strcmp(key, "shape") == 0 ? "repeated" : "unknown",
			    key));
		if (!npy_lex_char(&lx, ',')) {
			if (!npy_lex_char(&lx, '}'))
				return (npy_lex_fail(&lx, NPY_EFORMAT,
				    "malformed header: expected ',' or '}'"));
			break;
		}
	}
	npy_lex_blank(&lx);
	if (lx.p != lx.end)
		return (npy_lex_fail(&lx, NPY_EFORMAT, "malformed header: "
		    "trailing bytes after the dict"));
	if (!have_descr || !have_order || !have_shape)
		return (npy_lex_fail(&lx, NPY_EFORMAT, "malformed header: "
		    "missing '%s'", !have_descr ? "descr" :
		    !have_order ? "fortran_order" : "shape"));
	if (npy_descr_lookup(descr, &dt) < 0)
		return (npy_lex_fail(&lx, NPY_EDTYPE, "unsupported dtype "
		    "'%s'%s", descr, descr[0] == '>' ? " (big-endian)" : ""));
	if (fortran && a->rank > 1)
		return (npy_lex_fail(&lx, NPY_EDTYPE, "fortran_order arrays "
		    "are not supported (save it with np.ascontiguousarray)"));
	snprintf(a->dtype, sizeof a->dtype, "%s", dt->name);
	snprintf(a->descr, sizeof a->descr, "%s", descr);
	a->itemsize = dt->size;
	return (NPY_OK);
}

/* Check the fixed prefix (magic, version, header length) in the first len
 * bytes; sets *prefix (10 or 12) and *hlen. */
static int
npy_prefix_check(const unsigned char *b, size_t len, const char *name,
    size_t *prefix, size_t *hlen, char *err, size_t errlen)
{
	if (len < 10 || memcmp(b, npy_magic, sizeof npy_magic) != 0)
		return (npy_fail(NPY_EFORMAT, err, errlen, "read", name,
		    "not an .npy file (%s)", len < 10 ? "too short" :
		    "bad magic"));
	if ((b[6] != 1 && b[6] != 2 && b[6] != 3) || b[7] != 0)
		return (npy_fail(NPY_EFORMAT, err, errlen, "read", name,
		    "unsupported .npy format version %u.%u", b[6], b[7]));
	if (b[6] == 1) {
		*prefix = 10;
		*hlen = b[8] | (size_t)b[9] << 8;
	} else {
		if (len < 12)
			return (npy_fail(NPY_ESIZE, err, errlen, "read", name,
			    "truncated header"));
		*prefix = 12;
		*hlen = b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
		    (size_t)b[11] << 24;
	}
	if (*hlen > NPY_MAX_HEADER)
		return (npy_fail(NPY_EFORMAT, err, errlen, "read", name,
		    "header of %zu bytes exceeds the limit of %d", *hlen,
		    NPY_MAX_HEADER));
	return (NPY_OK);
}

/* Parse the header dict (hlen bytes) into *a, with a->nbytes computed and
 * bounded; a->data stays NULL. */
static int
npy_header_check(const char *hdr, size_t hlen, const char *name,
    struct npy_array *a, char *err, size_t errlen)
{
	int	rc;

	if (memchr(hdr, '\0', hlen) != NULL)
		return (npy_fail(NPY_EFORMAT, err, errlen, "read", name,
		    "malformed header: NUL byte"));
	rc = npy_header_parse(hdr, hlen, name, a, err, errlen);
	if (rc < 0)
		return (rc);
	if (npy_shape_bytes(a->rank, a->shape, a->itemsize, &a->nbytes) < 0)
		return (npy_fail(NPY_ETOOBIG, err, errlen, "read", name,
		    "shape times itemsize exceeds %llu bytes",
		    (unsigned long long)NPY_MAX_BYTES));
	return (NPY_OK);
}

/* The data size in the file against the header's. */
static int
npy_size_check(const struct npy_array *a, uint64_t have, const char *name,
    char *err, size_t errlen)
{
	if (have == a->nbytes)
		return (NPY_OK);
	return (npy_fail(NPY_ESIZE, err, errlen, "read", name,
	    "%s: header says %zu data bytes, file has %llu",
	    have < a->nbytes ? "truncated" : "trailing data", a->nbytes,
	    (unsigned long long)have));
}

/*
 * The header of hlen bytes checked into out, and have data bytes after it
 * checked against it; then out->data allocated for them (not read).
 * Returns NPY_OK or the error (in err); out is then to be released.
 */
static int
npy_body_alloc(const char *hdr, size_t hlen, uint64_t have, const char *name,
    struct npy_array *out, char *err, size_t errlen)
{
	int	rc;

	rc = npy_header_check(hdr, hlen, name, out, err, errlen);
	if (rc == NPY_OK)
		rc = npy_size_check(out, have, name, err, errlen);
	if (rc == NPY_OK && out->nbytes > 0 &&
	    (out->data = malloc(out->nbytes)) == NULL)
		rc = npy_fail(NPY_ENOMEM, err, errlen, "read", name,
		    "out of memory for %zu bytes", out->nbytes);
	return (rc);
}

int
npy_array_parse(const void *buf, size_t len, const char *name,
    struct npy_array *out, char *err, size_t errlen)
{
	const unsigned char	*b = buf;
	size_t			 prefix, hlen;
	int			 rc;

	assert(buf != NULL || len == 0);
	memset(out, 0, sizeof *out);
	rc = npy_prefix_check(b, len, name, &prefix, &hlen, err, errlen);
	if (rc < 0)
		return (rc);
	if (len - prefix < hlen)
		return (npy_fail(NPY_ESIZE, err, errlen, "read", name,
		    "truncated header (%zu of %zu bytes)", len - prefix, hlen));
	rc = npy_body_alloc((const char *)b + prefix, hlen, len - prefix - hlen,
	    name, out, err, errlen);
	if (rc < 0) {
		npy_array_release(out);
		return (rc);
	}
	if (out->nbytes > 0)
		memcpy(out->data, b + prefix + hlen, out->nbytes);
	return (NPY_OK);
}

/* Read exactly n bytes; 0 ok, -1 with errno, 1 on early EOF. */
static int
npy_read_full(int fd, void *buf, size_t n)
{
	char	*p = buf;

	while (n > 0) {
		ssize_t r = read(fd, p, n > (1 << 30) ? (1 << 30) : n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return (-1);
		if (r == 0)
			return (1);
		p += r;
		n -= r;
	}
	return (0);
}

int
npy_array_read(const char *path, struct npy_array *out, char *err,
    size_t errlen)
{
	unsigned char	 pre[12];
	char		*hdr = NULL;
	size_t		 prefix, hlen, got;
	struct stat	 st;
	int		 fd, rc;

	memset(out, 0, sizeof *out);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);	/* a FIFO must not block */
	if (fd < 0)
		return (npy_fail(NPY_EIO, err, errlen, "read", path, "%s",
		    strerror(errno)));
	if (fstat(fd, &st) < 0) {
		rc = npy_fail(NPY_EIO, err, errlen, "read", path, "%s",
		    strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = npy_fail(NPY_EIO, err, errlen, "read", path, "%s",
		    S_ISDIR(st.st_mode) ? "is a directory" :
		    "not a regular file");
		goto out;
	}
	/* The header first (bounded); the size it implies is checked
	 * against the file's before the data is allocated. */
	got = (size_t)st.st_size < sizeof pre ? (size_t)st.st_size :
	    sizeof pre;
	if (npy_read_full(fd, pre, got) != 0) {
		rc = npy_fail(NPY_EIO, err, errlen, "read", path, "%s",
		    strerror(errno));
		goto out;
	}
	rc = npy_prefix_check(pre, got, path, &prefix, &hlen, err, errlen);
	if (rc < 0)
		goto out;
	if ((uint64_t)st.st_size - prefix < hlen) {
		rc = npy_fail(NPY_ESIZE, err, errlen, "read", path,
		    "truncated header (%llu of %zu bytes)",
		    (unsigned long long)st.st_size - prefix, hlen);
		goto out;
	}
	hdr = malloc(hlen + 1);
	if (hdr == NULL) {
		rc = npy_fail(NPY_ENOMEM, err, errlen, "read", path,
		    "out of memory");
		goto out;
	}
	/* pre may hold 2 header bytes already (version 1.0: 12 > 10) */
	memcpy(hdr, pre + prefix, got - prefix < hlen ? got - prefix : hlen);
	if (got - prefix < hlen && npy_read_full(fd, hdr + (got - prefix),
	    hlen - (got - prefix)) != 0) {
		rc = npy_fail(NPY_EIO, err, errlen, "read", path,
		    "short read of the header");
		goto out;
	}
	if (got - prefix > hlen) {
		/* a header of 0 or 1 bytes cannot hold the three keys */
		rc = npy_fail(NPY_EFORMAT, err, errlen, "read", path,
		    "malformed header of %zu bytes", hlen);
		goto out;
	}
	rc = npy_body_alloc(hdr, hlen, (uint64_t)st.st_size - prefix - hlen,
	    path, out, err, errlen);
	if (rc < 0)
		goto out_release;
	if (out->nbytes > 0) {
		rc = npy_read_full(fd, out->data, out->nbytes);
		if (rc != 0) {
			rc = npy_fail(NPY_EIO, err, errlen, "read", path, "%s",
			    rc < 0 ? strerror(errno) :
			    "file shrank while read");
			goto out_release;
		}
	}
	rc = NPY_OK;
	goto out;
out_release:
	if (rc < 0)
		npy_array_release(out);
out:
	free(hdr);
	close(fd);
	return (rc);
}

/* ------------------------------------------------------------ writing */

long
npy_header_format(const char *dtype, int rank, const uint64_t *shape,
    char *buf, size_t cap)
{
	const char	*descr = NULL;
	char		 dict[64 + NPY_MAX_RANK * 22];
	size_t		 i, n, total, prefix;
	int		 k;

	assert(rank >= 0 && rank <= NPY_MAX_RANK);
	if (dtype == NULL || *dtype == '\0')
		return (NPY_EDTYPE);
	for (i = 0; i < sizeof npy_dtypes / sizeof npy_dtypes[0]; i++)
		if (strcmp(npy_dtypes[i].name, dtype) == 0)
			descr = npy_dtypes[i].descr;
	if (descr == NULL)
		return (NPY_EDTYPE);
	n = snprintf(dict, sizeof dict,
	    "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (k = 0; k < rank; k++)
		n += snprintf(dict + n, sizeof dict - n, "%s%llu",
		    k ? ", " : "", (unsigned long long)shape[k]);
	n += snprintf(dict + n, sizeof dict - n, "%s), }",
	    rank == 1 ? "," : "");
	assert(n < sizeof dict);
	/* numpy pads with spaces to a multiple of 64 and ends with '\n'. */
	prefix = 10;
	total = (prefix + n + 1 + 63) / 64 * 64;
	if (total - prefix > 65535) {
		prefix = 12;
		total = (prefix + n + 1 + 63) / 64 * 64;
	}
	if (total > cap)
		return (0);
	memcpy(buf, npy_magic, sizeof npy_magic);
	buf[6] = prefix == 10 ? 1 : 2;
	buf[7] = 0;
	for (i = 0; i < prefix - 8; i++)
		buf[8 + i] = (char)((total - prefix) >> (8 * i));
	memcpy(buf + prefix, dict, n);
	memset(buf + prefix + n, ' ', total - prefix - n - 1);
	buf[total - 1] = '\n';
	return ((long)total);
}

/* Write exactly n bytes; 0 or -1 with errno. */
static int
npy_write_full(int fd, const void *buf, size_t n)
{
	const char	*p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n > (1 << 30) ? (1 << 30) : n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return (-1);
		p += w;
		n -= w;
	}
	return (0);
}

int
npy_array_write(const char *path, const char *dtype, int rank,
    const uint64_t *shape, const void *data, size_t nbytes, char *err,
    size_t errlen)
{
	char	hdr[4096], *tmp;
	size_t	want, isz;
	long	hlen;
	int	fd, rc;

	if (rank < 0 || rank > NPY_MAX_RANK)
		return (npy_fail(NPY_EDTYPE, err, errlen, "write", path,
		    "rank %d over %d", rank, NPY_MAX_RANK));
	isz = npy_dtype_size(dtype);
	if (isz == 0)
		return (npy_fail(NPY_EDTYPE, err, errlen, "write", path,
		    "unsupported dtype '%s'", dtype ? dtype : ""));
	if (npy_shape_bytes(rank, shape, isz, &want) < 0)
		return (npy_fail(NPY_ETOOBIG, err, errlen, "write", path,
		    "shape times itemsize overflows"));
	if (want != nbytes)
		return (npy_fail(NPY_ESIZE, err, errlen, "write", path,
		    "%zu data bytes for a shape of %zu bytes", nbytes, want));
	hlen = npy_header_format(dtype, rank, shape, hdr, sizeof hdr);
	assert(hlen > 0);
	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return (npy_fail(NPY_ENOMEM, err, errlen, "write", path,
		    "out of memory"));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = npy_fail(NPY_EIO, err, errlen, "write", path, "%s",
		    strerror(errno));
		free(tmp);
		return (rc);
	}
	if (npy_write_full(fd, hdr, hlen) < 0 ||
	    npy_write_full(fd, data, nbytes) < 0) {
		rc = npy_fail(NPY_EIO, err, errlen, "write", path, "%s",
		    strerror(errno));
		close(fd);
		goto fail;
	}
	if (close(fd) < 0) {
		rc = npy_fail(NPY_EIO, err, errlen, "write", path, "%s",
		    strerror(errno));
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		rc = npy_fail(NPY_EIO, err, errlen, "write", path, "%s",
		    strerror(errno));
		goto fail;
	}
	free(tmp);
	return (NPY_OK);
fail:
	unlink(tmp);
	free(tmp);
	return (rc);
}
