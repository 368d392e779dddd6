/* nkid_fastpath.c: the C client of nkid's fast path: FastPath over gRPC core, the rendezvous, and calls as frames. */
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>

#include "nkid.pb-c.h"
#include "client/libnkid/nkid_fastpath.h"

struct nkid_fastpath {
	int		 fd;
	uint32_t	 next_id;
	size_t		 max_frame;
	uint8_t		*buf;		/* max_frame bytes */
};

static const char *nkid_fastpath_errs[] = {
	"success", "cannot set up the fast path", "the connection to nkid "
	"broke", "the request does not fit in a frame", "no reply in time",
};

const char *
nkid_fastpath_strerror(int err)
{
	if (err > 0 || -err >= (int)(sizeof nkid_fastpath_errs /
	    sizeof nkid_fastpath_errs[0]))
		return ("unknown error");
	return (nkid_fastpath_errs[-err]);
}

/* FastPath over gRPC: the packed reply in *out (malloc'd), or -1. */
static int
nkid_fastpath_offer(const char *socket_path, Nkid__V1__FastPathReply **out,
    char *err, size_t errlen)
{
	grpc_channel_credentials	*creds;
	grpc_channel			*ch;
	grpc_completion_queue		*cq;
	grpc_call			*call;
	grpc_byte_buffer		*resp = NULL;
	grpc_byte_buffer_reader		 rd;
	grpc_metadata_array		 imd, tmd;
	grpc_status_code		 status = GRPC_STATUS_UNKNOWN;
	grpc_slice			 details = grpc_empty_slice(), method;
	grpc_slice			 all;
	grpc_op				 ops[6];
	char				 target[512];
	int				 rc = -1;

	*out = NULL;
	snprintf(target, sizeof target, "unix:%s", socket_path);
	creds = grpc_insecure_credentials_create();
	ch = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	cq = grpc_completion_queue_create_for_pluck(NULL);
	method = grpc_slice_from_static_string("/nkid.v1.Nkid/FastPath");
	grpc_metadata_array_init(&imd);
	grpc_metadata_array_init(&tmd);
	call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
	    method, NULL, gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
	    gpr_time_from_seconds(10, GPR_TIMESPAN)), NULL);
	memset(ops, 0, sizeof ops);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = grpc_raw_byte_buffer_create(
	    NULL, 0);
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &imd;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &resp;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &tmd;
	ops[5].data.recv_status_on_client.status = &status;
	ops[5].data.recv_status_on_client.status_details = &details;
	if (grpc_call_start_batch(call, ops, 6, (void *)1, NULL) ==
	    GRPC_CALL_OK)
		grpc_completion_queue_pluck(cq, (void *)1,
		    gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	grpc_byte_buffer_destroy(ops[1].data.send_message.send_message);
	if (status != GRPC_STATUS_OK || resp == NULL) {
		char	*d = grpc_slice_to_c_string(details);

		snprintf(err, errlen, "FastPath to nkid at '%s': %s", socket_path,
		    d[0] != '\0' ? d : "no reply");
		gpr_free(d);
	} else if (grpc_byte_buffer_reader_init(&rd, resp)) {
		all = grpc_byte_buffer_reader_readall(&rd);
		*out = nkid__v1__fast_path_reply__unpack(NULL,
		    GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
		grpc_slice_unref(all);
		grpc_byte_buffer_reader_destroy(&rd);
		if (*out == NULL)
			snprintf(err, errlen, "FastPath: a malformed reply");
		else
			rc = 0;
	}
	if (resp != NULL)
		grpc_byte_buffer_destroy(resp);
	grpc_slice_unref(details);
	grpc_metadata_array_destroy(&imd);
	grpc_metadata_array_destroy(&tmd);
	grpc_call_unref(call);
	grpc_channel_destroy(ch);
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_past(
	    GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
	return (rc);
}

int
nkid_fastpath_open(const char *socket_path, struct nkid_fastpath **out,
    char *err, size_t errlen)
{
	Nkid__V1__FastPathReply	*offer;
	struct nkid_fastpath	*fp;
	struct fastpath_reply	 hello;
	struct sockaddr_un	 sa;
	struct timeval		 tv = { 10, 0 };
	ssize_t			 n;
	int			 fd;

	*out = NULL;
	grpc_init();
	if (nkid_fastpath_offer(socket_path, &offer, err, errlen) != 0) {
		grpc_shutdown();
		return (NKID_FASTPATH_ESETUP);
	}
	grpc_shutdown();
	if (offer->version != FASTPATH_VERSION || offer->max_frame_bytes <
	    sizeof(struct fastpath_req) + 16 || strlen(offer->path) >=
	    sizeof sa.sun_path) {
		snprintf(err, errlen, "nkid offers a fast path this client "
		    "cannot use (frame version %u)", offer->version);
		nkid__v1__fast_path_reply__free_unpacked(offer, NULL);
		return (NKID_FASTPATH_ESETUP);
	}
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, offer->path, strlen(offer->path));
	errno = 0;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
	    sizeof tv) != 0 || connect(fd, (struct sockaddr *)&sa,
	    sizeof sa) != 0 || (n = recv(fd, &hello, sizeof hello, 0)) !=
	    (ssize_t)sizeof hello || hello.id != 0 || hello.status != 0) {
		snprintf(err, errlen, "cannot connect to nkid's fast path "
		    "'%s': %s", offer->path, errno != 0 ? strerror(errno) :
		    "no hello");
		if (fd >= 0)
			close(fd);
		nkid__v1__fast_path_reply__free_unpacked(offer, NULL);
		return (NKID_FASTPATH_ESETUP);
	}
	tv.tv_sec = 0;		/* calls wait as long as they say */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	fp = calloc(1, sizeof *fp);
	if (fp == NULL || (fp->buf = malloc(offer->max_frame_bytes)) == NULL) {
		free(fp);
		close(fd);
		snprintf(err, errlen, "out of memory");
		nkid__v1__fast_path_reply__free_unpacked(offer, NULL);
		return (NKID_FASTPATH_ESETUP);
	}
	fp->fd = fd;
	fp->max_frame = offer->max_frame_bytes;
	nkid__v1__fast_path_reply__free_unpacked(offer, NULL);
	*out = fp;
	return (0);
}

