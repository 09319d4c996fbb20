#!/usr/bin/env python3
"""uverbs against rdma-core's perftest, side by side in one VM boot.

    benches/compare [--kernel 6.1|6.12] [--reps N] [--quick] [--out DIR] [--no-instructions]
    benches/compare --instructions-only [--quick] [--kernel 6.1|6.12] [--out DIR]

On the host: builds uverbs (release), boots the rxe VM (tests/vm/run) and runs this script inside
it with --guest. In the guest, every case runs as pairs: perftest's tool (server and client over
127.0.0.1 on rxe0) then `uverbs <tool>` with identical flags, alternating, `--reps` times. Then the
instruction measure (see below). Back on the host: a table of medians with the ratio
uverbs/perftest (stdout and DIR/compare.md), the raw runs (DIR/compare.json) and a plot of the
latency distributions of both stacks (DIR/latency.svg).

The instruction measure (alone with --instructions-only): the userspace instructions per message
that each stack executes to post and poll 64-byte sends (`send_bw` client, post lists of 1, 8 and
32 requests per post call; uverbs twice, through `post_send_list` and through the batch API,
`uverbs send-bw --batch`: stack `uverbs-batch`), counted with callgrind, and the write(2) system calls per message (the
doorbell), counted with strace; both differential (runs of M and 2M messages, M = 2048, 256 with
--quick), so that setup and teardown cancel out. Written to DIR/rxe-instr.md and
DIR/rxe-instr.json (and appended to compare.md); `benches/check` compares the JSON with
benches/baseline.json.

Times are emulator (TCG) times: compare only side by side within one run. Instruction and system
call counts do not depend on the emulator's speed, except the number of empty polls.
"""

import argparse
import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UVERBS = os.path.join(ROOT, "target/release/uverbs")
MARK = "@@uverbs-compare@@"

