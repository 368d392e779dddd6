/* sim.c: the executor's front door: NKIR parsing with bounded input, the "NKIX" executable image, program loading and signature accessors. */
/* Floor 4: calls sim_plan.c, sim_par.c and sim_diag.c. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

#define SIM_IMAGE_MAGIC		"NKIX"
#define SIM_IMAGE_VERSION	1u
#define SIM_WIRE_DEPTH_MAX	(2 * SIM_DEPTH_MAX + 8)

/* ------------------------------------------------------------ wire scan */

static uint64_t
sim_fnv1a(const uint8_t *p, size_t n)
{
	uint64_t	h = 0xcbf29ce484222325ull;
	size_t		i;

	for (i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return (h);
}

static int
sim_wire_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t	*p = *pp;
	uint64_t	 x = 0;
	int		 shift;

	for (shift = 0; shift < 64; shift += 7) {
		if (p >= end)
			return (-1);
		x |= (uint64_t)(*p & 0x7f) << shift;
		if (!(*p++ & 0x80)) {
			*pp = p;
			*v = x;
			return (0);
		}
	}
	return (-1);
}

enum { SIM_WIRE_KERNEL, SIM_WIRE_OP, SIM_WIRE_LOOP, SIM_WIRE_BRANCH };

/*
 * Walk the recursive part of the message tree (Kernel.body -> Op.loop ->
 * Loop.body -> ..., Op.branch -> Branch.then_body/else_body -> ...) so
 * that protobuf-c's recursive unpacker never sees a nesting deeper than
 * SIM_WIRE_DEPTH_MAX.
 */
static int
sim_wire_scan(const uint8_t *p, const uint8_t *end, int type, int depth)
{
	uint64_t	key, v;
	int		sub, rc;

	if (depth > SIM_WIRE_DEPTH_MAX)
		return (SIM_ELIMIT);
	while (p < end) {
		if (sim_wire_varint(&p, end, &key))
			return (SIM_EPARSE);
		switch (key & 7) {
		case 0:
			if (sim_wire_varint(&p, end, &v))
				return (SIM_EPARSE);
			break;
		case 1:
			if (end - p < 8)
				return (SIM_EPARSE);
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				return (SIM_EPARSE);
			p += 4;
			break;
		case 2:
			if (sim_wire_varint(&p, end, &v) ||
			    v > (uint64_t)(end - p))
				return (SIM_EPARSE);
			sub = -1;
			if (type == SIM_WIRE_KERNEL && key >> 3 == 7)
				sub = SIM_WIRE_OP;
			else if (type == SIM_WIRE_OP && key >> 3 == 14)
				sub = SIM_WIRE_LOOP;
			else if (type == SIM_WIRE_LOOP && key >> 3 == 6)
				sub = SIM_WIRE_OP;
			else if (type == SIM_WIRE_OP && key >> 3 == 81)
				sub = SIM_WIRE_BRANCH;
			else if (type == SIM_WIRE_BRANCH &&
			    (key >> 3 == 2 || key >> 3 == 3))
				sub = SIM_WIRE_OP;
			if (sub >= 0 && (rc = sim_wire_scan(p, p + v, sub,
			    depth + 1)))
				return (rc);
			p += v;
			break;
		default:
			return (SIM_EPARSE);
		}
	}
	return (0);
}

static int
sim_kernel_unpack(const void *ir, size_t len, Nkir__V1__Kernel **out,
    struct sim_diag *diag)
{
	int	rc;

	*out = NULL;
	if (len > SIM_IR_MAX) {
		sim_diag_set(diag, "kernel IR of %zu bytes exceeds the "
		    "executor limit of %u bytes", len, SIM_IR_MAX);
		return (SIM_ELIMIT);
	}
	rc = sim_wire_scan(ir, (const uint8_t *)ir + len, SIM_WIRE_KERNEL, 0);
	if (rc == SIM_ELIMIT) {
		sim_diag_set(diag, "kernel IR nests loops and ifs deeper than %d",
		    SIM_DEPTH_MAX);
		return (rc);
	}
	if (rc == 0)
		*out = nkir__v1__kernel__unpack(NULL, len, ir);
	if (*out == NULL) {
		sim_diag_set(diag, "malformed or truncated kernel IR (%zu "
		    "bytes)", len);
		return (SIM_EPARSE);
	}
	return (0);
}

/* ------------------------------------------------------------ images */

