/*
 * nkir_fixture.h: a small real kernel as NKIR bytes for the unit suites
 * (out = a + b over [P, F] float32, optionally with a device_print), built
 * with protobuf-c as the Python tracer would.
 */
#ifndef NKID_TESTS_NKIR_FIXTURE_H
#define NKID_TESTS_NKIR_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>

#include "nkir.pb-c.h"

#define P	128
#define F	4

struct ir_build {
	Nkir__V1__Term		 terms[2];
	Nkir__V1__Term		*tp[2][1];
	Nkir__V1__Affine	 aff[2];
	Nkir__V1__Affine	*ap[2];
	uint64_t		 shape[2];
};

static void
ir_access(Nkir__V1__Access *a, struct ir_build *b, uint32_t tensor)
{
	int	i;

	nkir__v1__access__init(a);
	b->shape[0] = P;
	b->shape[1] = F;
	for (i = 0; i < 2; i++) {
		nkir__v1__term__init(&b->terms[i]);
		b->terms[i].kind = NKIR__V1__TERM_KIND__TERM_AXIS;
		b->terms[i].index = (uint32_t)i;
		b->terms[i].coef = 1;
		b->tp[i][0] = &b->terms[i];
		nkir__v1__affine__init(&b->aff[i]);
		b->aff[i].n_terms = 1;
		b->aff[i].terms = b->tp[i];
		b->ap[i] = &b->aff[i];
	}
	a->tensor = tensor;
	a->n_index = 2;
	a->index = b->ap;
	a->n_shape = 2;
	a->shape = b->shape;
}

/* out = a + b over [128, 4] float32, with a device_print of the sum when
 * with_print. The caller frees the bytes. */
static uint8_t *
ir_tensor_add(size_t *len, int with_print, int partitions)
{
	Nkir__V1__Kernel	 k = NKIR__V1__KERNEL__INIT;
	Nkir__V1__Tensor	 t[6], *tp[6];
	Nkir__V1__Param		 pa[2], *pp[2];
	Nkir__V1__Op		 ops[8], *opp[8];
	Nkir__V1__Access	 acc[16];
	Nkir__V1__Operand	 opd[8], *opdp[8][2];
	Nkir__V1__Loc		 loc = NKIR__V1__LOC__INIT;
	struct ir_build		 ib[16];
	uint64_t		 shapes[6][2];
	uint32_t		 outputs[1] = { 2 };
	char			*files[1] = { "kernel.py" };
	static const char	*names[6] = { "a", "b", "out", "ta", "tb", "tc" };
	uint8_t			*buf;
	int			 i, nops = 0, nacc = 0, nopd = 0;

	loc.file = 0;
	loc.line = 7;
	for (i = 0; i < 6; i++) {
		nkir__v1__tensor__init(&t[i]);
		t[i].loc = &loc;
		t[i].name = (char *)names[i];
		t[i].dtype = NKIR__V1__DTYPE__DT_FLOAT32;
		shapes[i][0] = i >= 3 ? (uint64_t)partitions : P;
		shapes[i][1] = F;
		t[i].n_shape = 2;
		t[i].shape = shapes[i];
		if (i < 2) {
			t[i].kind = NKIR__V1__TENSOR_KIND__TENSOR_PARAM;
			t[i].space = NKIR__V1__SPACE__SPACE_HBM;
		} else if (i == 2) {
			t[i].kind = NKIR__V1__TENSOR_KIND__TENSOR_HBM;
			t[i].space = NKIR__V1__SPACE__SPACE_SHARED_HBM;
		} else {
			t[i].kind = NKIR__V1__TENSOR_KIND__TENSOR_TILE;
			t[i].space = NKIR__V1__SPACE__SPACE_SBUF;
		}
		tp[i] = &t[i];
	}
	for (i = 0; i < 2; i++) {
		nkir__v1__param__init(&pa[i]);
		pa[i].name = (char *)names[i];
		pa[i].tensor = (uint32_t)i;
		pp[i] = &pa[i];
	}
	loc.file = 0;
	loc.line = 7;

#define OP(kd) do {							\
	nkir__v1__op__init(&ops[nops]);					\
	ops[nops].kind = (kd);						\
	ops[nops].loc = &loc;						\
	opp[nops] = &ops[nops];						\
} while (0)
#define DST(tn) do {							\
	ir_access(&acc[nacc], &ib[nacc], (tn));				\
	ops[nops].dst = &acc[nacc++];					\
} while (0)
#define SRC(tn, slot) do {						\
	ir_access(&acc[nacc], &ib[nacc], (tn));				\
	nkir__v1__operand__init(&opd[nopd]);				\
	opd[nopd].value_case = NKIR__V1__OPERAND__VALUE_ACCESS;		\
	opd[nopd].access = &acc[nacc++];				\
	opdp[nops][slot] = &opd[nopd++];				\
	ops[nops].n_src = (slot) + 1;					\
	ops[nops].src = opdp[nops];					\
} while (0)

	for (i = 3; i < 6; i++) {
		OP(NKIR__V1__OP_KIND__OP_ALLOC);
		DST(i);
		ops[nops].fill = NKIR__V1__FILL__FILL_ZERO;
		nops++;
	}
	OP(NKIR__V1__OP_KIND__OP_LOAD); DST(3); SRC(0, 0); nops++;
	OP(NKIR__V1__OP_KIND__OP_LOAD); DST(4); SRC(1, 0); nops++;
	OP(NKIR__V1__OP_KIND__OP_TENSOR_TENSOR); DST(5); SRC(3, 0); SRC(4, 1);
	ops[nops].alu = NKIR__V1__ALU_OP__ALU_ADD;
	nops++;
	if (with_print) {
		OP(NKIR__V1__OP_KIND__OP_PRINT);
		ops[nops].text = "sum";
		SRC(5, 0);
		nops++;
	}
	OP(NKIR__V1__OP_KIND__OP_STORE); DST(2); SRC(5, 0); nops++;

	k.name = "tensor_add";
	k.n_files = 1;
	k.files = files;
	k.n_tensors = 6;
	k.tensors = tp;
	k.n_params = 2;
	k.params = pp;
	k.n_outputs = 1;
	k.outputs = outputs;
	k.n_body = (size_t)nops;
	k.body = opp;
	*len = nkir__v1__kernel__get_packed_size(&k);
	buf = malloc(*len);
	nkir__v1__kernel__pack(&k, buf);
	return (buf);
}

#endif /* NKID_TESTS_NKIR_FIXTURE_H */
