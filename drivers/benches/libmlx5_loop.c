/*
 * The real provider path on the mlx5 model: rdma-core's own libibverbs and libmlx5 posting with
 * ibv_post_send and polling with ibv_poll_cq, for the libmlx5 column of benches/mlx5-micro, and
 * through the newer interfaces (ibv_wr_* on a queue pair from ibv_create_qp_ex, ibv_start_poll on a
 * CQ from ibv_create_cq_ex) for its libmlx5_wr column.
 *
 * Run under the preload library (testing/mlx5-preload), which makes the model device mlx5_0:
 *
 *   LD_PRELOAD=.../libuverbs_mlx5_preload.so libmlx5_loop post|poll|wr KIND N
 *
 * One RC queue pair connected to itself over GID index 1 (a UD one for ud_send, sending to
 * itself through an address handle). "post" posts N requests of KIND one at a time through
 * post_one() (what callgrind counts: --toggle-collect=post_one), the last of every 64 signaled,
 * and takes completions until that one's (not counted) before the next 64, so the send queue never
 * fills. "poll" posts 16 signaled RDMA WRITEs at a time (requester completions, as
 * benches/mlx5-micro polls), waits until the device has written all 16 CQEs (reading their owner
 * bits through mlx5dv's description of the CQ buffer, not counted), then takes them with
 * poll_one(), one ibv_poll_cq each (counted: --toggle-collect=poll_one).
 * Prints a checksum of the completions' wr_ids and byte counts, so a run that lost or mixed up
 * completions is seen (benches/api_loop.rs computes the same for uverbs' API). The byte count is
 * taken only where ibv_poll_cq defines it for a send queue's completion (RDMA READ, atomics):
 * libmlx5 leaves it as it was for the others.
 *
 * "wr" does what "post" does through the ibv_wr_* interface: the queue pair is created with
 * ibv_create_qp_ex and the kind's send_ops_flags, and each request is one
 * ibv_wr_start .. (wr_id, wr_flags, the kind's ibv_wr_<op>, ibv_wr_set_sge / _set_inline_data /
 * _set_ud_addr) .. ibv_wr_complete in post_wr_one() (counted: --toggle-collect=post_wr_one).
 * "wr poll_cqe N" polls as "poll" does, with the CQ from ibv_create_cq_ex, each completion one
 * ibv_start_poll .. (wr_id, status, ibv_wc_read_opcode, ibv_wc_read_byte_len) .. ibv_end_poll in
 * poll_ex_one() (counted: --toggle-collect=poll_ex_one).
 *
 * KIND send_batch32 posts 64-byte SENDs 32 at a time, the last of each 32 signaled, and waits for
 * that one before the next 32: "post" as one ibv_post_send of a linked list of 32 (list built
 * outside the counted code, counted: post_list32), "wr" as one ibv_wr_start, 32 requests,
 * one ibv_wr_complete (counted: post_wr32). Per message is the count over N.
 *
 * This file is a test tool of uverbs, not part of any library.
 */
#include <infiniband/mlx5dv.h>
#include <sched.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64
#define POLL_BATCH 16
#define GID_INDEX 1
#define QKEY 0x11111111u

/* The checksum step: the wr_id, and the byte count where it is defined. */
static uint64_t add(uint64_t sum, const struct ibv_wc *wc)
{
	int len = wc->opcode == IBV_WC_RDMA_READ || wc->opcode == IBV_WC_COMP_SWAP ||
		  wc->opcode == IBV_WC_FETCH_ADD;
	return sum * 31 + wc->wr_id + (len ? wc->byte_len : 0);
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

struct env {
	struct ibv_context *ctx;
	struct ibv_comp_channel *chan;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_cq_ex *cqx; /* "wr" mode: the CQ from ibv_create_cq_ex (cq is its ibv_cq) */
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx; /* "wr" mode: the queue pair's ibv_wr_* interface */
	struct ibv_ah *ah;
	struct mlx5dv_cq dv;
	uint32_t ci;
	uint64_t *buf;
	int ud;
};

/* The kinds of benches/mlx5-micro. */
enum kind {
	SEND,
	SEND_INLINE32,
	RDMA_WRITE,
	RDMA_READ,
	ATOMIC_CAS,
	UD_SEND,
	POLL_CQE,
	SEND_BATCH32
};

/* Requests per post of send_batch32. */
#define CHAIN 32

static enum kind kind_of(const char *s)
{
	static const char *names[] = { "send",	   "send_inline32", "rdma_write",  "rdma_read",
				       "atomic_cas", "ud_send",	    "poll_cqe",	   "send_batch32" };
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i]))
			return (enum kind)i;
	fprintf(stderr, "unknown kind %s\n", s);
	exit(2);
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	if (ibv_modify_qp(qp, a, mask))
		die("ibv_modify_qp");
}

