/* sim_op.c: what the executor knows of each NKIR op kind and ALU operator: NKI's name for it and the engine it runs on. */
/* Floor 0: calls nothing else in sim/. */
#include <stddef.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* Indexed by NKIR OpKind. */
static const struct {
	const char	*name;		/* as NKI calls the op */
	int		 engine;	/* where NKI places it by default */
} sim_op_kinds[] = {
	[NKIR__V1__OP_KIND__OP_ALLOC] =
	    { "ndarray", SIM_ENGINE_GPSIMD },
	[NKIR__V1__OP_KIND__OP_LOAD] =		{ "load", SIM_ENGINE_DMA },
	[NKIR__V1__OP_KIND__OP_STORE] =		{ "store", SIM_ENGINE_DMA },
	[NKIR__V1__OP_KIND__OP_COPY] =
	    { "tensor_copy", SIM_ENGINE_SCALAR },
	[NKIR__V1__OP_KIND__OP_TENSOR_TENSOR] =
	    { "tensor_tensor", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_ACTIVATION] =
	    { "activation", SIM_ENGINE_SCALAR },
	[NKIR__V1__OP_KIND__OP_REDUCE] =
	    { "tensor_reduce", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_MATMUL] =	{ "matmul", SIM_ENGINE_TENSOR },
	[NKIR__V1__OP_KIND__OP_TRANSPOSE] =
	    { "transpose", SIM_ENGINE_TENSOR },
	[NKIR__V1__OP_KIND__OP_IOTA] =		{ "iota", SIM_ENGINE_GPSIMD },
	[NKIR__V1__OP_KIND__OP_SELECT] =	{ "select", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_PRINT] =
	    { "device_print", SIM_ENGINE_GPSIMD },
	[NKIR__V1__OP_KIND__OP_LOOP] =		{ "loop", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_BN_STATS] =
	    { "bn_stats", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_BN_AGGR] =
	    { "bn_aggr", SIM_ENGINE_VECTOR },
	/* nki.isa kinds 40-79 (sim_isa_plan.c, sim_isa_exec.c) */
	[NKIR__V1__OP_KIND__OP_ACT_ACC] =
	    { "activation", SIM_ENGINE_SCALAR },
	[NKIR__V1__OP_KIND__OP_ACC_READ] =
	    { "reduce_res", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_PARTITION_REDUCE] =
	    { "tensor_partition_reduce", SIM_ENGINE_GPSIMD },
	[NKIR__V1__OP_KIND__OP_SCAN] =
	    { "tensor_tensor_scan", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_SCALAR_TENSOR_TENSOR] =
	    { "scalar_tensor_tensor", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_TENSOR_SCALAR_ACC] =
	    { "tensor_scalar_reduce", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_COPY_DYNAMIC] =
	    { "tensor_copy_dynamic", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_COPY_PREDICATED] =
	    { "tensor_copy_predicated", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_ISA_DROPOUT] =
	    { "dropout", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_AFFINE_SELECT] =
	    { "affine_select", SIM_ENGINE_GPSIMD },
	[NKIR__V1__OP_KIND__OP_RANGE_SELECT] =
	    { "range_select", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_SELECT_REDUCE] =
	    { "select_reduce", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_SEQUENCE_BOUNDS] =
	    { "sequence_bounds", SIM_ENGINE_GPSIMD },
	[NKIR__V1__OP_KIND__OP_LOCAL_GATHER] =
	    { "local_gather", SIM_ENGINE_GPSIMD },
	[NKIR__V1__OP_KIND__OP_DMA_COPY] =
	    { "dma_copy", SIM_ENGINE_DMA },
	[NKIR__V1__OP_KIND__OP_DMA_TRANSPOSE] =
	    { "dma_transpose", SIM_ENGINE_DMA },
	[NKIR__V1__OP_KIND__OP_MAX8] =
	    { "max8", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_FIND_INDEX8] =
	    { "nc_find_index8", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_MATCH_REPLACE8] =
	    { "nc_match_replace8", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_SHUFFLE] =
	    { "nc_stream_shuffle", SIM_ENGINE_VECTOR },
	/* nki.language kinds 80-119 (sim_lang_plan.c, sim_lang_exec.c) */
	[NKIR__V1__OP_KIND__OP_RAND] =
	    { "rand", SIM_ENGINE_GPSIMD },
	[NKIR__V1__OP_KIND__OP_RANDOM_SEED] =
	    { "random_seed", SIM_ENGINE_GPSIMD },
	[NKIR__V1__OP_KIND__OP_GATHER_FLAT] =
	    { "gather_flattened", SIM_ENGINE_GPSIMD },
	/* a collective: the tile leaves the core and comes back by DMA */
	[NKIR__V1__OP_KIND__OP_ALL_REDUCE] =
	    { "all_reduce", SIM_ENGINE_DMA },
	[NKIR__V1__OP_KIND__OP_IF] =
	    { "if", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_BITCAST] =
	    { "view", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_DYN_LOOP] =	/* sim_op06_plan.c */
	    { "while_loop", SIM_ENGINE_GPSIMD },
	/* MX: sim_op06_mx_*.c; the API pages: quantize_mx "using Vector
	 * Engine", nc_matmul_mx "using Tensor Engine" */
	[NKIR__V1__OP_KIND__OP_QUANTIZE_MX] =
	    { "quantize_mx", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_MATMUL_MX] =
	    { "nc_matmul_mx", SIM_ENGINE_TENSOR },
	/* sim_op06_rng_*.c; GpSimd by default (Op.engine: Vector) */
	[NKIR__V1__OP_KIND__OP_RAND_GET_STATE] =
	    { "rand_get_state", SIM_ENGINE_GPSIMD },
	[NKIR__V1__OP_KIND__OP_RAND_SET_STATE] =
	    { "rand_set_state", SIM_ENGINE_GPSIMD },
	/* NkiTensor.indirect: the engine is the instruction's (Op.engine) */
	[NKIR__V1__OP_KIND__OP_TI_GATHER] =	/* sim_op06_ti.c */
	    { "indirect", SIM_ENGINE_VECTOR },
	[NKIR__V1__OP_KIND__OP_TI_SCATTER] =
	    { "indirect", SIM_ENGINE_VECTOR },
};

