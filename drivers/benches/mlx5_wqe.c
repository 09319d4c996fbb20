/*
 * The C side of the mlx5 data-path microbenchmark (drivers/benches/mlx5_wqe.rs, which compiles this
 * file with `cc -O2` and runs it as a subprocess).
 *
 * The same work as the Rust side, written the way rdma-core's mlx5 provider does it, with
 * <infiniband/mlx5dv.h>'s structs and helpers (headers only; nothing is linked):
 *
 *  - post: one `struct ibv_send_wr` into the SQ ring as _mlx5_post_send does for one request (opcode,
 *    overflow, SGE-count and inline-size checks; fence cache; mlx5dv_set_ctrl_seg,
 *    mlx5dv_set_data_seg, the raddr/atomic segments stored by hand as set_raddr_seg and
 *    set_atomic_seg do (the header has no helper for them), the datagram segment as
 *    _set_datagram_seg does (the address handle's prebuilt vector copied, then dqp_dct and the
 *    Q_Key), inline data as set_data_inl_seg does; the wrid/wqe_head bookkeeping);
 *  - doorbell: post_send_db: udma_to_device_barrier, the doorbell record (htobe32), mmio_wc_start,
 *    the BlueFlame copy of mlx5_bf_copy (64-byte chunks of eight relaxed 64-bit stores, the source
 *    wrapping at the ring end) to a 512-byte buffer standing in for the register, mmio_flush_writes,
 *    the half toggle;
 *  - poll: mlx5_poll_cq / mlx5_poll_one for requester CQEs (get_sw_cqe owner check,
 *    udma_from_device_barrier, mlx5dv_get_cqe_opcode, the user-index lookup with the cached
 *    resource, handle_good_req, wrid and tail), update_cons_index after each call.
 *
 * Two things differ from rdma-core, as in drivers/tests/golden/mlx5_golden.c, so that both sides
 * write the same bytes (the bench compares checksums): the padding after inline data and the
 * compare field of a fetch-and-add are zeroed (rdma-core leaves them). Locks (the SQ/CQ spinlocks,
 * a shared BlueFlame register's lock) are left out on both sides.
 *
 * Usage:
 *   mlx5_wqe_c time N REPS    every kind: REPS timed runs of N operations each (after a warm-up);
 *                             one line per kind: `KIND ns/op ns/op ...`
 *   mlx5_wqe_c count KIND N   exactly N operations of KIND (for callgrind), then `checksum HEX`
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

/* Must match drivers/benches/mlx5_wqe.rs. */
#define RING_BBS 256
#define BATCH 64
#define POLL_PASS 256
#define POLL_BATCH 16
#define BF_REG_SIZE 512
#define QPN 0x123456u
#define UIDX 7u
#define INLINE_LEN 32

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define NOINLINE __attribute__((noinline, noipa))

/* util/udma_barrier.h */
#if defined(__x86_64__)
#define udma_to_device_barrier() asm volatile("" ::: "memory")
#define udma_from_device_barrier() asm volatile("lfence" ::: "memory")
#define mmio_flush_writes() asm volatile("sfence" ::: "memory")
#elif defined(__aarch64__)
#define udma_to_device_barrier() asm volatile("dmb oshst" ::: "memory")
#define udma_from_device_barrier() asm volatile("dmb oshld" ::: "memory")
#define mmio_flush_writes() asm volatile("dsb st" ::: "memory")
#else
#define udma_to_device_barrier() __sync_synchronize()
#define udma_from_device_barrier() __sync_synchronize()
#define mmio_flush_writes() __sync_synchronize()
#endif
#define mmio_wc_start() mmio_flush_writes()

/* providers/mlx5/mlx5.h (not in mlx5dv.h) */
enum { MLX5_CQ_SET_CI = 0 };

/* util/mmio.h: mmio_write64_be and the generic mmio_memcpy_x64 (x86-64) */
static inline void mmio_write64_be(void *addr, __be64 value)
{
	atomic_store_explicit((_Atomic(uint64_t) *)addr, (uint64_t)value, memory_order_relaxed);
}

