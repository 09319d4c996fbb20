/* A C program on libibverbs (rdma-core): two RC queue pairs on the first RDMA device, a SEND of a
 * 64 KiB pattern from one to the other and an RDMA WRITE back, both checked byte for byte. Exit
 * status 0 when every byte arrived. Build on the host, run on soft-RoCE:
 *
 *     cc -O2 -o rc_loopback rc_loopback.c -libverbs
 *     uverbs vm -- ./rc_loopback
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEN (64 * 1024)
#define FAIL(...) do { fprintf(stderr, "rc_loopback: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	if (!qp)
		FAIL("ibv_create_qp: %m");
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE };
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		FAIL("ibv_modify_qp(INIT): %m");
	return qp;
}

/* RESET -> INIT happened in make_qp; INIT -> RTR -> RTS towards `remote`, over RoCE v2 (GID 1). */
static void connect_qp(struct ibv_qp *qp, uint32_t remote, union ibv_gid *gid)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = remote,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *gid, .sgid_index = 1, .hop_limit = 1 } },
	};
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		FAIL("ibv_modify_qp(RTR): %m");
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				     .rnr_retry = 7, .max_rd_atomic = 1 };
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		FAIL("ibv_modify_qp(RTS): %m");
}

static void wait_for(struct ibv_cq *cq, int count)
{
	time_t until = time(NULL) + 10;
	struct ibv_wc wc;
	while (count > 0) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			FAIL("ibv_poll_cq failed");
		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS)
				FAIL("work request %llu: %s", (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
			count--;
		} else if (time(NULL) > until) {
			FAIL("no completion within 10 s");
		}
	}
}

static void check(const unsigned char *got, const char *what)
{
	for (size_t i = 0; i < LEN; i++)
		if (got[i] != (unsigned char)(i * 7 + i / 251))
			FAIL("%s: byte %zu is %u", what, i, got[i]);
	printf("%s: %d bytes arrived intact\n", what, LEN);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		FAIL("no RDMA device");
	struct ibv_context *ctx = ibv_open_device(list[0]);
	if (!ctx)
		FAIL("ibv_open_device(%s): %m", ibv_get_device_name(list[0]));
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, 1, &gid))
		FAIL("ibv_query_gid: %m");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	unsigned char *src = malloc(LEN), *dst = calloc(1, LEN), *back = calloc(1, LEN);
	if (!pd || !cq || !src || !dst || !back)
		FAIL("setup: %m");
	for (size_t i = 0; i < LEN; i++)
		src[i] = (unsigned char)(i * 7 + i / 251);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *msrc = ibv_reg_mr(pd, src, LEN, access), *mdst = ibv_reg_mr(pd, dst, LEN, access),
		      *mback = ibv_reg_mr(pd, back, LEN, access);
	if (!msrc || !mdst || !mback)
		FAIL("ibv_reg_mr: %m");
	struct ibv_qp *a = make_qp(pd, cq), *b = make_qp(pd, cq);
	connect_qp(a, b->qp_num, &gid);
	connect_qp(b, a->qp_num, &gid);

	struct ibv_sge rsge = { (uintptr_t)dst, LEN, mdst->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 }, *bad_r;
	if (ibv_post_recv(b, &rwr, &bad_r))
		FAIL("ibv_post_recv: %m");
	struct ibv_sge ssge = { (uintptr_t)src, LEN, msrc->lkey };
	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &ssge, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *bad_s;
	if (ibv_post_send(a, &swr, &bad_s))
		FAIL("ibv_post_send(SEND): %m");
	wait_for(cq, 2);
	check(dst, "SEND");

	struct ibv_sge wsge = { (uintptr_t)dst, LEN, mdst->lkey };
	struct ibv_send_wr wwr = { .wr_id = 3, .sg_list = &wsge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED,
				   .wr.rdma = { .remote_addr = (uintptr_t)back, .rkey = mback->rkey } };
	if (ibv_post_send(b, &wwr, &bad_s))
		FAIL("ibv_post_send(RDMA_WRITE): %m");
	wait_for(cq, 1);
	check(back, "RDMA WRITE");

	ibv_destroy_qp(a); ibv_destroy_qp(b);
	ibv_dereg_mr(msrc); ibv_dereg_mr(mdst); ibv_dereg_mr(mback);
	ibv_destroy_cq(cq); ibv_dealloc_pd(pd); ibv_close_device(ctx); ibv_free_device_list(list);
	return 0;
}
