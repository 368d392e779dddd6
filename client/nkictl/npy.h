/* npy.h: numpy .npy files read and written (format versions 1.0, 2.0, 3.0, C order, little-endian) for the dtypes that travel as nkid.v1.Tensor. */

/*
 * dtypes are named by numpy's names, as on the wire: "float32", "float16",
 * "bfloat16", "int8", "int16", "int32", "uint8", "uint16", "uint32",
 * "bool", "float64", "int64", "uint64", "float8_e4m3fn", "float8_e5m2".
 *
 * bfloat16 and float8 are not numpy dtypes: np.save() of an ml_dtypes
 * array writes them as the raw void types '<V2' and '<V1' (np.load gives
 * back a void array; `.view(ml_dtypes.bfloat16)` recovers it). So (any
 * byte-order mark accepted on read):
 *   - reading '<V2' (or '|V2') gives "bfloat16", the only 2-byte raw type
 *     that travels;
 *   - reading '<V1' gives "" (NPY_DTYPE_AMBIGUOUS): e4m3 or e5m2 is not in
 *     the file, the caller decides (from the kernel's signature) or fails;
 *   - writing "bfloat16" writes '<V2', "float8_*" writes '<V1'.
 */
#ifndef NKID_NPY_H
#define NKID_NPY_H

#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_RANK		32
/* Largest header accepted (numpy's own reader stops at 10000). */
#define NPY_MAX_HEADER		65536
/* Largest array accepted, in bytes (protobuf's message limit is 2 GiB). */
#define NPY_MAX_BYTES		((uint64_t)2 << 30)

/* dtype of a '<V1' file: the caller must say which 1-byte type it is. */
#define NPY_DTYPE_AMBIGUOUS	""

/* Error codes: 0 on success, one of these (negative) on failure. */
enum npy_err {
	NPY_OK = 0,
	NPY_EIO = -1,		/* cannot open, read or write (errno) */
	NPY_EFORMAT = -2,	/* not an .npy file or a malformed header */
	NPY_EDTYPE = -3,	/* a dtype or layout not taken */
	NPY_ETOOBIG = -4,	/* shape * itemsize overflows or is too big */
	NPY_ESIZE = -5,		/* file size does not match the header */
	NPY_ENOMEM = -6,
};

/* An array read from a file. */
struct npy_array {
	char		 dtype[24];	/* wire name, or NPY_DTYPE_AMBIGUOUS */
	char		 descr[16];	/* as in the header, e.g. "<f4" */
	int		 rank;
	uint64_t	 shape[NPY_MAX_RANK];
	size_t		 itemsize;
	size_t		 nbytes;	/* product(shape) * itemsize */
	void		*data;		/* malloc'd, nbytes (NULL if 0) */
};

/* Static string naming an error code. */
const char	*npy_strerror(int err);

/*
 * Parse an .npy image in memory. On success *out is filled and out->data
 * is a malloc'd copy of the payload (free with npy_array_release). name
 * names the source in messages. On failure err holds a message such as
 * "cannot read 'x.npy': unsupported dtype '<c8'" and *out is released.
 */
int	 npy_array_parse(const void *buf, size_t len, const char *name,
	    struct npy_array *out, char *err, size_t errlen);
/* Read and parse the file at path (as npy_array_parse). */
int	 npy_array_read(const char *path, struct npy_array *out, char *err,
	    size_t errlen);
/* Free a->data and zero *a. Safe on a zeroed or released array. */
void	 npy_array_release(struct npy_array *a);

/*
 * Format the header (magic, version, length, dict, padding, '\n') of an
 * array of dtype (wire name) and shape into buf; the header length is a
 * multiple of 64. Returns the header length, 0 if cap is too small, or a
 * negative npy_err (NPY_EDTYPE: unknown dtype).
 */
long	 npy_header_format(const char *dtype, int rank,
	    const uint64_t *shape, char *buf, size_t cap);
/*
 * Write an array to path: written to "path.tmp" then renamed, so a failed
 * write leaves no partial file. nbytes must equal product(shape) times
 * the dtype's size (else NPY_ESIZE). err names the file on failure.
 */
int	 npy_array_write(const char *path, const char *dtype, int rank,
	    const uint64_t *shape, const void *data, size_t nbytes, char *err,
	    size_t errlen);
/* Bytes per element of a wire dtype name, 0 if unknown. */
size_t	 npy_dtype_size(const char *dtype);
/*
 * product(shape) * itemsize into *nbytes; NPY_ETOOBIG if it overflows or
 * exceeds NPY_MAX_BYTES. rank 0 is a scalar (one element).
 */
int	 npy_shape_bytes(int rank, const uint64_t *shape, size_t itemsize,
	    size_t *nbytes);

#endif /* NKID_NPY_H */