static inline void mmio_memcpy_x64(void *dest, const void *src, size_t bytecnt)
{
	uint64_t *dst_p = dest;
	const __be64 *src_p = src;

	do {
		mmio_write64_be(dst_p++, *src_p++);
		mmio_write64_be(dst_p++, *src_p++);
		mmio_write64_be(dst_p++, *src_p++);
		mmio_write64_be(dst_p++, *src_p++);
		mmio_write64_be(dst_p++, *src_p++);
		mmio_write64_be(dst_p++, *src_p++);
		mmio_write64_be(dst_p++, *src_p++);
		mmio_write64_be(dst_p++, *src_p++);
		bytecnt -= 8 * sizeof(*dst_p);
	} while (bytecnt > 0);
}

static const uint32_t mlx5_ib_opcode[] = {
	[IBV_WR_SEND] = MLX5_OPCODE_SEND,
	[IBV_WR_SEND_WITH_INV] = MLX5_OPCODE_SEND_INVAL,
	[IBV_WR_SEND_WITH_IMM] = MLX5_OPCODE_SEND_IMM,
	[IBV_WR_RDMA_WRITE] = MLX5_OPCODE_RDMA_WRITE,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = MLX5_OPCODE_RDMA_WRITE_IMM,
	[IBV_WR_RDMA_READ] = MLX5_OPCODE_RDMA_READ,
	[IBV_WR_ATOMIC_CMP_AND_SWP] = MLX5_OPCODE_ATOMIC_CS,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = MLX5_OPCODE_ATOMIC_FA,
};

/* struct mlx5_ah: the verbs address handle and its prebuilt address vector. */
struct bench_ah {
	struct ibv_ah ibv_ah;
	struct mlx5_wqe_av av;
};

#define to_mah(ah) ((struct bench_ah *)((uint8_t *)(ah) - offsetof(struct bench_ah, ibv_ah)))

/* The parts of struct mlx5_qp, mlx5_wq, mlx5_bf and mlx5_cq the data path touches. */
struct bench_bf {
	uint8_t *reg;
	unsigned offset;
	unsigned buf_size;
	unsigned uuarn;
};

struct bench_qp {
	uint8_t *sq_start;
	uint8_t *qend;
	unsigned wqe_cnt;
	unsigned max_post;
	unsigned head;
	unsigned tail;
	unsigned cur_post;
	int max_gs;
	uint64_t *wrid;
	unsigned *wqe_head;
	uint32_t qp_num;
	uint32_t uidx;
	enum ibv_qp_type qp_type;
	uint8_t sq_signal_bits;
	uint8_t fm_cache;
	int wq_sig;
	int atomics_enabled;
	unsigned max_inline_data;
	int prefer_bf;
	int shut_up_bf;
	__be32 *db;
	struct bench_bf bf;
};

struct bench_cq {
	uint8_t *buf;
	unsigned cons_index;
	unsigned ibv_cqe; /* entries - 1 */
	int cqe_sz;
	__be32 *dbrec;
};

static inline void *mlx5_get_send_wqe(struct bench_qp *qp, unsigned n)
{
	return qp->sq_start + ((size_t)n << MLX5_SEND_WQE_SHIFT);
}

static inline int mlx5_wq_overflow(struct bench_qp *qp, int nreq)
{
	unsigned cur = qp->head - qp->tail;

	return cur + nreq >= qp->max_post;
}

static inline __be32 send_ieth(const struct ibv_send_wr *wr)
{
	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return wr->imm_data;
	case IBV_WR_SEND_WITH_INV:
		return htobe32(wr->invalidate_rkey);
	default:
		return 0;
	}
}

static inline void set_raddr_seg(void *seg, uint64_t remote_addr, uint32_t rkey)
{
	struct mlx5_wqe_raddr_seg *rseg = seg;

	rseg->raddr = htobe64(remote_addr);
	rseg->rkey = htobe32(rkey);
	rseg->reserved = 0;
}

