/* neuron_proc.c: spawn a toolchain program in its own process group, capture its log, kill the group on timeout. */
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/neuron_proc.h"
#include "daemon/xmalloc.h"

extern char **environ;

/* How often the loop looks at the child and the cancel flag. */
#define NEURON_PROC_TICK_MS	20

/* The captured log: a head kept whole and a ring of the latest bytes. */
struct neuron_proc_log {
	char	*head;
	size_t	 head_len, head_max;
	char	*tail;
	size_t	 tail_pos, tail_len, tail_max;
	size_t	 total;
};

static uint64_t
neuron_proc_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
}

static void
neuron_proc_log_add(struct neuron_proc_log *l, const char *buf, size_t n)
{
	size_t	k;

	l->total += n;
	k = l->head_max - l->head_len;
	if (k > n)
		k = n;
	memcpy(l->head + l->head_len, buf, k);
	l->head_len += k;
	buf += k;
	n -= k;
	if (l->tail_max == 0)
		return;
	if (n > l->tail_max) {
		buf += n - l->tail_max;
		n = l->tail_max;
	}
	while (n > 0) {
		k = l->tail_max - l->tail_pos;
		if (k > n)
			k = n;
		memcpy(l->tail + l->tail_pos, buf, k);
		l->tail_pos = (l->tail_pos + k) % l->tail_max;
		l->tail_len = l->tail_len + k > l->tail_max ? l->tail_max :
		    l->tail_len + k;
		buf += k;
		n -= k;
	}
}

/* The log as one string: head, "[... N bytes omitted ...]", tail. */
static char *
neuron_proc_log_finish(struct neuron_proc_log *l, size_t *len)
{
	char	*s, mark[96];
	size_t	 omitted, off, start, mlen = 0;

	omitted = l->total - l->head_len - l->tail_len;
	if (omitted > 0)
		mlen = (size_t)snprintf(mark, sizeof mark,
		    "\n[... %zu bytes omitted ...]\n", omitted);
	s = xmalloc(l->head_len + mlen + l->tail_len + 1);
	memcpy(s, l->head, l->head_len);
	off = l->head_len;
	memcpy(s + off, mark, mlen);
	off += mlen;
	/* The oldest tail byte is at tail_pos once the ring is full. */
	start = l->tail_len == l->tail_max ? l->tail_pos : 0;
	if (l->tail_len > 0) {
		memcpy(s + off, l->tail + start, l->tail_len - start);
		memcpy(s + off + l->tail_len - start, l->tail, start);
	}
	off += l->tail_len;
	s[off] = '\0';
	*len = off;
	return (s);
}

/* Signal the process group pgid; a group already gone is fine. */
static void
neuron_proc_group_kill(pid_t pgid, int sig)
{
	if (kill(-pgid, sig) == -1 && errno != ESRCH)
		kill(pgid, sig);
}

static int
neuron_proc_spawn(const struct neuron_proc *p, int wfd, int efd, pid_t *pid,
    char *err, size_t errlen)
{
	posix_spawn_file_actions_t	 fa;
	posix_spawnattr_t		 attr;
	sigset_t			 none, all;
	int				 error;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, wfd, 1);
	posix_spawn_file_actions_adddup2(&fa, efd != -1 ? efd : wfd, 2);
	if (p->cwd != NULL)
		posix_spawn_file_actions_addchdir_np(&fa, p->cwd);
	/* nkid ignores SIGPIPE and its workers may block signals: the
	 * program starts from the defaults, in a group of its own. */
	sigemptyset(&none);
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	error = posix_spawnp(pid, p->argv[0], &fa, &attr, p->argv,
	    p->envp != NULL ? p->envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (error != 0) {
		snprintf(err, errlen, "cannot run '%s': %s", p->argv[0],
		    strerror(error));
		return (-1);
	}
	return (0);
}