/* Store the size low bytes of v at p, least significant first. */
static void
sim_put_le(uint8_t *p, uint64_t v, int size)
{
	int	i;

	for (i = 0; i < size; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The little-endian number of size bytes at p. */
static uint64_t
sim_get_le(const uint8_t *p, int size)
{
	uint64_t	v = 0;
	int		i;

	for (i = size - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return (v);
}

void
sim_image_seal(void *image, size_t len)
{
	uint8_t	*img = image;

	assert(len >= SIM_IMAGE_HEADER);
	memcpy(img, SIM_IMAGE_MAGIC, 4);
	sim_put_le(img + 16, len - SIM_IMAGE_HEADER, 8);
	sim_put_le(img + 24, sim_fnv1a(img + SIM_IMAGE_HEADER,
	    len - SIM_IMAGE_HEADER), 8);
}

int
sim_compile(const void *ir, size_t ir_len, void **image, size_t *image_len,
    struct sim_diag *diag)
{
	Nkir__V1__Kernel	*k;
	struct sim_program	*p;
	uint8_t			*img;
	size_t			 n;
	int			 rc;

	*image = NULL;
	*image_len = 0;
	if (ir == NULL && ir_len > 0) {
		sim_diag_set(diag, "no kernel IR");
		return (SIM_EPARSE);
	}
	if ((rc = sim_kernel_unpack(ir, ir_len, &k, diag)))
		return (rc);
	rc = sim_plan_build(k, &p, diag);
	if (rc) {
		nkir__v1__kernel__free_unpacked(k, NULL);
		return (rc);
	}
	sim_plan_free(p);
	n = nkir__v1__kernel__get_packed_size(k);
	img = malloc(SIM_IMAGE_HEADER + n);
	if (img == NULL) {
		nkir__v1__kernel__free_unpacked(k, NULL);
		sim_diag_set(diag, "out of memory");
		return (SIM_ENOMEM);
	}
	nkir__v1__kernel__pack(k, img + SIM_IMAGE_HEADER);
	nkir__v1__kernel__free_unpacked(k, NULL);
	sim_put_le(img + 4, SIM_IMAGE_VERSION, 4);
	sim_put_le(img + 8, 0, 4);
	sim_put_le(img + 12, SIM_IMAGE_HEADER, 4);
	sim_image_seal(img, SIM_IMAGE_HEADER + n);
	*image = img;
	*image_len = SIM_IMAGE_HEADER + n;
	return (0);
}

int
sim_image_ir(const void *image, size_t len, const void **ir, size_t *ir_len,
    struct sim_diag *diag)
{
	const uint8_t		*img = image;
	uint64_t		 n;
	uint32_t		 version;

	*ir = NULL;
	*ir_len = 0;
	if (img == NULL || len < SIM_IMAGE_HEADER ||
	    memcmp(img, SIM_IMAGE_MAGIC, 4) != 0) {
		sim_diag_set(diag, "not a cpu executable image (bad magic)");
		return (SIM_EPARSE);
	}
	version = (uint32_t)sim_get_le(img + 4, 4);
	if (version != SIM_IMAGE_VERSION) {
		sim_diag_set(diag, "unsupported image version %u (expected "
		    "%u)", version, SIM_IMAGE_VERSION);
		return (SIM_EPARSE);
	}
	n = sim_get_le(img + 16, 8);
	if (sim_get_le(img + 8, 4) != 0 ||
	    sim_get_le(img + 12, 4) != SIM_IMAGE_HEADER ||
	    n != len - SIM_IMAGE_HEADER) {
		sim_diag_set(diag, "corrupted image: bad header or length");
		return (SIM_EPARSE);
	}
	if (sim_fnv1a(img + SIM_IMAGE_HEADER, n) != sim_get_le(img + 24, 8)) {
		sim_diag_set(diag, "corrupted image: checksum mismatch");
		return (SIM_EPARSE);
	}
	*ir = img + SIM_IMAGE_HEADER;
	*ir_len = (size_t)n;
	return (0);
}

int
sim_program_load(const void *image, size_t len, struct sim_program **out,
    struct sim_diag *diag)
{
	Nkir__V1__Kernel	*k;
	const void		*ir;
	size_t			 n;
	int			 rc;

	*out = NULL;
	if ((rc = sim_image_ir(image, len, &ir, &n, diag)) != 0)
		return (rc);
	if ((rc = sim_kernel_unpack(ir, n, &k, diag)))
		return (rc);
	rc = sim_plan_build(k, out, diag);
	nkir__v1__kernel__free_unpacked(k, NULL);
	if (rc == 0 && (rc = sim_par_program(*out)) != 0) {
		sim_diag_set(diag, "out of memory");
		sim_program_free(*out);
		*out = NULL;
	}
	return (rc);
}

void
sim_program_free(struct sim_program *p)
{
	if (p != NULL)
		sim_par_free(p);
	sim_plan_free(p);
}

const char *
sim_program_name(const struct sim_program *p)
{
	return (p->name);
}

uint64_t
sim_program_cost(const struct sim_program *p)
{
	return (p->cost);
}

size_t
sim_program_nparams(const struct sim_program *p)
{
	return (p->nparams);
}

const struct sim_sig *
sim_program_param(const struct sim_program *p, size_t i)
{
	return (i < p->nparams ? &p->params[i] : NULL);
}

size_t
sim_program_noutputs(const struct sim_program *p)
{
	return (p->noutputs);
}

const struct sim_sig *
sim_program_output(const struct sim_program *p, size_t i)
{
	return (i < p->noutputs ? &p->outputs[i] : NULL);
}