static void setup(struct env *e, int ud, int ex)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("no device (run under the preload library)");
	e->ctx = ibv_open_device(list[0]);
	if (!e->ctx)
		die("ibv_open_device");
	e->chan = ibv_create_comp_channel(e->ctx);
	e->pd = ibv_alloc_pd(e->ctx);
	e->buf = aligned_alloc(4096, 65536);
	memset(e->buf, 0, 65536);
	e->mr = ibv_reg_mr(e->pd, e->buf, 65536,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	if (ex) {
		struct ibv_cq_init_attr_ex ca = { .cqe = 1024, .channel = e->chan,
						  .wc_flags = IBV_WC_EX_WITH_BYTE_LEN };
		e->cqx = ibv_create_cq_ex(e->ctx, &ca);
		e->cq = e->cqx ? ibv_cq_ex_to_cq(e->cqx) : NULL;
	} else {
		e->cq = ibv_create_cq(e->ctx, 1024, NULL, e->chan, 0);
	}
	if (!e->chan || !e->pd || !e->mr || !e->cq)
		die("setup");
	struct mlx5dv_obj obj = { .cq = { .in = e->cq, .out = &e->dv } };
	if (mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ))
		die("mlx5dv_init_obj");
	e->ud = ud;
	struct ibv_qp_init_attr ia = {
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.cap = { .max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
		.qp_type = ud ? IBV_QPT_UD : IBV_QPT_RC,
	};
	if (ex) {
		struct ibv_qp_init_attr_ex iax = {
			.send_cq = ia.send_cq,
			.recv_cq = ia.recv_cq,
			.cap = ia.cap,
			.qp_type = ia.qp_type,
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = e->pd,
			.send_ops_flags = ud ? IBV_QP_EX_WITH_SEND
					     : IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
						       IBV_QP_EX_WITH_RDMA_READ |
						       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
		};
		e->qp = ibv_create_qp_ex(e->ctx, &iax);
		if (!e->qp)
			die("ibv_create_qp_ex");
		e->qpx = ibv_qp_to_qp_ex(e->qp);
		if (!e->qpx)
			die("ibv_qp_to_qp_ex");
	} else {
		e->qp = ibv_create_qp(e->pd, &ia);
		if (!e->qp)
			die("ibv_create_qp");
	}
	union ibv_gid gid;
	if (ibv_query_gid(e->ctx, 1, GID_INDEX, &gid))
		die("ibv_query_gid");
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	if (ud) {
		a.qkey = QKEY;
		modify(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		modify(e->qp, &a, IBV_QP_STATE);
		a.qp_state = IBV_QPS_RTS;
		modify(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
					  .grh = { .dgid = gid, .sgid_index = GID_INDEX, .hop_limit = 64 } };
		e->ah = ibv_create_ah(e->pd, &aa);
		if (!e->ah)
			die("ibv_create_ah");
	} else {
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		modify(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = e->qp->qp_num;
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = 12;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = GID_INDEX;
		a.ah_attr.grh.hop_limit = 64;
		modify(e->qp, &a,
		       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 16;
		modify(e->qp, &a,
		       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	}
	ibv_free_device_list(list);
}

/* Keeps receives posted for the sends, outside the counted code. */
static void post_recvs(struct env *e, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge s = { .addr = (uintptr_t)e->buf + 32768, .length = 4096,
				     .lkey = e->mr->lkey };
		struct ibv_recv_wr w = { .wr_id = 1u << 30, .sg_list = &s, .num_sge = 1 }, *bad;
		if (ibv_post_recv(e->qp, &w, &bad))
			die("ibv_post_recv");
	}
}

static void fill(struct env *e, enum kind k, uint64_t id, int signaled, struct ibv_send_wr *w,
		 struct ibv_sge *s)
{
	memset(w, 0, sizeof(*w));
	s->addr = (uintptr_t)e->buf;
	s->length = k == ATOMIC_CAS ? 8 : 64;
	s->lkey = e->mr->lkey;
	w->wr_id = id;
	w->sg_list = s;
	w->num_sge = 1;
	w->send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	switch (k) {
	case SEND:
	case POLL_CQE:
	case SEND_BATCH32:
		w->opcode = IBV_WR_SEND;
		break;
	case SEND_INLINE32:
		w->opcode = IBV_WR_SEND;
		w->send_flags |= IBV_SEND_INLINE;
		s->length = 32;
		break;
	case RDMA_WRITE:
	case RDMA_READ:
		w->opcode = k == RDMA_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		w->wr.rdma.remote_addr = (uintptr_t)e->buf + 16384;
		w->wr.rdma.rkey = e->mr->rkey;
		break;
	case ATOMIC_CAS:
		w->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		w->wr.atomic.remote_addr = (uintptr_t)e->buf + 16384;
		w->wr.atomic.rkey = e->mr->rkey;
		w->wr.atomic.compare_add = 0;
		w->wr.atomic.swap = 0;
		break;
	case UD_SEND:
		w->opcode = IBV_WR_SEND;
		w->wr.ud.ah = e->ah;
		w->wr.ud.remote_qpn = e->qp->qp_num;
		w->wr.ud.remote_qkey = QKEY;
		break;
	}
}

/* Counted by callgrind: one ibv_post_send through the provider. */
__attribute__((noinline)) int post_one(struct ibv_qp *qp, struct ibv_send_wr *w)
{
	struct ibv_send_wr *bad;
	return ibv_post_send(qp, w, &bad);
}

/* Counted by callgrind: one ibv_poll_cq through the provider. */
__attribute__((noinline)) int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, 1, wc);
}

/* What post_wr_one() reads of a request (set outside the counted code, as fill() is). */
struct req {
	enum kind kind;
	uint32_t lkey, rkey, qpn;
	uint64_t addr, raddr;
	struct ibv_ah *ah;
};

/* Counted by callgrind: one request through the ibv_wr_* interface, start to complete. */
__attribute__((noinline)) int post_wr_one(struct ibv_qp_ex *qpx, const struct req *r, uint64_t id,
					  int signaled)
{
	ibv_wr_start(qpx);
	qpx->wr_id = id;
	qpx->wr_flags = signaled ? IBV_SEND_SIGNALED : 0;
	switch (r->kind) {
	case SEND_INLINE32:
		ibv_wr_send(qpx);
		ibv_wr_set_inline_data(qpx, (void *)(uintptr_t)r->addr, 32);
		break;
	case RDMA_WRITE:
		ibv_wr_rdma_write(qpx, r->rkey, r->raddr);
		ibv_wr_set_sge(qpx, r->lkey, r->addr, 64);
		break;
	case RDMA_READ:
		ibv_wr_rdma_read(qpx, r->rkey, r->raddr);
		ibv_wr_set_sge(qpx, r->lkey, r->addr, 64);
		break;
	case ATOMIC_CAS:
		ibv_wr_atomic_cmp_swp(qpx, r->rkey, r->raddr, 0, 0);
		ibv_wr_set_sge(qpx, r->lkey, r->addr, 8);
		break;
	case UD_SEND:
		ibv_wr_send(qpx);
		ibv_wr_set_ud_addr(qpx, r->ah, r->qpn, QKEY);
		ibv_wr_set_sge(qpx, r->lkey, r->addr, 64);
		break;
	default: /* SEND */
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, r->lkey, r->addr, 64);
		break;
	}
	return ibv_wr_complete(qpx);
}

