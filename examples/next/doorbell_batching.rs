//! Doorbell batching on the `ibverbs` crate's main-branch API: `QueuePair::start_send` opens one
//! batch, every request in it is built in place, and one `submit` hands the whole batch to the
//! device.
//!
//! One reliable-connected queue pair is connected to itself. The first batch holds N RDMA WRITEs
//! (N is 64, or the first argument) of distinct 8-byte patterns into distinct offsets of a target
//! region: all unsignaled but the last, so the batch brings exactly one completion, and a reliable
//! connection completes in order, so that one completion says every write landed; each pattern
//! is then checked in the target. The second batch holds an atomic fetch-and-add, an atomic
//! compare-and-swap and a fenced RDMA READ of one of the patterns (the fence holds the read back
//! until the atomics before it are done); their results are checked too. Then it prints
//! `doorbell_batching: ok`.
//!
//! It runs on the first RDMA device, or on the one named by `IBVERBS_DEVICE`.
use uverbs::next as ibverbs;

use std::time::{Duration, Instant};

use ibverbs::{LocalMemorySlice, RemoteMemorySlice};

/// Writes in the first batch, unless the first argument says otherwise.
const DEFAULT_WRITES: usize = 64;

/// The size of every operand here: one pattern, one atomic word.
const WORD: usize = 8;

/// How long a batch may take to complete.
const DEADLINE: Duration = Duration::from_secs(60);

/// The second batch's requests.
const FETCH_ADD_WR_ID: u64 = 1_000_001;
const CMP_SWAP_WR_ID: u64 = 1_000_002;
const READ_WR_ID: u64 = 1_000_003;

/// The atomics' operands. The byte order a device applies to an atomic's 8 bytes in memory is its
/// own business (not every device takes them in the host's order), so the initial values read the same either way, and the
/// results are accepted in either order.
const FETCH_ADD_INITIAL: u64 = 0x0101_0101_0101_0101;
const FETCH_ADD_ADDEND: u64 = 0x10;
const CMP_SWAP_INITIAL: u64 = 0x2222_2222_2222_2222;
const CMP_SWAP_NEW: u64 = 0x0102_0304_0506_0708;

