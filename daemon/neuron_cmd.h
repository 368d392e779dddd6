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

#endif /* NKID_NEURON_CMD_H */