int
neuron_proc_run(const struct neuron_proc *p, struct neuron_proc_result *r,
    char *err, size_t errlen)
{
	struct neuron_proc_log	 log;
	struct pollfd		 pfd[2];
	siginfo_t		 si;
	char			 buf[16384];
	uint64_t		 now, deadline = 0, kill_at = 0;
	ssize_t			 n;
	pid_t			 pid;
	char			*ebuf = NULL;
	size_t			 elen = 0, k;
	int			 fds[2], efds[2] = { -1, -1 };
	int			 eof = 0, eeof = 1, exited = 0, phase = 0;
	int			 wait, i;

	assert(p != NULL && p->argv != NULL && p->argv[0] != NULL);
	assert(r != NULL && p->log_max >= 64);
	memset(r, 0, sizeof *r);
	if (pipe2(fds, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "cannot run '%s': pipe: %s", p->argv[0],
		    strerror(errno));
		return (-1);
	}
	if (p->stderr_apart && pipe2(efds, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "cannot run '%s': pipe: %s", p->argv[0],
		    strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return (-1);
	}
	if (neuron_proc_spawn(p, fds[1], efds[1], &pid, err, errlen) != 0) {
		close(fds[0]);
		close(fds[1]);
		if (efds[0] != -1) {
			close(efds[0]);
			close(efds[1]);
		}
		return (-1);
	}
	close(fds[1]);
	if (efds[0] != -1) {
		close(efds[1]);
		ebuf = xmalloc(p->log_max + 1);
		eeof = 0;
	}

	memset(&log, 0, sizeof log);
	log.head_max = p->log_max / 2;
	log.tail_max = p->log_max - log.head_max;
	log.head = xmalloc(log.head_max);
	log.tail = xmalloc(log.tail_max);
	now = neuron_proc_now_ms();
	if (p->timeout_ms > 0)
		deadline = now + p->timeout_ms;

	for (;;) {
		/* Exited? Look without reaping: the zombie keeps the pid,
		 * and so the group id, from being reused. */
		if (!exited) {
			memset(&si, 0, sizeof si);
			if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG |
			    WNOWAIT) == 0 && si.si_pid == pid) {
				exited = 1;
				/* What it left behind dies with it. */
				neuron_proc_group_kill(pid, SIGKILL);
			}
		}
		if (exited && eof && eeof)
			break;
		now = neuron_proc_now_ms();
		if (!exited && phase == 0) {
			if (deadline != 0 && now >= deadline)
				r->timed_out = 1;
			else if (p->cancel != NULL && *p->cancel)
				r->cancelled = 1;
			if (r->timed_out || r->cancelled) {
				neuron_proc_group_kill(pid, SIGTERM);
				phase = 1;
				kill_at = now + p->grace_ms;
			}
		}
		if (!exited && phase == 1 && now >= kill_at) {
			neuron_proc_group_kill(pid, SIGKILL);
			phase = 2;
		}
		wait = NEURON_PROC_TICK_MS;
		if (eof && eeof) {
			usleep(wait * 1000);
			continue;
		}
		/* poll skips a negative descriptor: a pipe at its end. */
		pfd[0].fd = eof ? -1 : fds[0];
		pfd[1].fd = eeof ? -1 : efds[0];
		for (i = 0; i < 2; i++) {
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, 2, wait) <= 0)
			continue;
		if (pfd[0].revents != 0) {
			n = read(fds[0], buf, sizeof buf);
			if (n > 0)
				neuron_proc_log_add(&log, buf, (size_t)n);
			else if (n == 0 || (errno != EINTR && errno != EAGAIN))
				eof = 1;
		}
		if (pfd[1].revents != 0) {
			/* The head of stderr is kept, the rest read and
			 * dropped. */
			n = read(efds[0], buf, sizeof buf);
			if (n > 0) {
				k = p->log_max - elen;
				if (k > (size_t)n)
					k = (size_t)n;
				memcpy(ebuf + elen, buf, k);
				elen += k;
			} else if (n == 0 || (errno != EINTR &&
			    errno != EAGAIN))
				eeof = 1;
		}
	}
	close(fds[0]);
	if (efds[0] != -1)
		close(efds[0]);
	while (waitpid(pid, &r->status, 0) == -1 && errno == EINTR)
		;
	r->log = neuron_proc_log_finish(&log, &r->log_len);
	r->log_total = log.total;
	free(log.head);
	free(log.tail);
	if (ebuf != NULL) {
		ebuf[elen] = '\0';
		r->err = ebuf;
		r->err_len = elen;
	}
	return (0);
}

void
neuron_proc_result_release(struct neuron_proc_result *r)
{
	if (r == NULL)
		return;
	free(r->log);
	free(r->err);
	memset(r, 0, sizeof *r);
}

int
neuron_proc_ok(const struct neuron_proc_result *r)
{
	return (!r->timed_out && !r->cancelled && WIFEXITED(r->status) &&
	    WEXITSTATUS(r->status) == 0);
}