static inline void set_atomic_seg(void *seg, enum ibv_wr_opcode opcode, uint64_t swap,
				  uint64_t compare_add)
{
	struct mlx5_wqe_atomic_seg *aseg = seg;

	if (opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		aseg->swap_add = htobe64(swap);
		aseg->compare = htobe64(compare_add);
	} else {
		aseg->swap_add = htobe64(compare_add);
		aseg->compare = 0; /* rdma-core leaves it; uverbs zeroes it */
	}
}

static inline void _set_datagram_seg(struct mlx5_wqe_datagram_seg *dseg, const struct mlx5_wqe_av *av,
				     uint32_t remote_qpn, uint32_t remote_qkey)
{
	memcpy(&dseg->av, av, sizeof(dseg->av));
	dseg->av.dqp_dct = htobe32(remote_qpn | MLX5_EXTENDED_UD_AV);
	dseg->av.key.qkey.qkey = htobe32(remote_qkey);
}

/* set_data_inl_seg, plus the zero padding uverbs writes. */
static inline int set_data_inl_seg(struct bench_qp *qp, const struct ibv_send_wr *wr, void *wqe,
				   int *sz)
{
	struct mlx5_wqe_inl_data_seg *seg = wqe;
	uint8_t *p = (uint8_t *)wqe + sizeof(*seg);
	unsigned inl = 0, pad;
	int i;

	for (i = 0; i < wr->num_sge; ++i) {
		const uint8_t *addr = (const uint8_t *)(uintptr_t)wr->sg_list[i].addr;
		unsigned len = wr->sg_list[i].length;

		inl += len;
		if (unlikely(inl > qp->max_inline_data))
			return ENOMEM;
		if (unlikely(p + len > qp->qend)) {
			unsigned copy = (unsigned)(qp->qend - p);

			memcpy(p, addr, copy);
			addr += copy;
			len -= copy;
			p = mlx5_get_send_wqe(qp, 0);
		}
		memcpy(p, addr, len);
		p += len;
	}
	if (likely(inl)) {
		seg->byte_count = htobe32(inl | MLX5_INLINE_SEG);
		*sz = (int)((inl + sizeof(seg->byte_count) + 15) / 16);
		pad = (unsigned)(*sz * 16 - sizeof(seg->byte_count) - inl);
		if (p + pad > qp->qend) {
			unsigned copy = (unsigned)(qp->qend - p);

			memset(p, 0, copy);
			pad -= copy;
			p = mlx5_get_send_wqe(qp, 0);
		}
		memset(p, 0, pad);
	} else {
		*sz = 0;
	}
	return 0;
}

struct posted {
	void *ctrl;
	int size;
	int inl;
	unsigned idx;
};