/* Counted by callgrind: one ibv_post_send of a linked list of CHAIN requests. */
__attribute__((noinline)) int post_list32(struct ibv_qp *qp, struct ibv_send_wr *w)
{
	struct ibv_send_wr *bad;
	return ibv_post_send(qp, w, &bad);
}

/* Counted by callgrind: CHAIN 64-byte SENDs (ids id..id+CHAIN-1, the last signaled) in one
 * ibv_wr_start .. ibv_wr_complete. */
__attribute__((noinline)) int post_wr32(struct ibv_qp_ex *qpx, const struct req *r, uint64_t id)
{
	ibv_wr_start(qpx);
	for (int j = 0; j < CHAIN; j++) {
		qpx->wr_id = id + j;
		qpx->wr_flags = j == CHAIN - 1 ? IBV_SEND_SIGNALED : 0;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, r->lkey, r->addr, 64);
	}
	return ibv_wr_complete(qpx);
}

/* Counted by callgrind: one completion through the cq_ex interface, ibv_start_poll to
 * ibv_end_poll, its fields read into wc (those the checksum uses); 1, or 0 if there was none. */
__attribute__((noinline)) int poll_ex_one(struct ibv_cq_ex *cq, struct ibv_wc *wc)
{
	struct ibv_poll_cq_attr attr = { 0 };
	if (ibv_start_poll(cq, &attr))
		return 0;
	wc->wr_id = cq->wr_id;
	wc->status = cq->status;
	wc->opcode = ibv_wc_read_opcode(cq);
	wc->byte_len = ibv_wc_read_byte_len(cq);
	ibv_end_poll(cq);
	return 1;
}

/* Whether the CQE at index ci + n - 1 has been written (not counted): the owner bit of the
 * entry the n-th next completion will be in, as mlx5dv describes the buffer. */
