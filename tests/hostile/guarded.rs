//! Guarded memory: every case runs against fresh regions, each the first three pages of a buffer
//! of four (see the suite's top), filled with a pattern before the case and compared after it.

use std::ops::Range;

use uverbs::{ibv_access_flags, MemoryRegion, ProtectionDomain, RemoteMemory, Sge};

pub const PAGE: usize = 4096;
/// The registered part of a guarded buffer.
pub const REGION: usize = 3 * PAGE;
/// The whole buffer, the unregistered tail included.
pub const BUFFER: usize = 4 * PAGE;
/// The granted page.
pub const GRANTED: Range<usize> = PAGE..2 * PAGE;

/// Which guarded region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mem {
    /// Local source (full access).
    Tx,
    /// Local receive buffers (full access).
    Rx,
    /// Remote target (full access).
    Target,
    /// Remote, `LOCAL_WRITE | REMOTE_READ` only.
    ReadOnly,
    /// Remote, `LOCAL_WRITE | REMOTE_WRITE` only.
    WriteOnly,
    /// Full access, but in the other protection domain.
    Foreign,
    /// Never named by any request.
    Bystander,
}

const MEMS: [Mem; 7] = [
    Mem::Tx,
    Mem::Rx,
    Mem::Target,
    Mem::ReadOnly,
    Mem::WriteOnly,
    Mem::Foreign,
    Mem::Bystander,
];

/// A memory region over the first [`REGION`] bytes of a buffer of [`BUFFER`] bytes.
pub struct Guarded {
    pub mr: MemoryRegion<u8>,
    /// The buffer's start, valid for all [`BUFFER`] bytes (the tail is spare capacity of the
    /// region's `Vec`, which never touches it).
    base: *const u8,
}

impl Guarded {
    fn new(pd: &ProtectionDomain<'_>, access: ibv_access_flags, seed: u8) -> Guarded {
        let mut v: Vec<u8> = Vec::with_capacity(BUFFER);
        v.extend((0..BUFFER).map(|i| pattern(seed, i)));
        v.truncate(REGION);
        let base = v.as_ptr();
        let mr = pd.register(v, access).unwrap();
        assert_eq!(mr.as_ptr(), base, "the buffer did not move");
        Guarded { mr, base }
    }

    /// All [`BUFFER`] bytes, tail included.
    fn bytes(&self) -> Vec<u8> {
        // SAFETY: `base` points to the start of the region's `Vec` buffer, allocated with capacity
        // BUFFER and alive as long as `self.mr`; every byte was initialised before registration
        // and the `Vec` never writes past its length. The devices write only inside the
        // registered part, and the queue pairs are gone when this is called in the checks.
        unsafe { std::slice::from_raw_parts(self.base, BUFFER) }.to_vec()
    }

    pub fn addr(&self) -> u64 {
        self.base as u64
    }

    /// The granted page as a peer targets it.
    pub fn granted(&self) -> RemoteMemory {
        RemoteMemory {
            addr: self.addr() + PAGE as u64,
            rkey: self.mr.rkey().key,
            len: PAGE as u64,
        }
    }

    /// `len` bytes at `offset` of the granted page.
    pub fn sge(&self, offset: usize, len: usize) -> Sge {
        self.mr
            .sge(PAGE + offset..PAGE + offset + len)
            .expect("inside the granted page")
    }
}

fn pattern(seed: u8, i: usize) -> u8 {
    (i as u8).wrapping_mul(0x3b) ^ seed ^ (i >> 8) as u8
}

/// A case's guarded regions, one per [`Mem`].
pub struct Mems {
    pub tx: Guarded,
    pub rx: Guarded,
    pub target: Guarded,
    pub ro: Guarded,
    pub wo: Guarded,
    pub foreign: Guarded,
    pub bystander: Guarded,
}

impl Mems {
    /// Fresh regions: all in `pd` but the foreign one, which is in `other`.
    pub fn new(pd: &ProtectionDomain<'_>, other: &ProtectionDomain<'_>) -> Mems {
        use ibv_access_flags as A;
        let all = A::IBV_ACCESS_LOCAL_WRITE
            | A::IBV_ACCESS_REMOTE_WRITE
            | A::IBV_ACCESS_REMOTE_READ
            | A::IBV_ACCESS_REMOTE_ATOMIC;
        Mems {
            tx: Guarded::new(pd, all, 0x11),
            rx: Guarded::new(pd, all, 0x22),
            target: Guarded::new(pd, all, 0x33),
            ro: Guarded::new(
                pd,
                A::IBV_ACCESS_LOCAL_WRITE | A::IBV_ACCESS_REMOTE_READ,
                0x44,
            ),
            wo: Guarded::new(
                pd,
                A::IBV_ACCESS_LOCAL_WRITE | A::IBV_ACCESS_REMOTE_WRITE,
                0x55,
            ),
            foreign: Guarded::new(other, all, 0x66),
            bystander: Guarded::new(pd, all, 0x77),
        }
    }

    fn get(&self, m: Mem) -> &Guarded {
        match m {
            Mem::Tx => &self.tx,
            Mem::Rx => &self.rx,
            Mem::Target => &self.target,
            Mem::ReadOnly => &self.ro,
            Mem::WriteOnly => &self.wo,
            Mem::Foreign => &self.foreign,
            Mem::Bystander => &self.bystander,
        }
    }

    /// Every byte of every buffer, tails included, for [`damage`](Self::damage) to compare with.
    pub fn snapshot(&self) -> Vec<Vec<u8>> {
        MEMS.iter().map(|&w| self.get(w).bytes()).collect()
    }

    /// Each byte that differs from `before` (a [`snapshot`](Self::snapshot)) outside the ranges
    /// `writes` allows, as `Mem[offset] old -> new`. Call it with the queue pairs gone, so that
    /// nothing can still write.
    pub fn damage(&self, before: &[Vec<u8>], writes: &[(Mem, Range<usize>)]) -> Vec<String> {
        let mut damage = Vec::new();
        for (i, &w) in MEMS.iter().enumerate() {
            let after = self.get(w).bytes();
            for (at, (x, y)) in before[i].iter().zip(&after).enumerate() {
                let allowed = writes.iter().any(|(mem, r)| *mem == w && r.contains(&at));
                if x != y && !allowed {
                    damage.push(format!("{w:?}[{at}] {x:#04x} -> {y:#04x}"));
                }
            }
        }
        damage
    }
}
