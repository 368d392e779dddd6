/* check_model.c: the NeuronCore model: documented costs, scheduling across engines, targets, bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "nkir.pb-c.h"
#include "model/model.h"
#include "sim/sim.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("model", NULL, NULL, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(errors, 0);

/* A kernel built by hand: out[128, F] = exp(x[128, F]) through SBUF. */
struct kb {
	Nkir__V1__Kernel	 k;
	Nkir__V1__Tensor	 t[3], *tp[3];
	uint64_t		 shape[2];
	Nkir__V1__Op		 op[3], *opp[3];
	Nkir__V1__Access	 acc[6];
	Nkir__V1__Affine	 aff[12], *affp[6][2];
	Nkir__V1__Term		 term[12], *termp[12];
	Nkir__V1__Operand	 src[3], *srcp[3];
	Nkir__V1__Loc		 loc[3];
	uint32_t		 params[1], outputs[1];
	char			*files[1];
	uint64_t		 ashape[2];
};

static void
kb_access(struct kb *b, int i, uint32_t tensor)
{
	Nkir__V1__Access	*a = &b->acc[i];
	int			 d;

	nkir__v1__access__init(a);
	a->tensor = tensor;
	a->n_shape = 2;
	a->shape = b->ashape;
	for (d = 0; d < 2; d++) {
		nkir__v1__affine__init(&b->aff[i * 2 + d]);
		nkir__v1__term__init(&b->term[i * 2 + d]);
		b->term[i * 2 + d].kind = NKIR__V1__TERM_KIND__TERM_AXIS;
		b->term[i * 2 + d].index = (uint32_t)d;
		b->term[i * 2 + d].coef = 1;
		b->termp[i * 2 + d] = &b->term[i * 2 + d];
		b->aff[i * 2 + d].n_terms = 1;
		b->aff[i * 2 + d].terms = &b->termp[i * 2 + d];
		b->affp[i][d] = &b->aff[i * 2 + d];
	}
	a->n_index = 2;
	a->index = b->affp[i];
}

static uint8_t *
kb_build(uint64_t nfree, const char *target, size_t *len)
{
	struct kb	*b = calloc(1, sizeof *b);
	int		 kinds[3] = { NKIR__V1__OP_KIND__OP_LOAD,
			    NKIR__V1__OP_KIND__OP_ACTIVATION,
			    NKIR__V1__OP_KIND__OP_STORE };
	/* load x -> tile; tile = exp(tile); store tile -> out */
	uint32_t	 dst[3] = { 1, 1, 2 }, srct[3] = { 0, 1, 1 };
	uint8_t		*buf;
	int		 i;

	b->shape[0] = b->ashape[0] = 128;
	b->shape[1] = b->ashape[1] = nfree;
	nkir__v1__kernel__init(&b->k);
	for (i = 0; i < 3; i++) {
		nkir__v1__tensor__init(&b->t[i]);
		b->t[i].name = i == 0 ? "x" : i == 1 ? "tile" : "out";
		b->t[i].kind = i == 0 ? NKIR__V1__TENSOR_KIND__TENSOR_PARAM :
		    i == 1 ? NKIR__V1__TENSOR_KIND__TENSOR_TILE :
		    NKIR__V1__TENSOR_KIND__TENSOR_HBM;
		b->t[i].space = i == 1 ? NKIR__V1__SPACE__SPACE_SBUF :
		    NKIR__V1__SPACE__SPACE_HBM;
		b->t[i].dtype = NKIR__V1__DTYPE__DT_FLOAT32;
		b->t[i].n_shape = 2;
		b->t[i].shape = b->shape;
		b->tp[i] = &b->t[i];
	}
	for (i = 0; i < 3; i++) {
		nkir__v1__op__init(&b->op[i]);
		nkir__v1__loc__init(&b->loc[i]);
		b->loc[i].line = (uint32_t)(10 + i);
		b->op[i].loc = &b->loc[i];
		b->op[i].kind = kinds[i];
		kb_access(b, i * 2, dst[i]);
		kb_access(b, i * 2 + 1, srct[i]);
		b->op[i].dst = &b->acc[i * 2];
		nkir__v1__operand__init(&b->src[i]);
		b->src[i].value_case = NKIR__V1__OPERAND__VALUE_ACCESS;
		b->src[i].access = &b->acc[i * 2 + 1];
		b->srcp[i] = &b->src[i];
		b->op[i].n_src = 1;
		b->op[i].src = &b->srcp[i];
		b->opp[i] = &b->op[i];
	}
	b->op[1].act = NKIR__V1__ACT_FUNC__ACT_EXP;
	b->op[1].scale = 1.0;
	b->files[0] = "k.py";
	b->k.name = "exp_tile";
	b->k.n_files = 1;
	b->k.files = b->files;
	b->k.n_tensors = 3;
	b->k.tensors = b->tp;
	b->params[0] = 0;
	b->outputs[0] = 2;
	b->k.n_outputs = 1;
	b->k.outputs = b->outputs;
	b->k.n_body = 3;
	b->k.body = b->opp;
	b->k.target = (char *)target;
	*len = nkir__v1__kernel__get_packed_size(&b->k);
	buf = malloc(*len);
	nkir__v1__kernel__pack(&b->k, buf);
	free(b);
	return (buf);
}