LAT_COLS = ["bytes", "iters", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p99_9"]
BW_COLS = ["bytes", "iters", "bw_peak", "bw_avg", "msg_rate"]


def cases(quick):
    """(name, tool, flags, kind): every pair that is run."""
    n_lat = 200 if quick else 2000
    n_bw = 256 if quick else 2048
    n_big = 50 if quick else 500
    out = [
        ("send_lat 2B", "send_lat", f"-s 2 -n {n_lat}", "lat"),
        ("write_lat 2B", "write_lat", f"-s 2 -n {n_lat}", "lat"),
        ("send_bw 64B", "send_bw", f"-s 64 -n {n_bw}", "bw"),
        ("send_bw 64B -l 32", "send_bw", f"-s 64 -n {n_bw} -l 32", "bw"),
        ("write_bw 64B", "write_bw", f"-s 64 -n {n_bw}", "bw"),
        ("write_bw 64B -l 32", "write_bw", f"-s 64 -n {n_bw} -l 32", "bw"),
        ("write_bw 64KiB", "write_bw", f"-s 65536 -n {n_big}", "bw"),
        ("read_bw 64KiB", "read_bw", f"-s 65536 -n {n_big}", "bw"),
    ]
    if quick:
        out = [c for c in out if c[0] in ("send_lat 2B", "write_bw 64B", "write_bw 64B -l 32")]
    return out


def run_pair(server, client, port, timeout=120):
    """Runs a server and then a client against it; the client's stdout, or None."""
    srv = subprocess.Popen(server + ["-p", str(port)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    time.sleep(1.0)
    try:
        cli = subprocess.run(client + ["-p", str(port), "127.0.0.1"], capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        srv.kill()
        return None, "client timed out"
    try:
        srv_out, _ = srv.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        srv.kill()
        return None, "server timed out"
    if cli.returncode != 0 or srv.returncode != 0:
        return None, f"exit {cli.returncode}/{srv.returncode}: {cli.stdout[-400:]}{cli.stderr[-400:]}{srv_out[-400:]}"
    return cli.stdout, None


def parse_result(text, kind):
    """The numbers of perftest's result line (uverbs prints the same columns)."""
    cols = LAT_COLS if kind == "lat" else BW_COLS
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == len(cols) and all(re.fullmatch(r"[0-9.]+", p) for p in parts):
            return dict(zip(cols, map(float, parts)))
    return None


def parse_histogram(text):
    """Latency samples (usec) printed by -H: perftest prints 'N, usec' lines."""
    out = []
    for line in text.splitlines():
        m = re.fullmatch(r"\s*\d+\s*,\s*([0-9.]+)\s*", line)
        if m:
            out.append(float(m.group(1)))
    return out


def guest(args):
    if args.instructions_only:
        print(MARK + json.dumps({"instructions": instructions(args)}))
        return
    dev = ["-d", "rxe0", "-x", "1", "-F"]
    results = []
    hist = {}
    port = 18600
    for name, tool, flags, kind in cases(args.quick):
        for rep in range(args.reps):
            for stack in ("perftest", "uverbs"):
                exe = ["ib_" + tool] if stack == "perftest" else [UVERBS, tool.replace("_", "-")]
                # Every sample of the first successful run of each latency case, for the plot.
                extra = ["-H"] if kind == "lat" and f"{name}/{stack}" not in hist else []
                cmd = exe + dev + shlex.split(flags) + extra
                port += 1
                out, err = run_pair(cmd, cmd, port)
                row = {"case": name, "stack": stack, "rep": rep, "cmd": " ".join(cmd)}
                if out is None:
                    row["error"] = err
                else:
                    row["result"] = parse_result(out, kind)
                    if row["result"] is None:
                        row["error"] = "no result line: " + out[-400:]
                    if extra and row.get("result"):
                        hist[f"{name}/{stack}"] = parse_histogram(out)
                results.append(row)
                print(f"{name:22} {stack:8} rep {rep}: {row.get('result') or row.get('error')}",
                      file=sys.stderr, flush=True)
    instr = None if args.no_instructions else instructions(args)
    print(MARK + json.dumps({"runs": results, "histograms": hist, "instructions": instr}))


# ------------------------------------------------------------------------------------------------
# The userspace instruction measure (callgrind) and the write(2) count (strace), both differential.

# Post list lengths measured (perftest's and uverbs' `-l N`).
INSTR_LISTS = (1, 8, 32)
# The provider library of rdma-core's rxe driver, as callgrind names its object.
RXE_PROVIDER = re.compile(r"/librxe-rdmav\d+\.so$")
# Functions of libc that are the write(2) wrapper, by the names callgrind gives them.
WRITE_FNS = re.compile(r"^(__GI_)?(__libc_write|__write|write)(@.*)?$")
# uverbs' hot path: collection is switched on inside these (inclusive of all they call). Toggles
# must not nest (each entry/exit flips collection): the tool's `poll_once` wraps
# `CompletionQueue::poll`, which may be inlined into it.
UVERBS_POST = "uverbs::qp::QueuePair::post_send_list"
UVERBS_POLL = "uverbs::perf::poll_once"
# The same for `uverbs send-bw --batch`: the tool's function that makes one batch, start_send to
# submit (the requests' values are built before it, as post_send_list's slice is).
UVERBS_BATCH_POST = "uverbs::perf::bw::post_batch"
# The uverbs stacks: the function counted as the post call of each.
UVERBS_POSTS = {"uverbs": UVERBS_POST, "uverbs-batch": UVERBS_BATCH_POST}


def instr_messages(quick):
    """M: the smaller message count of the differential pair (M and 2M); a multiple of 32 (and so
    of every post list length), as perftest requires."""
    return 256 if quick else 2048


def parse_callgrind(path):
    """Reads a callgrind output file (format version 1) into its Ir figures.

    Returns {"total": Ir of the whole file (`summary:`/`totals:`), "self": {(object, fn): Ir
    executed in the function itself}, "arcs": {(caller object, caller fn, callee object, callee
    fn): [calls, inclusive Ir]}}.
    Handles name compression (`fn=(12) name` once, `fn=(12)` later; ob/cob share one table, fn/cfn
    another) and relative positions; Ir is the first event column after the positions. A `calls=`
    line is followed by the call's inclusive cost, which is not the caller's own cost. A missing
    `cob=` means the callee is in the caller's object.
    """
    names = {"ob": {}, "fn": {}}
    table = {"ob": "ob", "cob": "ob", "fn": "fn", "cfn": "fn"}

    def name(kind, value):
        m = re.match(r"\((\d+)\)\s*(.*)$", value)
        if not m:
            return value.strip()
        ids = names[table[kind]]
        if m.group(2):
            ids[m.group(1)] = m.group(2).strip()
        return ids.get(m.group(1), f"({m.group(1)})")

    npos, total, totals = 1, None, None
    self_ir, arcs = {}, {}
    ob = fn = None
    cob = cfn = None
    in_call = None  # the arc whose inclusive cost line comes next
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if line[0].isdigit() or line[0] in "+-*":
                parts = line.split()
                ir = int(parts[npos]) if len(parts) > npos else 0
                if in_call is not None:
                    arc = arcs.setdefault(in_call[0], [0, 0])
                    arc[0] += in_call[1]
                    arc[1] += ir
                    in_call = None
                else:
                    self_ir[(ob, fn)] = self_ir.get((ob, fn), 0) + ir
                continue
            key, _, value = line.partition("=")
            if key in ("ob", "fn", "cob", "cfn"):
                v = name(key, value)
                if key == "ob":
                    ob = v
                elif key == "fn":
                    fn, cob, cfn = v, None, None
                elif key == "cob":
                    cob = v
                else:
                    cfn = v
            elif key == "calls":
                in_call = ((ob, fn, cob or ob, cfn), int(value.split()[0]))
                cob = None  # valid for this call only; cfn is always given again
            elif line.startswith("positions:"):
                npos = len(line.split(":", 1)[1].split())
            elif line.startswith("summary:"):
                total = int(line.split()[1])
            elif line.startswith("totals:"):
                totals = int(line.split()[1])
    return {"total": total if total is not None else (totals or 0), "self": self_ir, "arcs": arcs}


def rdma_core_figures(cg):
    """rdma-core's figures from one perftest client profile (every Ir of the process counted).

    perftest calls the provider's functions directly (`ibv_post_send` and `ibv_poll_cq` are inline
    in verbs.h), so every call from outside into librxe is an entry: the post side is the provider
    functions reachable (through calls between provider functions) from an entry that reaches a
    call to libc's write, the doorbell (`rxe_post_send`, `post_send_db`); the poll side is every
    other provider function (`rxe_poll_cq`; setup functions too, which the difference cancels).
    The provider has no symbols: functions are told apart by these calls, not by name.

    For each side: *_provider is the Ir executed inside librxe itself; *_write the inclusive Ir of
    its calls to libc's write wrapper (and *_write_calls their number); *_all the inclusive Ir of
    the calls into it from outside, i.e. the provider and everything it calls (the write wrapper,
    pthread spinlocks, memcpy); *_calls the number of those calls.
    """
    prov = lambda o: bool(o and RXE_PROVIDER.search(o))
    arcs = cg["arcs"]
    inner = {}  # provider fn -> provider fns it calls
    for (co, cf, eo, ef) in arcs:
        if prov(co) and prov(eo):
            inner.setdefault((co, cf), set()).add((eo, ef))

    def reach(fn):
        seen, todo = set(), [fn]
        while todo:
            f = todo.pop()
            if f not in seen:
                seen.add(f)
                todo += inner.get(f, ())
        return seen

    rings = {(co, cf) for (co, cf, eo, ef) in arcs if prov(co) and WRITE_FNS.match(ef or "")}
    entries = {(eo, ef) for (co, cf, eo, ef) in arcs if prov(eo) and not prov(co)}
    post_side = set()
    for e in entries:
        r = reach(e)
        if r & rings:
            post_side |= r
    side = lambda o, f: "post" if (o, f) in post_side else "poll"
    out = {f"{s}_{k}": 0 for s in ("post", "poll")
           for k in ("provider", "write", "write_calls", "all", "calls")}
    for (o, f), ir in cg["self"].items():
        if prov(o):
            out[side(o, f) + "_provider"] += ir
    for (co, cf, eo, ef), (calls, ir) in arcs.items():
        if prov(co) and not prov(eo) and WRITE_FNS.match(ef or ""):
            out[side(co, cf) + "_write"] += ir
            out[side(co, cf) + "_write_calls"] += calls
        if prov(eo) and not prov(co):
            out[side(eo, ef) + "_all"] += ir
            out[side(eo, ef) + "_calls"] += calls
    return out


def uverbs_figures(cg, post=UVERBS_POST):
    """uverbs' figures from one toggle-collected profile, with rdma_core_figures' key names:
    post_all/poll_all the inclusive Ir of the calls into `post` (post_send_list, or the tool's
    post_batch)/poll_once (from the tool's loop), post_calls/poll_calls their number, post_write
    the calls to libc's write made while collecting (the doorbell, inside the post call), total
    everything collected."""
    out = {"total": cg["total"], "post_all": 0, "post_calls": 0, "poll_all": 0, "poll_calls": 0,
           "post_write": 0, "post_write_calls": 0}
    for (co, cf, eo, ef), (calls, ir) in cg["arcs"].items():
        ef, cf = ef or "", cf or ""
        for side, name in (("post", post), ("poll", UVERBS_POLL)):
            if ef.startswith(name) and not cf.startswith(name):
                out[side + "_all"] += ir
                out[side + "_calls"] += calls
        if WRITE_FNS.match(ef):
            out["post_write"] += ir
            out["post_write_calls"] += calls
    return out


def strace_counts(path):
    """System calls in an `strace -f -y -qq -o PATH` trace: {"syscalls": all of them, "doorbells":
    the write(2) calls on an uverbs device file (/dev/infiniband/uverbsN, the command fd: rxe's
    doorbell), "by_name": {system call: number}}. A call that strace splits in two
    (`<unfinished ...>` then `<... resumed>`, when threads interleave) counts once."""
    calls = doorbells = 0
    by_name = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"\s*(?:\d+\s+)?(\w+)\((.*)", line)
            if not m:  # `<... write resumed>`, signals, exits
                continue
            calls += 1
            by_name[m.group(1)] = by_name.get(m.group(1), 0) + 1
            if m.group(1) == "write" and re.match(r"\d+</dev/infiniband/uverbs\d+>", m.group(2)):
                doorbells += 1
    return {"syscalls": calls, "doorbells": doorbells, "by_name": by_name}


def measure_once(stack, exe, flags, port, quick):
    """One client run under callgrind and one under strace, for one message count.

    Returns (figures, error): the callgrind figures of the stack plus strace's counts."""
    tag = f"{stack}.{os.getpid()}.{port}"
    cg_file, st_file = f"/tmp/callgrind.{tag}.out", f"/tmp/strace.{tag}.out"
    toggles = [] if stack == "rdma-core" else [f"*{UVERBS_POSTS[stack]}*", f"*{UVERBS_POLL}*"]
    client = (["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg_file}"]
              + [f"--toggle-collect={t}" for t in toggles] + exe + flags)
    # -y: file descriptors with their paths (to tell the doorbell from other writes); every
    # system call is traced, but the message loop makes none besides the doorbell.
    traced = ["strace", "-f", "-y", "-qq", "-e", "signal=none", "-s", "0", "-o", st_file]
    limit = 300 if quick else 900
    try:
        _, err = run_pair(exe + flags, client, port, timeout=limit)
        if err:
            return None, "callgrind run: " + err
        _, err = run_pair(exe + flags, traced + exe + flags, port + 1, timeout=limit)
        if err:
            return None, "strace run: " + err
        cg = parse_callgrind(cg_file)
        fig = (rdma_core_figures(cg) if stack == "rdma-core"
               else uverbs_figures(cg, UVERBS_POSTS[stack]))
        fig.update(strace_counts(st_file))
        if not fig["post_calls"] or not fig["doorbells"]:
            return None, (f"no post calls ({fig['post_calls']}) or no doorbell writes "
                          f"({fig['doorbells']}) found: was the provider or the symbol renamed?")
        return fig, None
    except (OSError, ValueError, IndexError) as e:
        return None, f"{type(e).__name__}: {e}"
    finally:
        for p in (cg_file, st_file):
            if os.path.exists(p):
                os.remove(p)


def instructions(args):
    """Userspace instructions and write(2) calls per message, both stacks, post lists 1, 8, 32.

    Workload: the client of `send_bw`, 64 B messages on rxe0 (RC, loopback), `-l N` requests per
    post call (one call posts the whole list: perftest's `ibv_post_send` with a linked list, uverbs'
    `post_send_list` with a slice), one signaled completion per list (per 100 messages for N = 1).
    rdma-core runs as `ib_send_bw --use_old_post_send` (posting through `ibv_post_send`, i.e. the
    provider's `rxe_post_send`), with every instruction counted; uverbs as `uverbs send-bw`, with
    collection switched on only inside `QueuePair::post_send_list` and the tool's `poll_once`
    (inclusive of all they call, the libc write wrapper of the doorbell included); and uverbs again
    as `uverbs send-bw --batch` (stack `uverbs-batch`: each post one batch, `start_send`, the
    requests, `submit`, in the tool's `post_batch`, which is counted instead of `post_send_list`).

    Differential: each configuration runs with M and 2M messages and the figure is
    (X(2M) - X(M)) / M, so that setup, connection exchange and teardown cancel out. The post path
    (the post call, inclusive) is deterministic; the polls are not (empty polls while the send
    window is full: their number depends on timing), so both are reported apart. System calls are
    counted by strace (-f, the whole process, every thread) in a separate run of the same
    configuration, also M and 2M: the doorbell is every write(2) on the uverbs device file,
    whatever code path made it, and it must match the write calls that callgrind saw in the post
    path (the figures record both).
    """
    m = instr_messages(args.quick)
    dev = ["-d", "rxe0", "-x", "1", "-F", "-s", "64"]
    exes = {"rdma-core": ["ib_send_bw", "--use_old_post_send"], "uverbs": [UVERBS, "send-bw"],
            "uverbs-batch": [UVERBS, "send-bw", "--batch"]}
    out = {"messages": [m, 2 * m], "lists": list(INSTR_LISTS), "stacks": {}}
    missing = [t for t in ("valgrind", "strace", "ib_send_bw") if not shutil.which(t)]
    if missing:
        err = f"not installed: {' '.join(missing)} (apt-get install valgrind strace perftest)"
        out["stacks"] = {s: {str(n): {"error": err} for n in INSTR_LISTS} for s in exes}
        print(f"instructions: {err}", file=sys.stderr, flush=True)
        return out
    port = 18900
    for stack, exe in exes.items():
        per_list = out["stacks"][stack] = {}
        for n_list in INSTR_LISTS:
            runs, err = {}, None
            for n in (m, 2 * m):
                flags = dev + ["-n", str(n), "-l", str(n_list)]
                # One retry with fresh ports: a connection setup under TCG occasionally fails.
                for _attempt in range(2):
                    port += 2
                    fig, err = measure_once(stack, exe, flags, port, args.quick)
                    if fig is not None:
                        break
                if fig is None:
                    break
                runs[n] = fig
            if err:
                per_list[str(n_list)] = {"error": err}
            else:
                per_list[str(n_list)] = differential(stack, runs[m], runs[2 * m], m)
                per_list[str(n_list)]["raw"] = {str(k): v for k, v in runs.items()}
            print(f"instructions {stack:9} -l {n_list:2}: "
                  f"{ {k: v for k, v in per_list[str(n_list)].items() if k != 'raw'} }",
                  file=sys.stderr, flush=True)
    return out


def differential(stack, a, b, m):
    """Per-message figures from the runs with M (a) and 2M (b) messages.

    post_* are deterministic (the same instructions for every post call); poll_* and the totals
    (instructions_per_message) include the empty polls made while the send window is full, whose
    number depends on timing."""
    d = lambda k: (b[k] - a[k]) / m
    out = {
        # The post call, inclusive of everything it calls (rdma-core: the provider's
        # rxe_post_send, its libc calls included; uverbs: post_send_list).
        "post_instructions_per_message": d("post_all"),
        "poll_instructions_per_message": d("poll_all"),
        "instructions_per_message": d("post_all") + d("poll_all"),
        "post_calls_per_message": d("post_calls"),
        "poll_calls_per_message": d("poll_calls"),
        "poll_instructions_per_call": ((b["poll_all"] - a["poll_all"])
                                       / (b["poll_calls"] - a["poll_calls"])
                                       if b["poll_calls"] > a["poll_calls"] else None),
        "write_wrapper_per_message": d("post_write"),
        # The doorbell: write(2) calls on the uverbs device file (strace), and the calls to
        # libc's write from the post path (callgrind): the two must agree.
        "syscalls_per_message": d("doorbells"),
        "doorbell_calls_per_message": d("post_write_calls"),
        "all_syscalls_per_message": d("syscalls"),
        # Every system call whose number grows with the messages (not only the verbs path: the
        # tool's clock reads are system calls where the guest's clocksource has no vDSO).
        "syscalls_by_name_per_message": {
            k: (b["by_name"].get(k, 0) - a["by_name"].get(k, 0)) / m
            for k in sorted(set(a["by_name"]) | set(b["by_name"]))
            if b["by_name"].get(k, 0) != a["by_name"].get(k, 0)},
    }
    if stack == "rdma-core":
        out.update({
            "post_provider_only_per_message": d("post_provider"),
            "post_provider_and_write_wrapper_per_message": d("post_provider") + d("post_write"),
            "poll_provider_only_per_message": d("poll_provider"),
            "provider_only_per_message": d("post_provider") + d("poll_provider"),
        })
    return out


def instr_tables(instr):
    """The markdown tables of the instruction measure (a list of lines)."""
    st = instr.get("stacks", {})
    m = instr.get("messages", ["?", "?"])
    lists = instr.get("lists", INSTR_LISTS)

    def fig(stack, n, key):
        v = st.get(stack, {}).get(str(n), {}).get(key)
        return v if isinstance(v, (int, float)) else None

    def f(v, digits=1):
        return "—" if v is None else f"{v:,.{digits}f}".replace(",", " ")

    def ratio(u, p):
        return f(u / p if u and p else None, 2)

    def row(n, cells):
        errs = [f"{s}: {st[s][str(n)]['error']}" for s in st if st[s].get(str(n), {}).get("error")]
        note = f" error: {'; '.join(errs)}" if errs else ""
        return f"| {n} | " + " | ".join(cells) + f" |{note}"

    lines = [
        f"**Post path**: userspace instructions per message of the post call, `send_bw` 64 B on "
        f"rxe (callgrind, differential: (runs of {m[1]} − runs of {m[0]} messages) / {m[0]}; "
        f"deterministic), and the doorbell system calls:",
        "",
        "| post list | rdma-core: librxe only | rdma-core: librxe + write wrapper "
        "| rdma-core: librxe + all it calls | uverbs (all it calls) | uverbs / rdma-core "
        "| uverbs batch | uverbs batch / rdma-core "
        "| write(2)/msg rdma-core | write(2)/msg uverbs | write(2)/msg uverbs batch |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in lists:
        p = fig("rdma-core", n, "post_instructions_per_message")
        u = fig("uverbs", n, "post_instructions_per_message")
        b = fig("uverbs-batch", n, "post_instructions_per_message")
        lines.append(row(n, [
            f(fig("rdma-core", n, "post_provider_only_per_message")),
            f(fig("rdma-core", n, "post_provider_and_write_wrapper_per_message")),
            f(p), f(u), ratio(u, p), f(b), ratio(b, p),
            f(fig("rdma-core", n, "syscalls_per_message"), 3),
            f(fig("uverbs", n, "syscalls_per_message"), 3),
            f(fig("uverbs-batch", n, "syscalls_per_message"), 3)]))
    lines += [
        "",
        "**Post + poll** (same runs): per message, with the polls made (empty ones while the send "
        "window is full included: their number depends on timing, so these totals move from run "
        "to run):",
        "",
        "| post list | rdma-core: librxe only | rdma-core: librxe + all it calls | uverbs "
        "| uverbs / rdma-core | uverbs batch | polls/msg rdma-core | polls/msg uverbs "
        "| instr/poll rdma-core | instr/poll uverbs |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in lists:
        p = fig("rdma-core", n, "instructions_per_message")
        u = fig("uverbs", n, "instructions_per_message")
        lines.append(row(n, [
            f(fig("rdma-core", n, "provider_only_per_message")), f(p), f(u), ratio(u, p),
            f(fig("uverbs-batch", n, "instructions_per_message")),
            f(fig("rdma-core", n, "poll_calls_per_message"), 3),
            f(fig("uverbs", n, "poll_calls_per_message"), 3),
            f(fig("rdma-core", n, "poll_instructions_per_call")),
            f(fig("uverbs", n, "poll_instructions_per_call"))]))
    lines += [
        "",
        "- rdma-core runs `ib_send_bw --use_old_post_send -l N` (`ibv_post_send` with a list of N, "
        "`ibv_poll_cq`: both inline in verbs.h, calling the rxe provider directly); uverbs runs "
        "`uverbs send-bw -l N` (one `post_send_list` call with N requests) and, for *uverbs batch*, "
        "`uverbs send-bw --batch -l N` (one batch of N requests per post: `start_send`, the "
        "requests, `submit`, counted in the tool's `post_batch`; the polls as without `--batch`). "
        "None of the counts includes the tool's own loop.",
        "- *librxe only*: instructions executed inside rdma-core's rxe provider library, nothing "
        "it calls. *+ write wrapper*: plus libc's `write` wrapper of its doorbell. *+ all it "
        "calls*: the calls into the provider, inclusive (also `pthread_spin_lock`/`unlock`, "
        "`memcpy`): like for like with uverbs, whose count is `QueuePair::post_send_list` (and "
        "the tool's `poll_once`) inclusive of all they call (its rxe backend, its lock, the "
        "write wrapper). The ratios are against this column.",
        "- *write(2)/msg*: write system calls on the uverbs device file (the doorbell), counted by "
        "strace (`-f -y`, whole process) in separate runs, also differential. Every system call "
        "per message, by name (the tools' own included, e.g. clock reads):",
    ]
    for n in lists:
        for s in ("rdma-core", "uverbs", "uverbs-batch"):
            by = st.get(s, {}).get(str(n), {}).get("syscalls_by_name_per_message")
            if by:
                lines.append(f"  `-l {n}` {s}: " + ", ".join(
                    f"{k} {v:.3f}" for k, v in sorted(by.items(), key=lambda kv: -abs(kv[1]))))
    return lines


def instr_write(instr, meta, outdir):
    """Writes DIR/rxe-instr.json (per stack, per post list length: instructions_per_message,
    syscalls_per_message and the breakdown) and DIR/rxe-instr.md; returns the markdown lines."""
    lines = instr_tables(instr)
    doc = {"benchmark": "rxe-instr", **meta, **instr}
    ratios, batch_ratios = {}, {}
    for n in instr.get("lists", []):
        for key in ("post_instructions_per_message", "instructions_per_message"):
            p = instr["stacks"].get("rdma-core", {}).get(str(n), {}).get(key)
            u = instr["stacks"].get("uverbs", {}).get(str(n), {}).get(key)
            b = instr["stacks"].get("uverbs-batch", {}).get(str(n), {}).get(key)
            ratios.setdefault(str(n), {})[key] = u / p if p and u else None
            batch_ratios.setdefault(str(n), {})[key] = b / p if p and b else None
    doc["ratio_uverbs_to_rdma_core"] = ratios
    doc["ratio_uverbs_batch_to_rdma_core"] = batch_ratios
    doc["keys"] = {
        "post_instructions_per_message": "the post call, inclusive of all it calls "
            "(rdma-core: every call into the provider's post side; deterministic)",
        "instructions_per_message": "post + poll, inclusive (polls depend on timing)",
        "post_provider_only_per_message": "rdma-core: Ir inside librxe only, post side",
        "post_provider_and_write_wrapper_per_message": "rdma-core: librxe + libc write wrapper",
        "syscalls_per_message": "write(2) on /dev/infiniband/uverbs* (the doorbell), strace",
        "doorbell_calls_per_message": "calls to libc's write from the post path, callgrind",
        "all_syscalls_per_message": "every system call of the process, strace",
        "raw": "the absolute counts of the runs with M and 2M messages",
    }
    with open(os.path.join(outdir, "rxe-instr.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(outdir, "rxe-instr.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def instr_errors(instr):
    """'stack -l N: error' for every configuration that could not be measured."""
    return [f"{s} -l {n}: {v['error']}" for s, per in (instr or {}).get("stacks", {}).items()
            for n, v in per.items() if v.get("error")]


def run_meta(args):
    """Conditions of the run, for the JSON files: what was measured, when, with which versions."""
    def sh(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                                  timeout=30).stdout.strip() or None
        except (OSError, subprocess.TimeoutExpired):
            return None
    return {
        "mode": "quick" if args.quick else "full",
        "kernel": args.kernel,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": os.uname().nodename,
        "uverbs_commit": sh(["git", "describe", "--always", "--dirty"]),
        "versions": {p: sh(["dpkg-query", "-W", "-f=${Version}", p])
                     for p in ("perftest", "ibverbs-providers", "valgrind")},
    }


def median(rows, key):
    vals = [r["result"][key] for r in rows if r.get("result")]
    return statistics.median(vals) if vals else None


def report(data, outdir):
    runs = data["runs"]
    lines = ["| case | metric | perftest | uverbs | uverbs/perftest |", "|---|---|---:|---:|---:|"]
    summary = {}
    for name in dict.fromkeys(r["case"] for r in runs):
        rows = [r for r in runs if r["case"] == name]
        kind = "lat" if "lat" in name else "bw"
        metrics = [("t_typical", "typical latency (usec)"), ("p99", "p99 (usec)")] if kind == "lat" \
            else [("bw_avg", "BW average (MB/s)"), ("msg_rate", "Mpps")]
        for key, label in metrics:
            p = median([r for r in rows if r["stack"] == "perftest"], key)
            u = median([r for r in rows if r["stack"] == "uverbs"], key)
            ratio = (u / p) if p and u else None
            summary[f"{name}/{key}"] = {"perftest": p, "uverbs": u, "ratio": ratio}
            fmt = lambda v: "—" if v is None else f"{v:.3f}" if v < 10 else f"{v:.1f}"
            lines.append(f"| {name} | {label} | {fmt(p)} | {fmt(u)} | "
                         f"{'—' if ratio is None else f'{ratio:.2f}'} |")
    errors = [r for r in runs if r.get("error")]
    instr = data.get("instructions")
    if instr:
        lines.append("")
        lines += instr_write(instr, data.get("meta", {}), outdir)
    table = "\n".join(lines)
    with open(os.path.join(outdir, "compare.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(outdir, "compare.json"), "w") as f:
        json.dump({"summary": summary, **data}, f, indent=1)
    svg(data.get("histograms", {}), os.path.join(outdir, "latency.svg"))
    print(table)
    for e in errors:
        print(f"ERROR {e['case']} {e['stack']} rep {e['rep']}: {e['error']}", file=sys.stderr)
    return summary, errors


def svg(hist, path):
    """Empirical CDFs of the latency samples of both stacks, one panel per case, as plain SVG."""
    cases_ = sorted({k.split("/")[0] for k in hist})
    if not cases_:
        return
    w, h, pad = 560, 300, 50
    colors = {"perftest": "#d62728", "uverbs": "#1f77b4"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h * len(cases_)}" '
             f'font-family="sans-serif" font-size="12">']
    for i, case in enumerate(cases_):
        y0 = i * h
        series = {s: sorted(hist.get(f"{case}/{s}", [])) for s in colors}
        allv = [v for s in series.values() for v in s]
        if not allv:
            continue
        lo = max(min(allv), 1e-3)
        hi = max(sorted(allv)[int(0.999 * (len(allv) - 1))], lo * 1.01)
        span = math.log(hi) - math.log(lo)
        xpos = lambda v: pad + (w - 2 * pad) * (math.log(min(max(v, lo), hi)) - math.log(lo)) / span
        parts.append(f'<text x="{w / 2}" y="{y0 + 18}" text-anchor="middle">{case}: latency CDF '
                     f'(usec, log scale, TCG; clipped at p99.9)</text>')
        parts.append(f'<rect x="{pad}" y="{y0 + 30}" width="{w - 2 * pad}" height="{h - 80}" '
                     f'fill="none" stroke="#888"/>')
        for t in range(5):
            v = math.exp(math.log(lo) + span * t / 4)
            parts.append(f'<text x="{xpos(v):.1f}" y="{y0 + h - 34}" '
                         f'text-anchor="middle">{v:.3g}</text>')
        for t in (0, 0.5, 1):
            y = y0 + 30 + (h - 80) * (1 - t)
            parts.append(f'<text x="{pad - 6}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
        for k, (stack, vals) in enumerate(series.items()):
            if not vals:
                continue
            pts = []
            for j, v in enumerate(vals):
                x = xpos(v)
                y = y0 + 30 + (h - 80) * (1 - (j + 1) / len(vals))
                pts.append(f"{x:.1f},{y:.1f}")
            parts.append(f'<polyline fill="none" stroke="{colors[stack]}" stroke-width="1.5" '
                         f'points="{" ".join(pts[::max(1, len(pts) // 400)])}"/>')
            parts.append(f'<text x="{w - pad - 90}" y="{y0 + h - 70 + 16 * k}" '
                         f'fill="{colors[stack]}">{stack} (n={len(vals)})</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def host(args):
    outdir = os.path.abspath(args.out)
    os.makedirs(outdir, exist_ok=True)
    subprocess.run(["cargo", "build", "--release", "-p", "uverbs-tools"], cwd=ROOT, check=True)
    inner = [sys.executable, os.path.abspath(__file__), "--guest", "--reps", str(args.reps)]
    inner += [flag for flag, on in (("--quick", args.quick),
                                    ("--instructions-only", args.instructions_only),
                                    ("--no-instructions", args.no_instructions)) if on]
    timeout = args.timeout or (900 if args.instructions_only and args.quick else 1800)
    vm = [os.path.join(ROOT, "tests/vm/run"), "--kernel", args.kernel, "--timeout",
          str(timeout), "--", *inner]
    t0 = time.monotonic()
    proc = subprocess.run(vm, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                          cwd=ROOT)
    data = None
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            data = json.loads(line[len(MARK):])
        else:
            print(line)
    if data is None:
        print(f"benches/compare: no results from the VM (exit {proc.returncode})", file=sys.stderr)
        return 1
    data["meta"] = {**run_meta(args), "vm_seconds": round(time.monotonic() - t0)}
    instr_errs = instr_errors(data.get("instructions"))
    for e in instr_errs:
        print(f"ERROR instructions {e}", file=sys.stderr)
    if args.instructions_only:
        lines = instr_write(data["instructions"], data["meta"], outdir)
        print("\n".join(lines))
        print(f"\nwritten: {outdir}/rxe-instr.md, rxe-instr.json "
              f"({data['meta']['vm_seconds']} s in the VM)")
        return 1 if instr_errs else 0
    data["kernel"] = args.kernel
    data["reps"] = args.reps
    data["host"] = os.uname().nodename
    _, errors = report(data, outdir)
    written = "compare.md, compare.json, latency.svg"
    if data.get("instructions"):
        written += ", rxe-instr.md, rxe-instr.json"
    print(f"\nwritten: {outdir}/{written}")
    # perftest itself sometimes cannot produce a report under emulation (its CPU-frequency
    # estimate fails): that is reported above but fails the run only for uverbs.
    return 1 if any(e["stack"] == "uverbs" for e in errors) or any(
        e.startswith(("uverbs ", "uverbs-batch ")) for e in instr_errs) else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", default="6.12", help="guest kernel, 6.1 or 6.12 (default 6.12)")
    ap.add_argument("--reps", type=int, default=5, help="pairs per case (default 5)")
    ap.add_argument("--quick", action="store_true", help="a few cases, small counts (CI)")
    ap.add_argument("--out", default=os.path.join(ROOT, "target/bench"),
                    help="where the tables and JSON go (default target/bench)")
    ap.add_argument("--timeout", type=int, default=None,
                    help="limit for the whole guest run, seconds (default 1800; 900 for "
                         "--instructions-only --quick)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--instructions-only", action="store_true",
                      help="only the instruction and system call measure (post lists 1, 8, 32): "
                           "DIR/rxe-instr.md and DIR/rxe-instr.json")
    mode.add_argument("--no-instructions", action="store_true",
                      help="only the latency/bandwidth pairs, not the instruction measure")
    ap.add_argument("--guest", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.guest:
        guest(args)
        return 0
    return host(args)


if __name__ == "__main__":
    sys.exit(main())
