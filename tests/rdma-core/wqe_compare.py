#!/usr/bin/env python3
"""Compares what the mlx5 model received from libmlx5 and from uverbs for the same requests.

    wqe_compare.py REFERENCE_TRACE REFERENCE_META UVERBS_TRACE UVERBS_META

The traces are the model's doorbell traces (UVERBS_MODEL_TRACE, testing/mlx5-model/src/hca/trace.rs)
of tests/rdma-core/wqe_bytes.c (libmlx5, ibv_post_send or ibv_wr_*) and examples/wqe_bytes.rs
(uverbs) posting tests/rdma-core/wqe_requests.txt; the META files name each process's QPNs, buffer
and keys, so that numbers that legitimately differ between two processes (QPNs, addresses, keys) are
compared relative to their own queue pair and buffer. Every doorbell is compared: the doorbell
record, each WQE of the batch field by field (control segment, datagram/address vector, remote
address, atomic, data and inline segments), and the register write (BlueFlame copy or 8-byte
doorbell, and which buffer). A difference is either in EXPECTED below, with the reason it is
harmless on a ConnectX (the README's table "uverbs against libmlx5, byte for byte" is this list),
or the comparison fails. Prints a summary: WQEs compared per kind, and each expected difference
with how often it was seen.
"""

import json
import sys
from collections import Counter

# mlx5 opcodes (PRM), and which segments follow the control segment.
OPCODES = {
    0x08: "RDMA_WRITE", 0x09: "RDMA_WRITE_IMM", 0x0a: "SEND", 0x0b: "SEND_IMM",
    0x01: "SEND_INVAL", 0x10: "RDMA_READ", 0x11: "ATOMIC_CS", 0x12: "ATOMIC_FA",
}
RADDR = {"RDMA_WRITE", "RDMA_WRITE_IMM", "RDMA_READ", "ATOMIC_CS", "ATOMIC_FA"}
ATOMIC = {"ATOMIC_CS", "ATOMIC_FA"}
WITH_IMM = {"SEND_IMM", "RDMA_WRITE_IMM", "SEND_INVAL"}
INLINE_SEG = 0x8000_0000

# The differences that remain, each with why a ConnectX does not care. `match(field, wqe, ref,
# uverbs)` says whether a differing field is this one; `wqe` is the reference's decoded WQE ("op",
# "inline", ...), `ref` and `uverbs` the two values.
# The README's table (section "uverbs against libmlx5, byte for byte") lists these.
EXPECTED = [
    {
        "name": "imm of an opcode without immediate data (ibv_wr_* only)",
        "match": lambda f, w, a, b: f == "ctrl.imm" and w["op"] not in WITH_IMM and w["api"] == "wr",
        "reason": "libmlx5's ibv_wr_send/rdma_write/rdma_read/atomic_* never write the control "
                  "segment's immediate, so it holds what an earlier WQE left in the ring; uverbs "
                  "writes 0. The device reads the field only for SEND_IMM, RDMA_WRITE_IMM and "
                  "SEND_INVAL.",
    },
    {
        "name": "compare field of a fetch-and-add",
        "match": lambda f, w, a, b: f == "atomic.compare" and w["op"] == "ATOMIC_FA",
        "reason": "libmlx5 leaves it as the ring held it, uverbs writes 0; a fetch-and-add uses "
                  "only swap_add (the PRM's masked atomics are not used).",
    },
    {
        "name": "padding after inline data",
        "match": lambda f, w, a, b: f == "inline.padding",
        "reason": "libmlx5 copies the data and leaves the rest of the last 16-byte unit as the ring "
                  "held it, uverbs writes zeros; the device reads byte_count bytes.",
    },
    {
        "name": "UDP source port of a RoCE v2 address handle",
        "match": lambda f, w, a, b: (f == "av.rlid" and w["flow_label"] == 0
                                     and 0xc000 <= int(a, 16) <= 0xffff
                                     and 0xc000 <= int(b, 16) <= 0xffff),
        "reason": "with flow label 0 both draw it at random in 0xc000..=0xffff when the address "
                  "handle is created (libmlx5's mlx5_ah_set_udp_sport), so two address handles "
                  "differ as much; it only spreads flows over paths.",
    },
    {
        "name": "BlueFlame register of the queue pair",
        "match": lambda f, w, a, b: f == "uar.register",
        "reason": "libmlx5 allocates UAR pages itself (dynamic UARs) and gives each queue pair a "
                  "register of a page it shares; uverbs takes the registers the kernel assigns at "
                  "CREATE_QP (static bfregs). Either is a register of the UAR the queue pair was "
                  "created with, which is all the device checks; the halves alternate the same way.",
    },
]