CHECK_TEST(core, test_model_costs)
{
	struct model_result	r, r2;
	uint8_t			*ir;
	size_t			 len;
	char			 diag[256];
	double			 dma, act;

	ir = kb_build(512, "", &len);
	ck_assert_int_eq(model_run(ir, len, NULL, &r, diag, sizeof diag), 0);
	ck_assert_str_eq(r.target, "trn1");
	/* load, activation, store: three instructions. */
	ck_assert_uint_eq(r.instructions, 3);
	/* isa (activation): max(64, N) ScalarE cycles at 1.4 GHz (arch). */
	act = 512 / 1.4;
	ck_assert_double_eq_tol(r.busy_ns[MODEL_TRACK_SCALAR], act, 1e-6);
	/* DMA: 16 transfers of 8 partitions x 2 KiB, each moving its
	 * bytes at trn1's share of 17 B/ns for 2 KiB per partition (70%
	 * from 2 KiB: dma-bandwidth) and landing 700 ns after they moved
	 * (dma-bandwidth's ~1300 ns less dge's ~600 ns of descriptor
	 * setup, which trn1 does before the run). */
	dma = 8 * 2048 / (17.0 * 0.70);
	ck_assert_double_eq_tol(r.busy_ns[MODEL_TRACK_DMA0], 2 * dma, 1e-6);
	ck_assert_uint_eq(r.dma_bytes, 2 * 128 * 512 * 4);
	/* A chain: load, then the activation (+ its 200-cycle latency),
	 * then the store; and the execution's start-up and tear-down
	 * (10 us, fused_mamba.rst's profile). */
	ck_assert_double_eq_tol(r.overhead_ns, 10000.0, 1e-6);
	ck_assert_double_eq_tol(r.total_ns, 10000.0 + dma + 700.0 + act +
	    200 / 1.4 + dma + 700.0, 1e-6);
	/* Deterministic. */
	ck_assert_int_eq(model_run(ir, len, NULL, &r2, diag, sizeof diag), 0);
	ck_assert(r2.total_ns == r.total_ns);
	free(ir);
}
END_TEST

CHECK_TEST(core, test_model_targets)
{
	struct model_opts	o;
	struct model_result	r1, r2;
	uint8_t			*ir;
	size_t			 len;
	char			 diag[256];

	ir = kb_build(8192, "trn2", &len);
	ck_assert_int_eq(model_run(ir, len, NULL, &r2, diag, sizeof diag), 0);
	ck_assert_str_eq(r2.target, "trn2");
	memset(&o, 0, sizeof o);
	o.target = "inf2";
	ck_assert_int_eq(model_run(ir, len, &o, &r1, diag, sizeof diag), 0);
	ck_assert_str_eq(r1.target, "trn1");
	/* trn2: ScalarE 1.2 GHz against 1.4. */
	ck_assert_double_eq_tol(r2.busy_ns[MODEL_TRACK_SCALAR], 8192 / 1.2,
	    1e-6);
	o.target = "trn9";
	ck_assert_int_eq(model_run(ir, len, &o, &r1, diag, sizeof diag),
	    MODEL_EINVAL);
	ck_assert_ptr_nonnull(strstr(diag, "target 'trn9'"));
	free(ir);
}
END_TEST

