/* sim_op.c: what the executor knows of each NKIR op kind and ALU operator: NKI's name for it and the engine it runs on. */
/* Floor 0: calls nothing else in sim/. */
#include <stddef.h>

#include "nkir.pb-c.h"
#include "sim/sim_impl.h"

/* Indexed by NKIR OpKind. */
static const struct {
	const char	*name;		/* as NKI calls the op */
	const char	*engine;	/* where NKI places it by default */
} sim_op_kinds[] = {
	[NKIR__V1__OP_KIND__OP_ALLOC] =		{ "ndarray", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_LOAD] =		{ "load", "dma" },
	[NKIR__V1__OP_KIND__OP_STORE] =		{ "store", "dma" },
	[NKIR__V1__OP_KIND__OP_COPY] =		{ "tensor_copy", "scalar" },
	[NKIR__V1__OP_KIND__OP_TENSOR_TENSOR] =	{ "tensor_tensor", "vector" },
	[NKIR__V1__OP_KIND__OP_ACTIVATION] =	{ "activation", "scalar" },
	[NKIR__V1__OP_KIND__OP_REDUCE] =	{ "tensor_reduce", "vector" },
	[NKIR__V1__OP_KIND__OP_MATMUL] =	{ "matmul", "tensor" },
	[NKIR__V1__OP_KIND__OP_TRANSPOSE] =	{ "transpose", "tensor" },
	[NKIR__V1__OP_KIND__OP_IOTA] =		{ "iota", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_SELECT] =	{ "select", "vector" },
	[NKIR__V1__OP_KIND__OP_PRINT] =		{ "device_print", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_LOOP] =		{ "loop", "vector" },
	[NKIR__V1__OP_KIND__OP_BN_STATS] =	{ "bn_stats", "vector" },
	[NKIR__V1__OP_KIND__OP_BN_AGGR] =	{ "bn_aggr", "vector" },
	/* nki.isa kinds 40-79 (sim_isa_plan.c, sim_isa_exec.c) */
	[NKIR__V1__OP_KIND__OP_ACT_ACC] =
	    { "activation", "scalar" },
	[NKIR__V1__OP_KIND__OP_ACC_READ] =
	    { "reduce_res", "vector" },
	[NKIR__V1__OP_KIND__OP_PARTITION_REDUCE] =
	    { "tensor_partition_reduce", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_SCAN] =
	    { "tensor_tensor_scan", "vector" },
	[NKIR__V1__OP_KIND__OP_SCALAR_TENSOR_TENSOR] =
	    { "scalar_tensor_tensor", "vector" },
	[NKIR__V1__OP_KIND__OP_TENSOR_SCALAR_ACC] =
	    { "tensor_scalar_reduce", "vector" },
	[NKIR__V1__OP_KIND__OP_COPY_DYNAMIC] =
	    { "tensor_copy_dynamic", "vector" },
	[NKIR__V1__OP_KIND__OP_COPY_PREDICATED] =
	    { "tensor_copy_predicated", "vector" },
	[NKIR__V1__OP_KIND__OP_ISA_DROPOUT] =
	    { "dropout", "vector" },
	[NKIR__V1__OP_KIND__OP_AFFINE_SELECT] =
	    { "affine_select", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_RANGE_SELECT] =
	    { "range_select", "vector" },
	[NKIR__V1__OP_KIND__OP_SELECT_REDUCE] =
	    { "select_reduce", "vector" },
	[NKIR__V1__OP_KIND__OP_SEQUENCE_BOUNDS] =
	    { "sequence_bounds", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_LOCAL_GATHER] =
	    { "local_gather", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_DMA_COPY] =
	    { "dma_copy", "dma" },
	[NKIR__V1__OP_KIND__OP_DMA_TRANSPOSE] =
	    { "dma_transpose", "dma" },
	[NKIR__V1__OP_KIND__OP_MAX8] =
	    { "max8", "vector" },
	[NKIR__V1__OP_KIND__OP_FIND_INDEX8] =
	    { "nc_find_index8", "vector" },
	[NKIR__V1__OP_KIND__OP_MATCH_REPLACE8] =
	    { "nc_match_replace8", "vector" },
	[NKIR__V1__OP_KIND__OP_SHUFFLE] =
	    { "nc_stream_shuffle", "vector" },
	/* nki.language kinds 80-119 (sim_lang_plan.c, sim_lang_exec.c) */
	[NKIR__V1__OP_KIND__OP_RAND] =
	    { "rand", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_RANDOM_SEED] =
	    { "random_seed", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_GATHER_FLAT] =
	    { "gather_flattened", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_ALL_REDUCE] =
	    { "all_reduce", "gpsimd" },
	[NKIR__V1__OP_KIND__OP_IF] =
	    { "if", "vector" },
	[NKIR__V1__OP_KIND__OP_BITCAST] =
	    { "view", "vector" },
	[NKIR__V1__OP_KIND__OP_DYN_LOOP] =	/* sim_op06_plan.c */
	    { "while_loop", "gpsimd" },
};

/* Indexed by NKIR Engine; ENGINE_DEFAULT: the kind's. */
static const char *const sim_op_engines[] = {
	[NKIR__V1__ENGINE__ENGINE_TENSOR] = "tensor",
	[NKIR__V1__ENGINE__ENGINE_VECTOR] = "vector",
	[NKIR__V1__ENGINE__ENGINE_SCALAR] = "scalar",
	[NKIR__V1__ENGINE__ENGINE_GPSIMD] = "gpsimd",
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

const char *
sim_op_engine(int kind, int engine)
{
	if (engine > 0 && engine < (int)SIM_NITEMS(sim_op_engines) &&
	    sim_op_engines[engine] != NULL)
		return (sim_op_engines[engine]);
	if (!sim_op_kind_valid(kind))
		return ("vector");
	return (sim_op_kinds[kind].engine);
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