size_t
nkid_fastpath_max_request(const struct nkid_fastpath *fp)
{
	return (fp->max_frame - sizeof(struct fastpath_req));
}

static int
nkid_fastpath_lost(struct nkid_fastpath *fp)
{
	if (fp->fd >= 0)
		close(fp->fd);
	fp->fd = -1;
	return (NKID_FASTPATH_ELOST);
}

int
nkid_fastpath_call(struct nkid_fastpath *fp, unsigned method,
    const void *req, size_t len, unsigned timeout_ms,
    struct nkid_fastpath_reply *r)
{
	struct fastpath_req	 h;
	struct fastpath_reply	 rh;
	struct iovec		 iov[2];
	struct msghdr		 mh;
	struct pollfd		 pfd;
	ssize_t			 n;

	if (fp->fd < 0)
		return (NKID_FASTPATH_ELOST);
	if (len > nkid_fastpath_max_request(fp))
		return (NKID_FASTPATH_ESIZE);
	fp->next_id = fp->next_id % UINT32_MAX + 1;
	h.kind = FASTPATH_CALL;
	h.id = fp->next_id;
	h.method = method;
	h.timeout_ms = timeout_ms;
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof h;
	iov[1].iov_base = (void *)req;
	iov[1].iov_len = len;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	if (sendmsg(fp->fd, &mh, MSG_NOSIGNAL) < 0)
		return (nkid_fastpath_lost(fp));
	for (;;) {
		if (timeout_ms != 0) {
			pfd.fd = fp->fd;
			pfd.events = POLLIN;
			if (poll(&pfd, 1, (int)timeout_ms) == 0) {
				h.kind = FASTPATH_CANCEL;
				h.method = 0;
				(void)send(fp->fd, &h, sizeof h, MSG_NOSIGNAL);
				return (NKID_FASTPATH_ETIMEDOUT);
			}
		}
		n = recv(fp->fd, fp->buf, fp->max_frame, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof rh)
			return (nkid_fastpath_lost(fp));
		memcpy(&rh, fp->buf, sizeof rh);
		if ((size_t)n < sizeof rh + (size_t)rh.msg_len + rh.reply_len)
			return (nkid_fastpath_lost(fp));
		if (rh.id == h.id || (rh.id == 0 && rh.status != 0))
			break;
		/* A reply to a call given up on: skip it. */
	}
	r->status = rh.status;
	r->message = (const char *)fp->buf + sizeof rh;
	r->message_len = rh.msg_len;
	r->data = fp->buf + sizeof rh + rh.msg_len;
	r->len = rh.reply_len;
	return (0);
}

void
nkid_fastpath_close(struct nkid_fastpath *fp)
{
	if (fp == NULL)
		return;
	if (fp->fd >= 0)
		close(fp->fd);
	free(fp->buf);
	free(fp);
}
