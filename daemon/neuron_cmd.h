/* neuron_cmd.h: the command lines of the Neuron toolchain and the core lists of NEURON_RT_VISIBLE_CORES. */
#ifndef NKID_NEURON_CMD_H
#define NKID_NEURON_CMD_H

#include <stddef.h>

/* Words at most in additional_compile_opt. */
#define NEURON_CMD_MAX_OPTS	256

/* The file the compiler reads from its working directory, and the NEFF
 * it writes there when no --output is given. */
#define NEURON_CMD_PENGUIN	"penguin.py"
#define NEURON_CMD_NEFF		"file.neff"

/*
 * The argv of one NKI compile, exactly as NKI's baremetal runs it:
 *   COMPILER compile --framework XLA penguin.py
 *     --internal-tensorizer-opt-level=nki --pipeline compile SaveTemps
 *     --target TARGET [OPTIONS...]
 * options are split with neuron_proc_split. target must be a platform
 * name ([a-z0-9], 1 to 31 characters: "trn1", "inf2", "trn2"). On
 * success *argv is NULL-terminated and freed with neuron_proc_argv_free;
 * on failure returns -1 with a message in err.
 */
int	neuron_cmd_compile_argv(const char *compiler, const char *target,
	    const char *options, char ***argv, char *err, size_t errlen);

/* COMPILER --version. */
char	**neuron_cmd_version_argv(const char *compiler);

/*
 * PROFILER capture -n NEFF -s NTFF --profile-nth-exec=NTH
 *   --num-exec=NUM [NAME FILE.npy]...
 * (inputs[2i] the name, inputs[2i+1] the file; ninputs pairs).
 */
char	**neuron_cmd_capture_argv(const char *profiler, const char *neff,
	    const char *ntff, unsigned nth, unsigned num_execs,
	    char *const *inputs, size_t ninputs);

/* PROFILER view --output-format summary-json -n NEFF -s NTFF
 *   --output-file JSON */
char	**neuron_cmd_view_argv(const char *profiler, const char *neff,
	    const char *ntff, const char *json);

/*
 * The trace file of execution exec in NKI's profile layout, for the
 * capture named stem.ntff whose first profiled execution is first:
 * "stem.ntff" for first, "stem_exec_<exec>.ntff" for the others.
 * Writes into buf (len bytes).
 */
void	neuron_cmd_trace_name(const char *stem, unsigned first, unsigned exec,
	    char *buf, size_t len);

/*
 * Parse a NEURON_RT_VISIBLE_CORES value: an index "3", a range "0-3", or
 * a comma list of both "0,2-3". Indices must be below limit (limit 0: no
 * bound), ascending and distinct. On success *cores is malloc'd with *n
 * entries; on failure returns -1 with a message in err.
 */
int	neuron_cmd_cores_parse(const char *s, unsigned limit,
	    unsigned **cores, size_t *n, char *err, size_t errlen);
/* Format cores as NEURON_RT_VISIBLE_CORES ("0-3,6") into buf. */
void	neuron_cmd_cores_format(const unsigned *cores, size_t n, char *buf,
	    size_t len);

/*
 * neuron-ls (aws-neuronx-tools): `neuron-ls --json-output` prints a JSON
 * array with one object per Neuron device (docs/neuron.md, "Cores"):
 * "neuron_device" (its index), "nc_count" (its NeuronCores),
 * "logical_neuroncore_config" (trn2 only), "neuroncore_ids", "bdf",
 * "memory_size", "connected_to", "neuron_processes", ...
 */
#define NEURON_CMD_LS_MAX_OUTPUT	(1024 * 1024)	/* bytes read */
#define NEURON_CMD_LS_MAX_DEVICES	256
#define NEURON_CMD_LS_MAX_NC		64	/* NeuronCores per device */
#define NEURON_CMD_LS_MAX_CORES		1024	/* NeuronCores in all */
#define NEURON_CMD_LS_MAX_LNC		8

/* What nkid takes from neuron-ls. */
struct neuron_ls {
	unsigned	ndevices;
	unsigned	ncores;		/* the sum of the devices' nc_count */
	unsigned	lnc;		/* the largest
					   logical_neuroncore_config; 0 when
					   no device has one */
};

/* LS --json-output. */
char	**neuron_cmd_ls_argv(const char *ls);

/*
 * Parse the len bytes of out, what `neuron-ls --json-output` printed:
 * a JSON array (blanks around it allowed, nothing else) of at most
 * NEURON_CMD_LS_MAX_DEVICES objects, each with an integer
 * "neuron_device" >= 0 and an integer "nc_count" from 1 to
 * NEURON_CMD_LS_MAX_NC, and, when present, an integer
 * "logical_neuroncore_config" from 1 to NEURON_CMD_LS_MAX_LNC; at most
 * NEURON_CMD_LS_MAX_CORES NeuronCores in all. Other members are ignored.
 * An empty array is valid (no devices). Returns 0 and fills *ls, or -1
 * with a message in err ("device 1: \"nc_count\" must be an integer
 * from 1 to 64") that does not name neuron-ls: the caller does.
 */
int	neuron_cmd_ls_parse(const char *out, size_t len, struct neuron_ls *ls,
	    char *err, size_t errlen);

/*
 * The compile target (neuronx-cc --target) of an instance type, as the
 * driver's sysfs names it (info/architecture/instance_type: "Trn1",
 * "Inf2") or EC2 does ("trn2n.48xlarge"), case-insensitive: the family
 * before any '.': trn1 -> "trn1", trn1n -> "trn1n", trn2* -> "trn2",
 * inf2 -> "inf2". NULL for anything else (inf1 is not a neuronx-cc
 * target).
 */
const char	*neuron_cmd_target_of_instance(const char *instance_type);

/* The compile target neuron-ls's devices imply: "trn2" when they have a
 * logical NeuronCore configuration (documented for trn2 only); NULL when
 * they do not tell (trn1 and inf2 look alike). */
const char	*neuron_cmd_target_of_ls(const struct neuron_ls *ls);

#endif /* NKID_NEURON_CMD_H */
