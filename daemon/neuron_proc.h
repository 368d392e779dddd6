/* neuron_proc.h: run a toolchain program (neuronx-cc, neuron-profile) in its own process group, with a timeout and a capped log. */
#ifndef NKID_NEURON_PROC_H
#define NKID_NEURON_PROC_H

#include <stddef.h>
#include <stdint.h>

/* What to run. */
struct neuron_proc {
	char *const		*argv;		/* argv[0] is searched in PATH
						   unless it holds a '/' */
	char *const		*envp;		/* NULL: nkid's environment */
	const char		*cwd;		/* NULL: nkid's */
	uint32_t		 timeout_ms;	/* 0: no timeout */
	uint32_t		 grace_ms;	/* SIGTERM to SIGKILL */
	size_t			 log_max;	/* bytes of output kept (>= 64) */
	const volatile int	*cancel;	/* may be NULL */
	int			 stderr_apart;	/* stderr into r->err, not
						   the log: the log is
						   stdout alone */
};

/* How it went. */
struct neuron_proc_result {
	int	 status;	/* waitpid status of the program */
	int	 timed_out;	/* killed for the timeout */
	int	 cancelled;	/* killed because *cancel became non-zero */
	char	*log;		/* stdout and stderr interleaved, capped:
				   the head, a marker, the tail; NUL-ended */
	size_t	 log_len;
	size_t	 log_total;	/* bytes the program wrote in all */
	char	*err;		/* with stderr_apart: the first log_max bytes
				   of stderr, NUL-ended; else NULL */
	size_t	 err_len;
};

/*
 * Start p->argv[0] with posix_spawn in a new process group (its pgid is
 * its pid), stdin from /dev/null, stdout and stderr into one pipe (with
 * stderr_apart, stderr into a second pipe whose first log_max bytes are
 * kept in r->err, the rest read and dropped), every
 * signal at its default disposition and none blocked, in p->cwd; read its
 * output until it exits. When the timeout passes or *p->cancel becomes
 * non-zero, the whole group gets SIGTERM, then SIGKILL after grace_ms.
 * Once the program has exited, what is left of its group (children it
 * left behind) is killed with SIGKILL before the program is reaped, so
 * nothing outlives the call and no zombie is left.
 *
 * Blocks the calling thread: call it off the loop thread. Returns 0 when
 * the program ran (whatever its status; see r), or -1 with a message in
 * err when it could not be started ("cannot run 'neuronx-cc': No such
 * file or directory"). On 0 the caller releases r with
 * neuron_proc_result_release.
 */
int	neuron_proc_run(const struct neuron_proc *p,
	    struct neuron_proc_result *r, char *err, size_t errlen);
void	neuron_proc_result_release(struct neuron_proc_result *r);

/* Did the program exit with status 0, not killed? */
int	neuron_proc_ok(const struct neuron_proc_result *r);

/* How it ended, for messages: "exited with status 1", "was killed by
 * signal 11", "did not finish within 5000 ms and was killed". */
void	neuron_proc_describe(const struct neuron_proc_result *r,
	    uint32_t timeout_ms, char *buf, size_t len);

/*
 * Split s into words the way a shell splits a command line, with no
 * expansion of any kind: blanks (space, tab, newline) separate words;
 * '...' quotes literally; "..." quotes with \" \\ \$ \` escapes;
 * a backslash outside quotes escapes the next character. Nothing is ever
 * run: ';', '|', '$(...)' and the like are plain characters.
 * On success *argv is a malloc'd NULL-terminated array of *argc malloc'd
 * words (freed with neuron_proc_argv_free); on failure (an unterminated
 * quote, a trailing backslash, more than max words) returns -1 with a
 * message in err.
 */
int	neuron_proc_split(const char *s, size_t max, char ***argv,
	    size_t *argc, char *err, size_t errlen);
void	neuron_proc_argv_free(char **argv);

/* Remove path and everything under it, never following symbolic links.
 * Returns 0, or -1 with errno set (a missing path is not an error). */
int	neuron_proc_rmtree(const char *path);

#endif /* NKID_NEURON_PROC_H */