/// The distinct pattern of write `i` (multiplying by an odd number is a bijection of `u64`).
fn pattern(i: usize) -> [u8; WORD] {
    ((i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5a5a_0000_0000_005a).to_le_bytes()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let writes = match std::env::args().nth(1) {
        Some(n) => n.parse::<usize>().map_err(|e| format!("N ({n:?}): {e}"))?,
        None => DEFAULT_WRITES,
    };
    if writes == 0 {
        return Err("N must be at least 1".into());
    }

    let ctx = open_device()?;
    let cq = ctx.create_cq(16).build()?;
    let pd = ctx.alloc_pd()?;
    let gid_index = routable_gid_index(&ctx)?;

    // The whole first batch is outstanding at once (its unsignaled requests hold their send queue
    // slots until the signaled one completes), and so is the second one's three.
    let send_queue = u32::try_from(writes.max(3))?;
    let prepared = pd
        .create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC)?
        .set_gid_index(gid_index)
        .set_max_send_wr(send_queue)
        // The peer (itself) may read and write the regions, and run atomics on them; the regions
        // allow all three, as `allocate` registers with `DEFAULT_ACCESS_FLAGS`.
        .set_access(
            ibverbs::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                | ibverbs::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC,
        )
        .allow_remote_rw()
        .build()?;
    let endpoint = prepared.endpoint()?;
    let mut qp = prepared.handshake(endpoint)?;

    // The patterns, side by side in one region; the target, the same size, starts zeroed.
    let mut source = pd.allocate(writes * WORD)?;
    for (i, word) in source.bytes_mut().chunks_exact_mut(WORD).enumerate() {
        word.copy_from_slice(&pattern(i));
    }
    let target = pd.allocate(writes * WORD)?;

    // Write `i` goes from the source's word `i` to the target's word `writes - 1 - i`, so that a
    // write that landed at its own offset (or nowhere) shows.
    let locals: Vec<[LocalMemorySlice; 1]> = (0..writes)
        .map(|i| [source.slice(i * WORD..(i + 1) * WORD)])
        .collect();
    let whole_target = target.remote();
    let remotes: Vec<RemoteMemorySlice> = (0..writes)
        .map(|i| {
            let at = (writes - 1 - i) * WORD;
            whole_target.slice(at..at + WORD)
        })
        .collect();

    // First batch: N writes, one doorbell, one completion.
    let last = writes - 1;
    let mut batch = qp.start_send();
    for i in 0..last {
        batch.write(i as u64, &locals[i], remotes[i]);
    }
    batch
        .signaled()
        .write(last as u64, &locals[last], remotes[last]);
    // SAFETY: `source` and `target` live until the end of `main`, after the completion that ends
    // this batch was polled (a reliable connection completes in order, so it ends every request
    // of the batch), and neither is touched before then.
    unsafe { batch.submit() }?;

    let done = wait_for(&cq, 1)?;
    assert_eq!(
        done,
        [Done {
            wr_id: last as u64,
            opcode: ibverbs::ibv_wc_opcode::IBV_WC_RDMA_WRITE,
            len: None,
        }],
        "the first batch: one completion, the signaled last write"
    );
    for i in 0..writes {
        let at = (writes - 1 - i) * WORD;
        assert_eq!(
            target.bytes()[at..at + WORD],
            pattern(i),
            "write {i} (target offset {at})"
        );
    }
    println!("doorbell_batching: {writes} writes in one batch landed");

    // Second batch: the atomics, on the two words of their own region, and a fenced read of one
    // pattern. An atomic's operand is 8-byte aligned: the region has a word to spare for that.
    let mut atomics = pd.allocate(3 * WORD)?;
    let skip = (WORD - (atomics.remote().addr % WORD as u64) as usize) % WORD;
    let atomic_words = atomics.remote().slice(skip..skip + 2 * WORD);
    atomics.bytes_mut()[skip..skip + WORD].copy_from_slice(&FETCH_ADD_INITIAL.to_ne_bytes());
    atomics.bytes_mut()[skip + WORD..skip + 2 * WORD]
        .copy_from_slice(&CMP_SWAP_INITIAL.to_ne_bytes());
    // Where the atomics return the values they found, and where the read lands; filled with what
    // no result is, so that a result that was never written shows.
    let mut results = pd.allocate(3 * WORD)?;
    results.bytes_mut().fill(0xee);
    let fetched = [results.slice(..WORD)];
    let compared = [results.slice(WORD..2 * WORD)];
    let read_back = [results.slice(2 * WORD..)];
    let probe = writes / 2;

    let mut batch = qp.start_send();
    batch.signaled().atomic_fetch_add(
        FETCH_ADD_WR_ID,
        &fetched,
        atomic_words.slice(..WORD),
        FETCH_ADD_ADDEND,
    );
    batch.signaled().atomic_cmp_swap(
        CMP_SWAP_WR_ID,
        &compared,
        atomic_words.slice(WORD..),
        CMP_SWAP_INITIAL,
        CMP_SWAP_NEW,
    );
    batch
        .fenced()
        .signaled()
        .read(READ_WR_ID, &read_back, remotes[probe]);
    // SAFETY: `atomics`, `results` and `target` live until the end of `main`, after all three
    // completions were polled, and none is touched before then.
    unsafe { batch.submit() }?;

    let mut done = wait_for(&cq, 3)?;
    done.sort_by_key(|d| d.wr_id);
    assert_eq!(
        done,
        [
            Done {
                wr_id: FETCH_ADD_WR_ID,
                opcode: ibverbs::ibv_wc_opcode::IBV_WC_FETCH_ADD,
                len: Some(WORD),
            },
            Done {
                wr_id: CMP_SWAP_WR_ID,
                opcode: ibverbs::ibv_wc_opcode::IBV_WC_COMP_SWAP,
                len: Some(WORD),
            },
            Done {
                wr_id: READ_WR_ID,
                opcode: ibverbs::ibv_wc_opcode::IBV_WC_RDMA_READ,
                len: Some(WORD),
            },
        ],
        "the second batch's completions"
    );

    let result = |at: usize| -> [u8; WORD] { results.bytes()[at..at + WORD].try_into().unwrap() };
    let memory = |at: usize| -> [u8; WORD] {
        atomics.bytes()[skip + at..skip + at + WORD]
            .try_into()
            .unwrap()
    };
    // Both atomics return what they found (the same bytes in either order).
    assert_eq!(
        result(0),
        FETCH_ADD_INITIAL.to_ne_bytes(),
        "fetch-and-add's result"
    );
    assert_eq!(
        result(WORD),
        CMP_SWAP_INITIAL.to_ne_bytes(),
        "compare-and-swap's result"
    );
    // And leave what they were to, in the device's byte order.
    assert!(
        either_order(memory(0), FETCH_ADD_INITIAL + FETCH_ADD_ADDEND),
        "fetch-and-add left {:02x?}",
        memory(0)
    );
    assert!(
        either_order(memory(WORD), CMP_SWAP_NEW),
        "compare-and-swap left {:02x?}",
        memory(WORD)
    );
    assert_eq!(
        result(2 * WORD),
        pattern(probe),
        "the read of write {probe}"
    );

    println!("doorbell_batching: ok");
    Ok(())
}