void
neuron_proc_describe(const struct neuron_proc_result *r, uint32_t timeout_ms,
    char *buf, size_t len)
{
	if (r->timed_out)
		snprintf(buf, len, "did not finish within %u ms and was "
		    "killed", timeout_ms);
	else if (r->cancelled)
		snprintf(buf, len, "was cancelled");
	else if (WIFEXITED(r->status))
		snprintf(buf, len, "exited with status %d",
		    WEXITSTATUS(r->status));
	else if (WIFSIGNALED(r->status))
		snprintf(buf, len, "was killed by signal %d (%s)",
		    WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
	else
		snprintf(buf, len, "ended with wait status %#x", r->status);
}

/* ------------------------------------------------------------ words */

struct neuron_proc_words {
	char	**v;
	size_t	  n;
	char	 *cur;
	size_t	  len, cap;
	int	  open;		/* a word is being built */
};

static void
neuron_proc_word_putc(struct neuron_proc_words *w, char c)
{
	if (w->len + 2 > w->cap) {
		w->cap = w->cap ? w->cap * 2 : 32;
		w->cur = xreallocarray(w->cur, w->cap, 1);
	}
	w->cur[w->len++] = c;
	w->open = 1;
}

static int
neuron_proc_word_end(struct neuron_proc_words *w, size_t max)
{
	if (!w->open)
		return (0);
	if (w->n >= max)
		return (-1);
	neuron_proc_word_putc(w, '\0');
	w->v = xreallocarray(w->v, w->n + 2, sizeof *w->v);
	w->v[w->n++] = xstrdup(w->cur);
	w->v[w->n] = NULL;
	w->len = 0;
	w->open = 0;
	return (0);
}

int
neuron_proc_split(const char *s, size_t max, char ***argv, size_t *argc,
    char *err, size_t errlen)
{
	struct neuron_proc_words	 w;
	const char			*p;
	char				 q = 0;

	assert(s != NULL && argv != NULL && argc != NULL);
	memset(&w, 0, sizeof w);
	w.v = xcalloc(1, sizeof *w.v);
	for (p = s; *p != '\0'; p++) {
		if (q == '\'') {
			if (*p == '\'')
				q = 0;
			else
				neuron_proc_word_putc(&w, *p);
			continue;
		}
		if (q == '"') {
			if (*p == '"')
				q = 0;
			else if (*p == '\\' && p[1] != '\0' &&
			    strchr("\"\\$`", p[1]) != NULL)
				neuron_proc_word_putc(&w, *++p);
			else
				neuron_proc_word_putc(&w, *p);
			continue;
		}
		switch (*p) {
		case ' ':
		case '\t':
		case '\n':
			if (neuron_proc_word_end(&w, max) != 0)
				goto toomany;
			break;
		case '\'':
		case '"':
			q = *p;
			w.open = 1;	/* '' is an empty word */
			break;
		case '\\':
			if (p[1] == '\0') {
				snprintf(err, errlen, "a backslash ends the "
				    "options");
				goto fail;
			}
			neuron_proc_word_putc(&w, *++p);
			break;
		default:
			neuron_proc_word_putc(&w, *p);
			break;
		}
	}
	if (q != 0) {
		snprintf(err, errlen, "unterminated %c quote in the options",
		    q);
		goto fail;
	}
	if (neuron_proc_word_end(&w, max) != 0)
		goto toomany;
	free(w.cur);
	*argv = w.v;
	*argc = w.n;
	return (0);
toomany:
	snprintf(err, errlen, "more than %zu words in the options", max);
fail:
	free(w.cur);
	neuron_proc_argv_free(w.v);
	*argv = NULL;
	*argc = 0;
	return (-1);
}

void
neuron_proc_argv_free(char **argv)
{
	size_t	i;

	if (argv == NULL)
		return;
	for (i = 0; argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
}

/* ------------------------------------------------------------ rmtree */

static int
neuron_proc_rm_cb(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	if (flag == FTW_DP || flag == FTW_D)
		return (rmdir(path) == -1 && errno != ENOENT ? -1 : 0);
	return (unlink(path) == -1 && errno != ENOENT ? -1 : 0);
}

int
neuron_proc_rmtree(const char *path)
{
	struct stat	st;

	if (lstat(path, &st) == -1)
		return (errno == ENOENT ? 0 : -1);
	if (!S_ISDIR(st.st_mode))
		return (unlink(path));
	return (nftw(path, neuron_proc_rm_cb, 16, FTW_DEPTH | FTW_PHYS |
	    FTW_MOUNT));
}