def be(b, off, n):
    return int.from_bytes(b[off:off + n], "big")


class Norm:
    """Puts one process's numbers in terms of its own queue pairs and buffer."""

    def __init__(self, meta):
        self.m = meta

    def qpn(self, v):
        if v == self.m["rc_qpn"]:
            return "RC_QPN"
        if v == self.m["ud_qpn"]:
            return "UD_QPN"
        return hex(v)

    def addr(self, v):
        off = v - self.m["addr"]
        return f"BUF+{off}" if 0 <= off < self.m["len"] else hex(v)

    def lkey(self, v):
        return "LKEY" if v == self.m["lkey"] else hex(v)

    def rkey(self, v):
        return "RKEY" if v == self.m["rkey"] else hex(v)


def decode(b, qp, norm, api):
    """The WQE in `b` (its whole blocks) as a list of (field, value) and a summary."""
    fields = []
    put = lambda name, v: fields.append((name, v))
    op_word = be(b, 0, 4)
    opcode = op_word & 0xff
    op = OPCODES.get(opcode, hex(opcode))
    ds = b[7] & 0x3f
    put("ctrl.opmod", op_word >> 24)
    put("ctrl.wqe_index", (op_word >> 8) & 0xffff)
    put("ctrl.opcode", op)
    put("ctrl.qpn", norm.qpn(be(b, 4, 4) >> 8))
    put("ctrl.ds", b[7])
    put("ctrl.signature", b[8])
    put("ctrl.dci_stream_channel_id", be(b, 9, 2))
    put("ctrl.fm_ce_se", hex(b[11]))
    imm = be(b, 12, 4)
    put("ctrl.imm", hex(imm) if op != "SEND_INVAL" else f"inv {hex(imm)}")
    at = 16
    if qp == "ud":
        av = b[at:at + 48]
        put("av.qkey", hex(be(av, 0, 4)))
        put("av.key_reserved", hex(be(av, 4, 4)))
        dqp = be(av, 8, 4)
        put("av.ext", dqp >> 31)
        put("av.dqp", norm.qpn(dqp & 0xffffff))
        put("av.dqp_reserved", (dqp >> 24) & 0x7f)
        put("av.stat_rate_sl", hex(av[12]))
        put("av.fl_mlid", hex(av[13]))
        put("av.rlid", hex(be(av, 14, 2)))
        put("av.reserved0", av[16:20].hex())
        put("av.rmac", av[20:26].hex())
        put("av.tclass", av[26])
        put("av.hop_limit", av[27])
        put("av.grh_gid_fl", hex(be(av, 28, 4)))
        put("av.rgid", av[32:48].hex())
        at += 48
    if op in RADDR:
        put("raddr.raddr", norm.addr(be(b, at, 8)))
        put("raddr.rkey", norm.rkey(be(b, at + 8, 4)))
        put("raddr.reserved", hex(be(b, at + 12, 4)))
        at += 16
    if op in ATOMIC:
        put("atomic.swap_add", hex(be(b, at, 8)))
        put("atomic.compare", hex(be(b, at + 8, 8)))
        at += 16
    inline = False
    n = 0
    while at < ds * 16:
        count = be(b, at, 4)
        if count & INLINE_SEG:
            inline = True
            length = count & ~INLINE_SEG
            put("inline.byte_count", length)
            put("inline.data", b[at + 4:at + 4 + length].hex())
            end = at + 4 + length
            padded = (end + 15) // 16 * 16
            put("inline.padding", b[end:padded].hex())
            at = padded
        else:
            put(f"data[{n}].byte_count", count)
            put(f"data[{n}].lkey", norm.lkey(be(b, at + 4, 4)))
            put(f"data[{n}].addr", norm.addr(be(b, at + 8, 8)))
            at += 16
            n += 1
    if at != ds * 16:
        put("ds.segments_end", at)
    flow_label = be(b, 16 + 28, 4) & 0xfffff if qp == "ud" else None
    return fields, {"op": op, "inline": inline, "ds": ds, "api": api, "flow_label": flow_label,
                    "kind": f"{qp} {op}{' inline' if inline else ''}"}


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    ref, ref_meta, uv, uv_meta = (sys.argv[1], json.load(open(sys.argv[2])),
                                  sys.argv[3], json.load(open(sys.argv[4])))
    ref_recs, uv_recs = records(ref), records(uv)
    ref_norm, uv_norm = Norm(ref_meta), Norm(uv_meta)
    api = "wr" if "wr" in ref_meta["impl"] else "post"
    labels = [s["label"] for s in ref_meta["steps"]]
    if labels != [s["label"] for s in uv_meta["steps"]]:
        sys.exit("the two programs posted different request lists")
    problems = []
    seen = Counter()
    kinds = Counter()
    wrapped = 0
    uar = Counter()
    if len(ref_recs) != len(labels) or len(uv_recs) != len(labels):
        sys.exit(f"{len(labels)} requests, but {len(ref_recs)} and {len(uv_recs)} doorbells traced")

    def differ(label, field, a, b, w):
        for e in EXPECTED:
            if e["match"](field, w, a, b):
                seen[e["name"]] += 1
                return
        problems.append(f"{label}: {field}: {ref_meta['impl']} {a}, uverbs {b}")

    for step, r, u in zip(ref_meta["steps"], ref_recs, uv_recs):
        label, qp = step["label"], step["qp"]
        rn = ref_norm.qpn(r["qpn"])
        un = uv_norm.qpn(u["qpn"])
        if rn != f"{qp.upper()}_QPN" or un != rn:
            problems.append(f"{label}: the doorbell was on {rn} and {un}, not {qp}")
            continue
        for key in ("wqe_cnt", "dbrec"):
            if r[key] != u[key]:
                problems.append(f"{label}: {key}: {r[key]} against uverbs' {u[key]}")
        if len(r["wqes"]) != len(u["wqes"]):
            problems.append(f"{label}: {len(r['wqes'])} WQEs against uverbs' {len(u['wqes'])}")
            continue
        last = None
        for rw, uw in zip(r["wqes"], u["wqes"]):
            if rw["at"] != uw["at"]:
                problems.append(f"{label}: WQE at {rw['at']} against uverbs' {uw['at']}")
            rb, ub = bytes.fromhex(rw["bytes"]), bytes.fromhex(uw["bytes"])
            rf, info = decode(rb, qp, ref_norm, api)
            uf, _ = decode(ub, qp, uv_norm, api)
            if [f for f, _ in rf] != [f for f, _ in uf]:
                problems.append(f"{label}: segments {[f for f, _ in rf]} against uverbs' {[f for f, _ in uf]}")
                continue
            for (f, a), (_, b) in zip(rf, uf):
                if a != b:
                    differ(label, f, a, b, info)
            kinds[info["kind"]] += 1
            if rw["at"] % r["wqe_cnt"] + len(rb) // 64 > r["wqe_cnt"]:
                wrapped += 1
            last = (rb, ub, info)
        # The register write: the same kind, the same half, and the same bytes (normalised).
        if r["uar"] != u["uar"]:
            problems.append(f"{label}: register write {r['uar']} against uverbs' {u['uar']}")
        elif r["uar"] not in ("blueflame", "doorbell"):
            problems.append(f"{label}: register write {r['uar']} (both)")
        else:
            uar[r["uar"]] += 1
            if r["buffer"] % 2 != u["buffer"] % 2:
                problems.append(f"{label}: BlueFlame half {r['buffer'] % 2} against uverbs' {u['buffer'] % 2}")
            if r["buffer"] // 2 != u["buffer"] // 2:
                differ(label, "uar.register", r["buffer"] // 2, u["buffer"] // 2, last[2])
            rx, ux = bytes.fromhex(r["uar_bytes"]), bytes.fromhex(u["uar_bytes"])
            if len(rx) != len(ux):
                problems.append(f"{label}: a register write of {len(rx)} bytes against uverbs' {len(ux)}")
            # What was written is the last WQE's start (an 8-byte doorbell) or the whole WQE (a
            # BlueFlame copy, which the model found equal to the ring): each the process's own.
            if rx != last[0][:len(rx)] or ux != last[1][:len(ux)]:
                problems.append(f"{label}: the register write is not the last WQE's bytes")

    total = sum(kinds.values())
    print(f"{ref_meta['impl']} against uverbs: {len(labels)} doorbells, {total} WQEs compared "
          f"field by field ({wrapped} across the ring's end); register writes: "
          + ", ".join(f"{n} {k}" for k, n in sorted(uar.items())))
    print("  per kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    for e in EXPECTED:
        if seen[e["name"]]:
            print(f"  expected difference, {seen[e['name']]}x: {e['name']}")
    if wrapped == 0:
        problems.append("no WQE crossed the ring's end: the request list no longer wraps")
    if problems:
        print(f"{len(problems)} unexplained differences:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