static int ready(struct env *e, uint32_t n)
{
	uint32_t idx = e->ci + n - 1;
	volatile struct mlx5_cqe64 *cqe =
		(void *)((char *)e->dv.buf + (idx & (e->dv.cqe_cnt - 1)) * e->dv.cqe_size +
			 e->dv.cqe_size - 64);
	uint8_t op_own = cqe->op_own;
	return (op_own >> 4) != MLX5_CQE_INVALID &&
	       !((op_own & MLX5_CQE_OWNER_MASK) ^ !!(idx & e->dv.cqe_cnt));
}

/* Takes completions until `want` of the wanted ones came (not counted). */
static void drain(struct env *e, uint64_t *sum, int want)
{
	struct ibv_wc wc[16];
	while (want > 0) {
		int n = ibv_poll_cq(e->cq, 16, wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 0)
			sched_yield(); /* let the device's thread run */
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "completion %llu: %s\n", (unsigned long long)wc[i].wr_id,
					ibv_wc_status_str(wc[i].status));
				exit(1);
			}
			e->ci++;
			if (wc[i].wr_id >> 30)
				continue; /* a receive */
			*sum = add(*sum, &wc[i]);
			want--;
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s post|poll|wr KIND N\n", argv[0]);
		return 2;
	}
	int wr_mode = !strcmp(argv[1], "wr");
	enum kind k = kind_of(argv[2]);
	int poll_mode = !strcmp(argv[1], "poll") || (wr_mode && k == POLL_CQE);
	if (!poll_mode && !wr_mode && strcmp(argv[1], "post")) {
		fprintf(stderr, "unknown mode %s\n", argv[1]);
		return 2;
	}
	long n = atol(argv[3]);
	struct env e = { 0 };
	setup(&e, k == UD_SEND, wr_mode);
	int sends = k == SEND || k == SEND_INLINE32 || k == UD_SEND || k == POLL_CQE ||
		    k == SEND_BATCH32;
	uint64_t sum = 0;
	struct ibv_send_wr w;
	struct ibv_sge s;
	struct req r = { .kind = k, .lkey = e.mr->lkey, .rkey = e.mr->rkey,
			 .qpn = e.qp->qp_num, .addr = (uintptr_t)e.buf,
			 .raddr = (uintptr_t)e.buf + 16384, .ah = e.ah };
	if (k == SEND_BATCH32) {
		struct ibv_send_wr chain[CHAIN];
		struct ibv_sge sges[CHAIN];
		for (long i = 0; i < n; i += CHAIN) {
			post_recvs(&e, CHAIN);
			if (wr_mode) {
				if (post_wr32(e.qpx, &r, i))
					die("ibv_wr_complete");
			} else {
				for (int j = 0; j < CHAIN; j++) {
					fill(&e, k, i + j, j == CHAIN - 1, &chain[j], &sges[j]);
					chain[j].next = j < CHAIN - 1 ? &chain[j + 1] : NULL;
				}
				if (post_list32(e.qp, chain))
					die("ibv_post_send");
			}
			drain(&e, &sum, 1);
		}
	} else if (!poll_mode) {
		for (long i = 0; i < n; i += BATCH) {
			int m = n - i < BATCH ? n - i : BATCH;
			if (sends)
				post_recvs(&e, m);
			for (int j = 0; j < m; j++) {
				if (wr_mode) {
					if (post_wr_one(e.qpx, &r, i + j, j == m - 1))
						die("ibv_wr_complete");
					continue;
				}
				fill(&e, k, i + j, j == m - 1, &w, &s);
				if (post_one(e.qp, &w))
					die("ibv_post_send");
			}
			drain(&e, &sum, 1);
			/* The receives' completions (on the same CQ) are taken by the next drain. */
		}
	} else {
		struct ibv_wc wc;
		for (long i = 0; i < n; i += POLL_BATCH) {
			int m = n - i < POLL_BATCH ? n - i : POLL_BATCH;
			for (int j = 0; j < m; j++) {
				fill(&e, RDMA_WRITE, i + j, 1, &w, &s);
				if (ibv_post_send(e.qp, &w, &(struct ibv_send_wr *){ 0 }))
					die("ibv_post_send");
			}
			/* Every completion of the batch written. */
			while (!ready(&e, m))
				sched_yield();
			for (int j = 0; j < m; j++) {
				int got = wr_mode ? poll_ex_one(e.cqx, &wc) : poll_one(e.cq, &wc);
				if (got != 1 || wc.status != IBV_WC_SUCCESS)
					die(wr_mode ? "poll_ex_one" : "poll_one");
				e.ci++;
				sum = add(sum, &wc);
			}
		}
	}
	printf("checksum %016llx\n", (unsigned long long)sum);
	return 0;
}