CHECK_TEST(core, test_model_report)
{
	struct model_result	r;
	uint8_t			*ir;
	size_t			 len, tl, sl;
	char			 diag[256], *t, *s;

	ir = kb_build(512, "", &len);
	ck_assert_int_eq(model_report(ir, len, NULL, "exp_tile", 2, 1000, &t,
	    &tl, &s, &sl, &r, diag, sizeof diag), 0);
	ck_assert_uint_eq(strlen(t), tl);
	ck_assert_ptr_nonnull(strstr(t, "\"traceEvents\":["));
	ck_assert_ptr_nonnull(strstr(t, "\"name\":\"activation\",\"cat\":"
	    "\"scalar\""));
	ck_assert_ptr_nonnull(strstr(t, "\"file\":\"k.py\",\"line\":11"));
	ck_assert_ptr_nonnull(strstr(s, "\"execution\":2"));
	ck_assert_ptr_nonnull(strstr(s, "\"critical_path_engine\":\"dma\""));
	ck_assert_ptr_nonnull(strstr(s, "{\"op\":\"load\",\"engine\":\"dma\","
	    "\"file\":\"k.py\",\"line\":10,\"count\":16"));
	free(t);
	free(s);
	free(ir);
}
END_TEST

CHECK_TEST(errors, test_model_errors)
{
	struct model_opts	o;
	struct model_result	r;
	uint8_t			*ir, junk[16] = { 0xff, 0xff, 0xff };
	const void		*p;
	size_t			 len, pl;
	char			 diag[256];

	ck_assert_int_eq(model_run(junk, sizeof junk, NULL, &r, diag,
	    sizeof diag), MODEL_EPARSE);
	ck_assert_ptr_nonnull(strstr(diag, "cannot parse"));
	ir = kb_build(512, "", &len);
	memset(&o, 0, sizeof o);
	o.max_instructions = 2;
	ck_assert_int_eq(model_run(ir, len, &o, &r, diag, sizeof diag),
	    MODEL_ELIMIT);
	ck_assert_ptr_nonnull(strstr(diag, "more than 2 instructions"));
	ck_assert_int_eq(model_image_ir(junk, sizeof junk, &p, &pl),
	    MODEL_EPARSE);
	free(ir);
}
END_TEST

/* The image is sim/'s: model_image_ir reads it through sim_image_ir,
 * which checks its checksum (the model's own copy did not). */
CHECK_TEST(errors, test_model_image_ir_is_sims)
{
	uint8_t		*ir, *img;
	const void	*p;
	size_t		 len, ilen, pl;

	/* The layout of docs/nkir.md: magic, version 1, flags 0, header
	 * length, then sim_image_seal's payload length and checksum. */
	ir = kb_build(512, "", &len);
	ilen = SIM_IMAGE_HEADER + len;
	img = calloc(1, ilen);
	img[4] = 1;
	img[12] = SIM_IMAGE_HEADER;
	memcpy(img + SIM_IMAGE_HEADER, ir, len);
	sim_image_seal(img, ilen);
	ck_assert_int_eq(model_image_ir(img, ilen, &p, &pl), 0);
	ck_assert_ptr_eq(p, img + SIM_IMAGE_HEADER);
	ck_assert_uint_eq(pl, ilen - SIM_IMAGE_HEADER);
	img[ilen - 1] ^= 0x40;
	ck_assert_int_eq(model_image_ir(img, ilen, &p, &pl), MODEL_EPARSE);
	free(img);
	free(ir);
}
END_TEST

/* One table says where an op runs: tensor_tensor's power on GpSimd
 * (isa tensor_tensor), its rsqrt on VectorE like its other operators. */
CHECK_TEST(core, test_model_engine_table_is_sims)
{
	ck_assert_int_eq(sim_op_engine_id(NKIR__V1__OP_KIND__OP_TENSOR_TENSOR,
	    NKIR__V1__ENGINE__ENGINE_DEFAULT, NKIR__V1__ALU_OP__ALU_POWER),
	    SIM_ENGINE_GPSIMD);
	ck_assert_int_eq(sim_op_engine_id(NKIR__V1__OP_KIND__OP_TENSOR_TENSOR,
	    NKIR__V1__ENGINE__ENGINE_DEFAULT, NKIR__V1__ALU_OP__ALU_RSQRT),
	    SIM_ENGINE_VECTOR);
	ck_assert_int_eq(sim_op_engine_id(NKIR__V1__OP_KIND__OP_TENSOR_TENSOR,
	    NKIR__V1__ENGINE__ENGINE_GPSIMD, NKIR__V1__ALU_OP__ALU_ADD),
	    SIM_ENGINE_GPSIMD);
	ck_assert_int_eq(sim_op_engine_id(NKIR__V1__OP_KIND__OP_LOAD,
	    NKIR__V1__ENGINE__ENGINE_DEFAULT, 0), SIM_ENGINE_DMA);
}
END_TEST