/* Indexed by enum sim_engine. */
static const char *const sim_op_engine_names[] = {
	[SIM_ENGINE_DMA] = "dma",
	[SIM_ENGINE_TENSOR] = "tensor",
	[SIM_ENGINE_VECTOR] = "vector",
	[SIM_ENGINE_SCALAR] = "scalar",
	[SIM_ENGINE_GPSIMD] = "gpsimd",
};

/* Indexed by NKIR Engine; ENGINE_DEFAULT: the kind's. */
static const int sim_op_engines[] = {
	[NKIR__V1__ENGINE__ENGINE_TENSOR] = SIM_ENGINE_TENSOR,
	[NKIR__V1__ENGINE__ENGINE_VECTOR] = SIM_ENGINE_VECTOR,
	[NKIR__V1__ENGINE__ENGINE_SCALAR] = SIM_ENGINE_SCALAR,
	[NKIR__V1__ENGINE__ENGINE_GPSIMD] = SIM_ENGINE_GPSIMD,
};

static int
sim_op_kind_valid(int kind)
{
	return (kind > 0 && kind < (int)SIM_NITEMS(sim_op_kinds) &&
	    sim_op_kinds[kind].name != NULL);
}

const char *
sim_op_name(int kind)
{
	if (!sim_op_kind_valid(kind))
		return ("op");
	return (sim_op_kinds[kind].name);
}

int
sim_op_engine_id(int kind, int engine, int alu)
{
	if (engine > 0 && engine < (int)SIM_NITEMS(sim_op_engines) &&
	    sim_op_engines[engine] != 0)
		return (sim_op_engines[engine]);
	/*
	 * aws-neuron-sdk@8a38e733 general/nki/api/nki/isa/__init__.py,
	 * tensor_tensor: "power ... run[s] on the GpSimd Engine"; every
	 * other operator of it runs on the Vector Engine.
	 */
	if (kind == NKIR__V1__OP_KIND__OP_TENSOR_TENSOR &&
	    alu == NKIR__V1__ALU_OP__ALU_POWER)
		return (SIM_ENGINE_GPSIMD);
	if (!sim_op_kind_valid(kind))
		return (SIM_ENGINE_VECTOR);
	return (sim_op_kinds[kind].engine);
}

const char *
sim_op_engine(int kind, int engine, int alu)
{
	return (sim_op_engine_names[sim_op_engine_id(kind, engine, alu)]);
}

/* NKI's name (nki.language) of each NKIR AluOp. */
static const char *const sim_op_alus[] = {
	NULL, "add", "subtract", "multiply", "divide", "maximum", "minimum",
	"power", "greater", "greater_equal", "less", "less_equal", "equal",
	"not_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and",
	"bitwise_or", "bitwise_xor", "fmod", "bypass", "mean", "var",
	"left_shift", "right_shift", "invert", "logical_not", "rsqrt",
	"reciprocal", "abs",
};

const char *
sim_op_alu_name(int alu)
{
	if (alu > SIM_ALU_INVERT_U(0) && alu <= SIM_ALU_INVERT_U(32))
		return ("invert");
	if (alu <= 0 || alu >= (int)SIM_NITEMS(sim_op_alus))
		return ("unknown");
	return (sim_op_alus[alu]);
}