/// Whether `bytes` hold `value` in either byte order.
fn either_order(bytes: [u8; WORD], value: u64) -> bool {
    u64::from_le_bytes(bytes) == value || u64::from_be_bytes(bytes) == value
}

/// What a completion said (it cannot outlive the poll that lent it).
#[derive(Debug, PartialEq, Eq)]
struct Done {
    wr_id: u64,
    opcode: ibverbs::ibv_wc_opcode,
    /// The length, for the operations that report one (an RDMA WRITE's is not defined).
    len: Option<usize>,
}

/// Polls until `n` completions arrived, then a little longer, to catch any that should not come;
/// panics if one failed, or if `n` do not arrive within [`DEADLINE`].
fn wait_for(cq: &ibverbs::CompletionQueue, n: usize) -> ibverbs::Result<Vec<Done>> {
    let mut done = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    let mut settled = None;
    loop {
        if let Some(mut completions) = cq.poll()? {
            while let Some(wc) = completions.next() {
                if let Some((status, vendor_err)) = wc.error() {
                    panic!(
                        "work request {} failed: {status:?} (vendor error {vendor_err:#x})",
                        wc.wr_id()
                    );
                }
                let opcode = wc.opcode();
                let len = (opcode != ibverbs::ibv_wc_opcode::IBV_WC_RDMA_WRITE).then(|| wc.len());
                done.push(Done {
                    wr_id: wc.wr_id(),
                    opcode,
                    len,
                });
            }
        }
        let now = Instant::now();
        if done.len() >= n {
            let until = *settled.get_or_insert(now + Duration::from_millis(100));
            if now >= until {
                return Ok(done);
            }
        }
        assert!(
            now < deadline,
            "only {} of {n} completions within {DEADLINE:?}: {done:?}",
            done.len()
        );
    }
}

/// Opens the device named by `IBVERBS_DEVICE`, or else the first one.
fn open_device() -> ibverbs::Result<ibverbs::Context> {
    let wanted = std::env::var("IBVERBS_DEVICE").ok();
    let devices = ibverbs::devices()?;
    let device = devices
        .iter()
        .find(|d| match (&wanted, d.name()) {
            (None, _) => true,
            (Some(want), Some(name)) => name.to_bytes() == want.as_bytes(),
            (Some(_), None) => false,
        })
        .unwrap_or_else(|| match &wanted {
            Some(want) => panic!("no RDMA device named {want}"),
            None => panic!("no RDMA device available"),
        });
    device.open()
}

/// The GID index to route by on port 1 (the queue pair's port; GID indices are per port): the
/// RoCE v2 entry holding an IPv4 address (`::ffff:a.b.c.d`), which plain-Ethernet networks
/// answer on, or else the port's first entry.
fn routable_gid_index(ctx: &ibverbs::Context) -> ibverbs::Result<u32> {
    let gids = ctx.gid_table()?;
    let entry = gids
        .iter()
        .filter(|e| e.port_num == 1)
        .find(|e| {
            e.gid_type == ibverbs::ibv_gid_type::IBV_GID_TYPE_ROCE_V2 && e.gid.is_ipv4_mapped()
        })
        .or_else(|| gids.iter().find(|e| e.port_num == 1))
        .expect("port 1 has no GID");
    Ok(entry.gid_index)
}