/* _mlx5_post_send for one request. */
static inline int post_one(struct bench_qp *qp, const struct ibv_send_wr *wr, struct posted *out)
{
	uint8_t *seg, *ctrl;
	int size = 0, sz, i, inl = 0, atom_arg = 0;
	unsigned idx;
	uint8_t fence, next_fence = 0, fm_ce_se;
	__be32 imm;

	if (unlikely((unsigned)wr->opcode >= sizeof(mlx5_ib_opcode) / sizeof(mlx5_ib_opcode[0])))
		return EINVAL;
	if (unlikely(mlx5_wq_overflow(qp, 0 + 1)))
		return ENOMEM;
	if (unlikely(wr->num_sge > qp->max_gs))
		return ENOMEM;

	if (wr->send_flags & IBV_SEND_FENCE)
		fence = MLX5_WQE_CTRL_FENCE;
	else
		fence = qp->fm_cache;

	idx = qp->cur_post & (qp->wqe_cnt - 1);
	ctrl = seg = mlx5_get_send_wqe(qp, idx);
	*(uint32_t *)(void *)(seg + 8) = 0;
	imm = send_ieth(wr);
	fm_ce_se = qp->sq_signal_bits | fence |
		   (wr->send_flags & IBV_SEND_SIGNALED ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
		   (wr->send_flags & IBV_SEND_SOLICITED ? MLX5_WQE_CTRL_SOLICITED : 0);
	seg += sizeof(struct mlx5_wqe_ctrl_seg);
	size = sizeof(struct mlx5_wqe_ctrl_seg) / 16;

	switch (qp->qp_type) {
	case IBV_QPT_RC:
		switch (wr->opcode) {
		case IBV_WR_RDMA_READ:
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			set_raddr_seg(seg, wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
			seg += sizeof(struct mlx5_wqe_raddr_seg);
			size += sizeof(struct mlx5_wqe_raddr_seg) / 16;
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			if (unlikely(!qp->atomics_enabled))
				return EINVAL;
			set_raddr_seg(seg, wr->wr.atomic.remote_addr, wr->wr.atomic.rkey);
			seg += sizeof(struct mlx5_wqe_raddr_seg);
			set_atomic_seg(seg, wr->opcode, wr->wr.atomic.swap, wr->wr.atomic.compare_add);
			seg += sizeof(struct mlx5_wqe_atomic_seg);
			size += (sizeof(struct mlx5_wqe_raddr_seg) +
				 sizeof(struct mlx5_wqe_atomic_seg)) / 16;
			atom_arg = 8;
			break;
		default:
			break;
		}
		break;
	case IBV_QPT_UC:
		switch (wr->opcode) {
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			set_raddr_seg(seg, wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
			seg += sizeof(struct mlx5_wqe_raddr_seg);
			size += sizeof(struct mlx5_wqe_raddr_seg) / 16;
			break;
		default:
			break;
		}
		break;
	case IBV_QPT_UD:
		_set_datagram_seg((void *)seg, &to_mah(wr->wr.ud.ah)->av, wr->wr.ud.remote_qpn,
				  wr->wr.ud.remote_qkey);
		seg += sizeof(struct mlx5_wqe_datagram_seg);
		size += sizeof(struct mlx5_wqe_datagram_seg) / 16;
		if (unlikely(seg == qp->qend))
			seg = mlx5_get_send_wqe(qp, 0);
		break;
	default:
		break;
	}

	if ((wr->send_flags & IBV_SEND_INLINE) && wr->num_sge) {
		if (unlikely(set_data_inl_seg(qp, wr, seg, &sz)))
			return ENOMEM;
		inl = 1;
		size += sz;
	} else {
		struct mlx5_wqe_data_seg *dpseg = (void *)seg;

		for (i = 0; i < wr->num_sge; ++i) {
			if (unlikely((uint8_t *)dpseg == qp->qend))
				dpseg = mlx5_get_send_wqe(qp, 0);
			if (likely(wr->sg_list[i].length)) {
				if (unlikely(atom_arg))
					mlx5dv_set_data_seg(dpseg, 8, wr->sg_list[i].lkey,
							    (uintptr_t)wr->sg_list[i].addr);
				else
					mlx5dv_set_data_seg(dpseg, wr->sg_list[i].length,
							    wr->sg_list[i].lkey,
							    (uintptr_t)wr->sg_list[i].addr);
				++dpseg;
				size += sizeof(struct mlx5_wqe_data_seg) / 16;
			}
		}
	}

	mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg *)(void *)ctrl, qp->cur_post & 0xffff,
			    (uint8_t)mlx5_ib_opcode[wr->opcode], 0, qp->qp_num, fm_ce_se, (uint8_t)size,
			    0, imm);
	if (unlikely(qp->wq_sig))
		abort(); /* not used here */

	qp->wrid[idx] = wr->wr_id;
	qp->wqe_head[idx] = qp->head + 0;
	qp->cur_post += (unsigned)(size * 16 + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
	qp->fm_cache = next_fence;

	out->ctrl = ctrl;
	out->size = size;
	out->inl = inl;
	out->idx = idx;
	return 0;
}

/* mlx5_bf_copy */
static inline void mlx5_bf_copy(uint64_t *dst, const uint64_t *src, unsigned bytecnt,
				struct bench_qp *qp)
{
	do {
		mmio_memcpy_x64(dst, src, 64);
		bytecnt -= 64;
		dst += 8;
		src += 8;
		if (unlikely(src == (const uint64_t *)(const void *)qp->qend))
			src = (const uint64_t *)(const void *)qp->sq_start;
	} while (bytecnt > 0);
}

/* post_send_db, for a BlueFlame register of its own (no lock). */
static inline void post_send_db(struct bench_qp *qp, int nreq, int inl, int size, void *ctrl)
{
	struct bench_bf *bf = &qp->bf;

	if (unlikely(!nreq))
		return;
	qp->head += nreq;
	udma_to_device_barrier();
	qp->db[MLX5_SND_DBR] = htobe32(qp->cur_post & 0xffff);
	mmio_wc_start();
	if (!qp->shut_up_bf && nreq == 1 && bf->uuarn && (inl || qp->prefer_bf) && size > 1 &&
	    size <= (int)(bf->buf_size / 16))
		mlx5_bf_copy((uint64_t *)(void *)(bf->reg + bf->offset), ctrl,
			     (unsigned)(size * 16 + 63) & ~63u, qp);
	else
		mmio_write64_be(bf->reg + bf->offset, *(__be64 *)ctrl);
	mmio_flush_writes();
	bf->offset ^= bf->buf_size;
}

/* handle_good_req */
static inline void handle_good_req(struct ibv_wc *wc, struct mlx5_cqe64 *cqe)
{
	switch (be32toh(cqe->sop_drop_qpn) >> 24) {
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		wc->wc_flags |= IBV_WC_WITH_IMM;
		/* fall through */
	case MLX5_OPCODE_RDMA_WRITE:
		wc->opcode = IBV_WC_RDMA_WRITE;
		break;
	case MLX5_OPCODE_SEND_IMM:
		wc->wc_flags |= IBV_WC_WITH_IMM;
		/* fall through */
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_INVAL:
		wc->opcode = IBV_WC_SEND;
		break;
	case MLX5_OPCODE_RDMA_READ:
		wc->opcode = IBV_WC_RDMA_READ;
		wc->byte_len = be32toh(cqe->byte_cnt);
		break;
	case MLX5_OPCODE_ATOMIC_CS:
		wc->opcode = IBV_WC_COMP_SWAP;
		wc->byte_len = 8;
		break;
	case MLX5_OPCODE_ATOMIC_FA:
		wc->opcode = IBV_WC_FETCH_ADD;
		wc->byte_len = 8;
		break;
	case MLX5_OPCODE_TSO:
		wc->opcode = IBV_WC_TSO;
		break;
	}
}

enum { CQ_OK = 0, CQ_EMPTY = -1, CQ_POLL_ERR = -2 };

/* mlx5_poll_one for CQE version 1, requester completions (others: an error here). */
static inline int poll_one(struct bench_cq *cq, struct bench_qp **cur_rsc, struct bench_qp *qp,
			   struct ibv_wc *wc)
{
	void *cqe = cq->buf + (size_t)(cq->cons_index & cq->ibv_cqe) * cq->cqe_sz;
	struct mlx5_cqe64 *cqe64 = (cq->cqe_sz == 64) ? cqe : (void *)((uint8_t *)cqe + 64);
	unsigned wqe_ctr, idx;
	uint32_t uidx;
	uint8_t opcode;

	/* get_sw_cqe */
	if (!(likely(mlx5dv_get_cqe_opcode(cqe64) != MLX5_CQE_INVALID) &&
	      !((cqe64->op_own & MLX5_CQE_OWNER_MASK) ^ !!(cq->cons_index & (cq->ibv_cqe + 1)))))
		return CQ_EMPTY;
	++cq->cons_index;
	/* Make sure we read CQ entry contents after we've checked the ownership bit. */
	udma_from_device_barrier();

	/* mlx5_parse_cqe */
	opcode = mlx5dv_get_cqe_opcode(cqe64);
	wc->wc_flags = 0;
	wc->qp_num = be32toh(cqe64->sop_drop_qpn) & 0xffffff;
	switch (opcode) {
	case MLX5_CQE_REQ:
		/* get_req_context: the resource by user index (mlx5_find_uidx), cached per poll */
		uidx = be32toh(cqe64->srqn_uidx) & 0xffffff;
		if (!*cur_rsc || uidx != (*cur_rsc)->uidx) {
			if (unlikely(uidx != qp->uidx))
				return CQ_POLL_ERR;
			*cur_rsc = qp;
		}
		qp = *cur_rsc;
		wqe_ctr = be16toh(cqe64->wqe_counter);
		idx = wqe_ctr & (qp->wqe_cnt - 1);
		handle_good_req(wc, cqe64);
		wc->wr_id = qp->wrid[idx];
		qp->tail = qp->wqe_head[idx] + 1;
		wc->status = IBV_WC_SUCCESS;
		break;
	default:
		return CQ_POLL_ERR;
	}
	return CQ_OK;
}

/* update_cons_index */
static inline void update_cons_index(struct bench_cq *cq)
{
	cq->dbrec[MLX5_CQ_SET_CI] = htobe32(cq->cons_index & 0xffffff);
}

/* mlx5_poll_cq */
static inline int poll_cq(struct bench_cq *cq, struct bench_qp *qp, int ne, struct ibv_wc *wc)
{
	struct bench_qp *rsc = NULL;
	int npolled, err = CQ_OK;

	for (npolled = 0; npolled < ne; ++npolled) {
		err = poll_one(cq, &rsc, qp, wc + npolled);
		if (err != CQ_OK)
			break;
	}
	update_cons_index(cq);
	if (err == CQ_POLL_ERR)
		return -1;
	return npolled;
}

/*
 * The benchmark.
 */
enum kind { SEND, SEND_INLINE32, RDMA_WRITE, RDMA_READ, ATOMIC_CAS, UD_SEND, POLL_CQE, NKINDS };

static const char *const kind_names[NKINDS] = {
	"send", "send_inline32", "rdma_write", "rdma_read", "atomic_cas", "ud_send", "poll_cqe",
};

static void *alloc_aligned(size_t size)
{
	void *p;

	if (posix_memalign(&p, 4096, size))
		abort();
	memset(p, 0, size);
	return p;
}

struct bench {
	struct bench_qp qp;
	struct bench_cq cq;
	__be32 sq_db[2];
	__be32 cq_db[2];
	struct ibv_sge sge;
	uint8_t inline_data[INLINE_LEN];
	struct bench_ah ah;
	struct ibv_send_wr wr;
	struct ibv_wc wc[POLL_BATCH];
	uint64_t next_wr_id;
};

static void bench_init(struct bench *b, enum kind k)
{
	struct bench_qp *qp = &b->qp;
	int i;

	memset(b, 0, sizeof(*b));
	qp->sq_start = alloc_aligned(RING_BBS * MLX5_SEND_WQE_BB);
	qp->qend = qp->sq_start + RING_BBS * MLX5_SEND_WQE_BB;
	qp->wqe_cnt = RING_BBS;
	/* rdma-core's max_post is the SQ's WR capacity; one more than the outstanding limit */
	qp->max_post = RING_BBS + 1;
	qp->max_gs = 4;
	qp->wrid = calloc(RING_BBS, sizeof(*qp->wrid));
	qp->wqe_head = calloc(RING_BBS, sizeof(*qp->wqe_head));
	qp->qp_num = QPN;
	qp->uidx = UIDX;
	qp->qp_type = k == UD_SEND ? IBV_QPT_UD : IBV_QPT_RC;
	qp->atomics_enabled = 1;
	qp->max_inline_data = 64;
	qp->prefer_bf = 1;
	qp->db = b->sq_db;
	qp->bf.reg = alloc_aligned(BF_REG_SIZE);
	qp->bf.buf_size = BF_REG_SIZE / 2;
	qp->bf.uuarn = 1;

	b->cq.buf = alloc_aligned(POLL_PASS * 64);
	for (i = 0; i < POLL_PASS; i++)
		b->cq.buf[i * 64 + 63] = MLX5_CQE_INVALID << 4;
	b->cq.ibv_cqe = POLL_PASS - 1;
	b->cq.cqe_sz = 64;
	b->cq.dbrec = b->cq_db;

	/* The request: the same values as the Rust side's. */
	b->sge.addr = 0x10000000;
	b->sge.length = 256;
	b->sge.lkey = 0x1234;
	for (i = 0; i < INLINE_LEN; i++)
		b->inline_data[i] = (uint8_t)(i * 7 + 1);
	b->ah.av.stat_rate_sl = 0x30;
	b->ah.av.rlid = htobe16(0x21);
	for (i = 0; i < 6; i++)
		b->ah.av.rmac[i] = (uint8_t)(2 + i);
	b->ah.av.tclass = 0x10;
	b->ah.av.hop_limit = 64;
	b->ah.av.grh_gid_fl = htobe32((3u << 20) | 0x12345);
	for (i = 0; i < 16; i++)
		b->ah.av.rgid[i] = (uint8_t)(0xfe + i * 13);

	b->wr.wr_id = 1;
	b->wr.sg_list = &b->sge;
	b->wr.num_sge = 1;
	b->wr.send_flags = IBV_SEND_SIGNALED;
	switch (k) {
	case SEND:
	case POLL_CQE:
		b->wr.opcode = IBV_WR_SEND;
		break;
	case SEND_INLINE32:
		b->wr.opcode = IBV_WR_SEND;
		b->wr.send_flags |= IBV_SEND_INLINE;
		b->sge.addr = (uintptr_t)b->inline_data;
		b->sge.length = INLINE_LEN;
		b->sge.lkey = 0;
		break;
	case RDMA_WRITE:
	case RDMA_READ:
		b->wr.opcode = k == RDMA_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		b->wr.wr.rdma.remote_addr = 0x7f0000001000;
		b->wr.wr.rdma.rkey = 0x5678;
		break;
	case ATOMIC_CAS:
		b->wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		b->sge.length = 8;
		b->wr.wr.atomic.remote_addr = 0x7f0000002000;
		b->wr.wr.atomic.rkey = 0x5678;
		b->wr.wr.atomic.compare_add = 0x1111;
		b->wr.wr.atomic.swap = 0x2222;
		break;
	case UD_SEND:
		b->wr.opcode = IBV_WR_SEND;
		b->wr.wr.ud.ah = &b->ah.ibv_ah;
		b->wr.wr.ud.remote_qpn = 0x42;
		b->wr.wr.ud.remote_qkey = 0x11112222;
		break;
	default:
		abort();
	}
}

static void bench_free(struct bench *b)
{
	free(b->qp.sq_start);
	free(b->qp.wrid);
	free(b->qp.wqe_head);
	free(b->qp.bf.reg);
	free(b->cq.buf);
}

/* BATCH posts, each with its doorbell, then the retirement a completion of the last one makes. */
NOINLINE static void wqe_batch(struct bench_qp *qp, const struct ibv_send_wr *wr)
{
	struct posted p = { 0 };
	int i;

	for (i = 0; i < BATCH; i++) {
		/* As the Rust side's black_box: the request is re-read every time. */
		asm volatile("" : : "r"(wr) : "memory");
		if (unlikely(post_one(qp, wr, &p)))
			abort();
		post_send_db(qp, 1, p.inl, p.size, p.ctrl);
	}
	qp->tail = qp->wqe_head[p.idx] + 1;
}

/* Plays the device for one pass: POLL_PASS sends posted (one doorbell), their CQEs written with
 * the owner bit of the pass. Not measured. */
static void prepare_poll(struct bench *b)
{
	struct bench_qp *qp = &b->qp;
	struct posted p = { 0 };
	unsigned ci = b->cq.cons_index, j;

	for (j = 0; j < POLL_PASS; j++) {
		struct mlx5_cqe64 *cqe;

		b->wr.wr_id = b->next_wr_id++;
		if (post_one(qp, &b->wr, &p))
			abort();
		qp->head++;
		cqe = (void *)(b->cq.buf + (size_t)((ci + j) & b->cq.ibv_cqe) * 64);
		memset(cqe, 0, sizeof(*cqe));
		cqe->sop_drop_qpn = htobe32((MLX5_OPCODE_SEND << 24) | QPN);
		cqe->srqn_uidx = htobe32(UIDX);
		cqe->wqe_counter = htobe16((uint16_t)(qp->cur_post - 1));
		cqe->byte_cnt = htobe32(256);
		cqe->op_own = (uint8_t)(MLX5_CQE_REQ << 4) | !!((ci + j) & POLL_PASS);
	}
	qp->head -= POLL_PASS;
	post_send_db(qp, POLL_PASS, 0, p.size, p.ctrl);
}

/* Polls one pass's POLL_PASS completions, POLL_BATCH at a time. */
NOINLINE static void poll_pass(struct bench_cq *cq, struct bench_qp *qp, struct ibv_wc *wc)
{
	int got = 0;

	while (got < POLL_PASS) {
		int n;

		asm volatile("" : : "r"(wc) : "memory");
		n = poll_cq(cq, qp, POLL_BATCH, wc);
		if (unlikely(n <= 0))
			abort();
		got += n;
	}
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Runs n operations (a multiple of BATCH, or of POLL_PASS for polls); returns the measured ns. */
static double run(struct bench *b, enum kind k, uint64_t n)
{
	double t = 0, t0;
	uint64_t i;

	if (k == POLL_CQE) {
		for (i = 0; i < n; i += POLL_PASS) {
			prepare_poll(b);
			t0 = now_ns();
			poll_pass(&b->cq, &b->qp, b->wc);
			t += now_ns() - t0;
		}
	} else {
		t0 = now_ns();
		for (i = 0; i < n; i += BATCH)
			wqe_batch(&b->qp, &b->wr);
		t = now_ns() - t0;
	}
	return t;
}

/* FNV-1a, 64 bits. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	uint8_t le[8];
	int i;

	for (i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	return fnv(h, le, 8);
}

/* What the run left: the ring, the register and the doorbell record; for polls the last
 * completions and the CQ's doorbell record. */
static uint64_t checksum(struct bench *b, enum kind k)
{
	uint64_t h = 0xcbf29ce484222325ull;
	int i;

	if (k == POLL_CQE) {
		for (i = 0; i < POLL_BATCH; i++) {
			h = fnv_u64(h, b->wc[i].wr_id);
			h = fnv_u64(h, b->wc[i].status);
			h = fnv_u64(h, b->wc[i].opcode);
			h = fnv_u64(h, b->wc[i].byte_len);
			h = fnv_u64(h, b->wc[i].qp_num);
		}
		return fnv(h, b->cq_db, sizeof(b->cq_db));
	}
	h = fnv(h, b->qp.sq_start, RING_BBS * MLX5_SEND_WQE_BB);
	h = fnv(h, b->qp.bf.reg, BF_REG_SIZE);
	return fnv(h, b->sq_db, sizeof(b->sq_db));
}

static enum kind parse_kind(const char *s)
{
	int k;

	for (k = 0; k < NKINDS; k++)
		if (!strcmp(s, kind_names[k]))
			return (enum kind)k;
	fprintf(stderr, "mlx5_wqe_c: unknown kind '%s'\n", s);
	exit(2);
}

static uint64_t round_up(uint64_t n, enum kind k)
{
	uint64_t unit = k == POLL_CQE ? POLL_PASS : BATCH;

	return (n + unit - 1) / unit * unit;
}

int main(int argc, char **argv)
{
	static struct bench b;

	if (argc == 4 && !strcmp(argv[1], "count")) {
		enum kind k = parse_kind(argv[2]);
		uint64_t n = round_up(strtoull(argv[3], NULL, 0), k);

		bench_init(&b, k);
		run(&b, k, n);
		printf("checksum %016" PRIx64 "\n", checksum(&b, k));
		bench_free(&b);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "time")) {
		uint64_t n0 = strtoull(argv[2], NULL, 0);
		int reps = atoi(argv[3]), k, r;

		for (k = 0; k < NKINDS; k++) {
			uint64_t n = round_up(n0, (enum kind)k);

			bench_init(&b, (enum kind)k);
			run(&b, (enum kind)k, round_up(n / 10, (enum kind)k)); /* warm-up */
			printf("%s", kind_names[k]);
			for (r = 0; r < reps; r++)
				printf(" %.3f", run(&b, (enum kind)k, n) / (double)n);
			printf("\n");
			bench_free(&b);
		}
		return 0;
	}
	fprintf(stderr, "usage: mlx5_wqe_c time N REPS | count KIND N\n");
	return 2;
}
