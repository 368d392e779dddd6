/*
 * echo_server.c: the benchmark's baseline, a minimal gRPC-core unary echo
 * server on a Unix socket, handling each call on its completion-queue
 * thread. Not part of nkid.
 *
 *	echo_server /path/to/socket
 */
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t echo_stop;

static void
echo_sig_cb(int sig)
{
	echo_stop = 1;
}

int
main(int argc, char **argv)
{
	grpc_completion_queue *cq;
	grpc_server *srv;
	char addr[512];

	if (argc != 2) {
		fprintf(stderr, "usage: echo_server SOCKET\n");
		return 2;
	}
	signal(SIGTERM, echo_sig_cb);
	signal(SIGINT, echo_sig_cb);
	grpc_init();
	cq = grpc_completion_queue_create_for_next(NULL);
	srv = grpc_server_create(NULL, NULL);
	grpc_server_register_completion_queue(srv, cq, NULL);
	snprintf(addr, sizeof(addr), "unix:%s", argv[1]);
	grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
	if (!grpc_server_add_http2_port(srv, addr, creds)) {
		fprintf(stderr, "echo_server: cannot bind '%s'\n", argv[1]);
		return 1;
	}
	grpc_server_credentials_release(creds);
	grpc_server_start(srv);

	while (!echo_stop) {
		grpc_call *call = NULL;
		grpc_call_details details;
		grpc_metadata_array md;
		grpc_byte_buffer *req = NULL;
		grpc_event ev;
		grpc_op ops[4];
		int cancelled = 0;

		grpc_call_details_init(&details);
		grpc_metadata_array_init(&md);
		grpc_server_request_call(srv, &call, &details, &md, cq, cq, (void *)1);
		do {
			ev = grpc_completion_queue_next(cq,
			    gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
			    gpr_time_from_millis(200, GPR_TIMESPAN)), NULL);
		} while (ev.type == GRPC_QUEUE_TIMEOUT && !echo_stop);
		if (echo_stop)
			break;
		if (ev.type != GRPC_OP_COMPLETE || !ev.success)
			continue;

		memset(ops, 0, sizeof(ops));
		ops[0].op = GRPC_OP_RECV_MESSAGE;
		ops[0].data.recv_message.recv_message = &req;
		grpc_call_start_batch(call, ops, 1, (void *)2, NULL);
		grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		memset(ops, 0, sizeof(ops));
		ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
		ops[1].op = GRPC_OP_SEND_MESSAGE;
		ops[1].data.send_message.send_message = req;
		ops[2].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
		ops[2].data.send_status_from_server.status = GRPC_STATUS_OK;
		ops[3].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
		ops[3].data.recv_close_on_server.cancelled = &cancelled;
		grpc_call_start_batch(call, ops, req ? 4 : 3, (void *)3, NULL);
		grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (req)
			grpc_byte_buffer_destroy(req);
		grpc_call_unref(call);
		grpc_call_details_destroy(&details);
		grpc_metadata_array_destroy(&md);
	}
	grpc_server_shutdown_and_notify(srv, cq, (void *)9);
	grpc_server_cancel_all_calls(srv);
	for (;;) {
		grpc_event ev = grpc_completion_queue_next(cq,
		    gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		if (ev.type == GRPC_OP_COMPLETE && ev.tag == (void *)9)
			break;
	}
	grpc_server_destroy(srv);
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME),
	    NULL).type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
	grpc_shutdown();
	return 0;
}
