//! Bounds on the memory that fetched records take: one per member (`share.memory.max.bytes`)
//! and one per engine, shared by every member of a worker ([`MemoryPool`]; the JNI library
//! holds one for all the Connect tasks of its JVM).
//!
//! What is counted, the *decoded bytes*: everything the records of a fetch response keep alive,
//! from the moment the response is decoded until the last of its records is dropped (polled
//! and released by the caller, or dropped from the buffer): the response's own bytes, each
//! decompressed record batch, and the engine's structs per record and per header (a record
//! takes 7 bytes on the wire at least and 88 here, a header 2 and 20). It is charged before
//! each allocation ([`MemoryCharge::charge`]): a compression bomb or a header flood is stopped
//! where it would pass a bound, its bytes never allocated. The charge lives with the buffers it
//! pays for (`batch::RecordData`), so it is given back when they are freed, wherever that is.
//!
//! Three limits apply while a response is decoded:
//! - **one record batch** may take at most its *allowance*: half the member's bound (which is at
//!   most a quarter of the worker's), and never more than [`MAX_DECOMPRESSED_BATCH_BYTES`]. A batch that
//!   needs more can never be decoded by this member: the member fails
//!   ([`Shortfall::Batch`]), naming the batch;
//! - the **member** holds at most its bound (`share.memory.max.bytes`, at most a quarter of the
//!   worker's), and the **worker** at most the pool's limit. A batch that does not fit in what
//!   is free now ([`Shortfall::Member`], [`Shortfall::Worker`]) is not this member's fault:
//!   the rest of the response is released and fetching pauses until memory is free again.
//!
//! A member only sends a fetch while it holds less than half its bound and the worker less than
//! half its limit ([`MemberMemory::has_room`]), so a response normally has at least half a
//! bound to decode into: a batch within its allowance then fits.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use tokio::sync::watch;

/// Largest decompressed size accepted for one record batch, whatever the bounds. A valid gzip,
/// lz4 or zstd stream can expand by 1000× (zstd run-length blocks: over 30000×); real batches
/// are far smaller (producers cut batches at `batch.size`, brokers at `message.max.bytes`).
pub(crate) const MAX_DECOMPRESSED_BATCH_BYTES: usize = 256 * 1024 * 1024;

/// The JVM system property that sets the worker's bound (read by the Java adapter, named here
/// for the messages).
pub const WORKER_BOUND_PROPERTY: &str = "sharesink.engine.memory.max.bytes";

/// The engine setting of a member's bound.
pub const MEMBER_BOUND_KEY: &str = "share.memory.max.bytes";

/// The memory of every member of one engine (a worker): what they hold together, against one
/// limit. Cloned as an `Arc` into each member.
#[derive(Debug)]
pub struct MemoryPool {
    limit: AtomicUsize,
    used: AtomicUsize,
    /// Bumped when what the members hold falls below half the limit: fetchers waiting for room
    /// look again.
    room: watch::Sender<u64>,
}

impl MemoryPool {
    /// A pool of `limit` bytes.
    pub fn new(limit: usize) -> Arc<MemoryPool> {
        Arc::new(MemoryPool {
            limit: AtomicUsize::new(limit.max(1)),
            used: AtomicUsize::new(0),
            room: watch::Sender::new(0),
        })
    }

    /// A pool without a limit of its own: each member is bounded by its own setting only
    /// (what `ShareConsumer::start` gives a member started on its own).
    pub fn unbounded() -> Arc<MemoryPool> {
        MemoryPool::new(usize::MAX)
    }

    pub fn limit(&self) -> usize {
        self.limit.load(SeqCst)
    }

    /// Changes the limit; what is held already stays.
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit.max(1), SeqCst);
        self.room.send_modify(|n| *n += 1);
    }

    /// Bytes the members of this pool hold now.
    pub fn used(&self) -> usize {
        self.used.load(SeqCst)
    }

    fn try_take(&self, n: usize) -> Result<(), usize> {
        let limit = self.limit();
        self.used
            .fetch_update(SeqCst, SeqCst, |used| {
                used.checked_add(n).filter(|total| *total <= limit)
            })
            .map(|_| ())
    }

    fn give_back(&self, n: usize) {
        let before = self.used.fetch_sub(n, SeqCst);
        let half = self.limit() / 2;
        if before >= half && before - n < half {
            self.room.send_modify(|v| *v += 1);
        }
    }
}

/// Which bound a record batch's allowance comes from, for the message of a member that fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// Half of `share.memory.max.bytes` (as capped by the worker's bound).
    Member,
    /// Half of the worker's bound.
    Worker,
    /// [`MAX_DECOMPRESSED_BATCH_BYTES`].
    Decompressed,
}

/// Why a charge was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shortfall {
    /// One record batch needs more than its allowance: it can never be decoded here.
    Batch { allowance: usize, bound: Bound },
    /// The member holds too much now to take it.
    Member { limit: usize, used: usize },
    /// The worker's members hold too much now to take it.
    Worker { limit: usize, used: usize },
}

impl Shortfall {
    /// Whether the input itself is at fault (it can never fit), not what is held meanwhile.
    pub fn is_poison(&self) -> bool {
        matches!(self, Shortfall::Batch { .. })
    }
}

impl std::fmt::Display for Shortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shortfall::Batch { allowance, bound } => {
                let of = match bound {
                    Bound::Member => format!("half of this member's bound {MEMBER_BOUND_KEY}"),
                    Bound::Worker => format!(
                        "an eighth of the worker's bound {WORKER_BOUND_PROPERTY}: half of what \
                         one member may hold of it"
                    ),
                    Bound::Decompressed => "the engine's cap on one decompressed batch".into(),
                };
                write!(
                    f,
                    "one record batch takes more than {} ({of})",
                    mib(*allowance)
                )
            }
            Shortfall::Member { limit, used } => write!(
                f,
                "this member holds {} of its {} ({MEMBER_BOUND_KEY})",
                mib(*used),
                mib(*limit)
            ),
            Shortfall::Worker { limit, used } => write!(
                f,
                "the worker's members hold {} of its {} ({WORKER_BOUND_PROPERTY})",
                mib(*used),
                mib(*limit)
            ),
        }
    }
}

/// Bytes for a message: "1.5 MiB".
pub(crate) fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// One member's memory: its own bound, inside the worker's pool.
#[derive(Debug)]
pub(crate) struct MemberMemory {
    configured: usize,
    used: AtomicUsize,
    pool: Arc<MemoryPool>,
    /// Bumped when what this member holds falls below half its bound.
    room: watch::Sender<u64>,
}

impl MemberMemory {
    pub fn new(configured: usize, pool: Arc<MemoryPool>) -> Arc<MemberMemory> {
        Arc::new(MemberMemory {
            configured,
            used: AtomicUsize::new(0),
            pool,
            room: watch::Sender::new(0),
        })
    }

    /// The member's bound: its setting, at most a quarter of the worker's, so that no single
    /// member can hold the worker's memory (nor keep every member from fetching by holding half
    /// of it).
    pub fn limit(&self) -> usize {
        self.configured.min(self.pool.limit() / 4).max(1)
    }

    pub fn used(&self) -> usize {
        self.used.load(SeqCst)
    }

    /// What one record batch may take (see the module docs), and which bound sets it.
    pub fn batch_allowance(&self) -> (usize, Bound) {
        let member = self.configured / 2;
        let worker = self.pool.limit() / 8; // half of the member's share
        if MAX_DECOMPRESSED_BATCH_BYTES <= member.min(worker) {
            (MAX_DECOMPRESSED_BATCH_BYTES, Bound::Decompressed)
        } else if member <= worker {
            (member.max(1), Bound::Member)
        } else {
            (worker.max(1), Bound::Worker)
        }
    }

    /// Whether a fetch may go out: the member holds less than half its bound, and the worker's
    /// members less than half the worker's.
    pub fn has_room(&self) -> bool {
        self.used() < self.limit() / 2 && self.pool.used() < self.pool.limit() / 2
    }

    /// Receivers that change when room is made: this member's, then the worker's.
    pub fn subscribe_room(&self) -> (watch::Receiver<u64>, watch::Receiver<u64>) {
        (self.room.subscribe(), self.pool.room.subscribe())
    }

    fn try_take(&self, n: usize) -> Result<(), Shortfall> {
        let limit = self.limit();
        if let Err(used) = self.used.fetch_update(SeqCst, SeqCst, |used| {
            used.checked_add(n).filter(|total| *total <= limit)
        }) {
            return Err(Shortfall::Member { limit, used });
        }
        if let Err(used) = self.pool.try_take(n) {
            self.give_back(n);
            return Err(Shortfall::Worker {
                limit: self.pool.limit(),
                used,
            });
        }
        Ok(())
    }

    fn give_back(&self, n: usize) {
        let before = self.used.fetch_sub(n, SeqCst);
        let half = self.limit() / 2;
        if before >= half && before - n < half {
            self.room.send_modify(|v| *v += 1);
        }
    }
}

/// What one fetch response's records hold, charged to their member until dropped. Lives in the
/// `RecordData` that owns the buffers it pays for.
#[derive(Debug, Default)]
pub(crate) struct MemoryCharge {
    member: Option<Arc<MemberMemory>>,
    bytes: usize,
    /// Charged since [`MemoryCharge::start_batch`], against the batch's allowance.
    batch_bytes: usize,
}

impl MemoryCharge {
    pub fn new(member: Arc<MemberMemory>) -> MemoryCharge {
        MemoryCharge {
            member: Some(member),
            bytes: 0,
            batch_bytes: 0,
        }
    }

    /// A record batch starts: what follows counts against its allowance.
    pub fn start_batch(&mut self) {
        self.batch_bytes = 0;
    }

    /// Takes `n` more bytes from the member and the worker, before they are allocated. A charge
    /// without a member (tests, batches built by hand) takes from no one, but still holds one
    /// record batch to [`MAX_DECOMPRESSED_BATCH_BYTES`].
    pub fn charge(&mut self, n: usize) -> Result<(), Shortfall> {
        let (allowance, bound) = match &self.member {
            Some(member) => member.batch_allowance(),
            None => (MAX_DECOMPRESSED_BATCH_BYTES, Bound::Decompressed),
        };
        if self.batch_bytes.saturating_add(n) > allowance {
            return Err(Shortfall::Batch { allowance, bound });
        }
        if let Some(member) = &self.member {
            member.try_take(n)?;
        }
        self.bytes += n;
        self.batch_bytes += n;
        Ok(())
    }

    /// What the current record batch may still take before its allowance is spent.
    pub fn batch_left(&self) -> usize {
        let allowance = match &self.member {
            Some(member) => member.batch_allowance().0,
            None => MAX_DECOMPRESSED_BATCH_BYTES,
        };
        allowance.saturating_sub(self.batch_bytes)
    }

    /// Takes `n` bytes that belong to no record batch (the response's own bytes, the vector
    /// of its records): held to the member's and the worker's bounds only.
    pub fn charge_held(&mut self, n: usize) -> Result<(), Shortfall> {
        if let Some(member) = &self.member {
            member.try_take(n)?;
        }
        self.bytes += n;
        Ok(())
    }

    /// Bytes charged so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Gives back the bytes charged since `mark` (a value of [`MemoryCharge::bytes`]): what a
    /// batch that was taken back had charged.
    pub fn give_back_to(&mut self, mark: usize) {
        let n = self.bytes.saturating_sub(mark);
        if n == 0 {
            return;
        }
        if let Some(member) = &self.member {
            member.give_back(n);
            member.pool.give_back(n);
        }
        self.bytes = mark;
        self.batch_bytes = self.batch_bytes.saturating_sub(n);
    }
}

impl Drop for MemoryCharge {
    fn drop(&mut self) {
        self.give_back_to(0);
    }
}

/// Grows `v` so that one more element fits, charging the capacity it adds first (doubling, as
/// `Vec` does, but never allocating what was not charged).
pub(crate) fn reserve_one<T>(v: &mut Vec<T>, charge: &mut MemoryCharge) -> Result<(), Shortfall> {
    if v.len() < v.capacity() {
        return Ok(());
    }
    let more = v.capacity().max(16);
    charge.charge(more.saturating_mul(std::mem::size_of::<T>()))?;
    v.reserve_exact(more);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1024 * 1024;

    #[test]
    fn a_member_is_held_to_its_bound_and_the_worker_to_its_own() {
        let pool = MemoryPool::new(400 * MIB);
        let a = MemberMemory::new(200 * MIB, pool.clone());
        let b = MemberMemory::new(200 * MIB, pool.clone());
        // A member takes at most a quarter of the worker.
        assert_eq!(a.limit(), 100 * MIB);
        assert_eq!(a.batch_allowance(), (50 * MIB, Bound::Worker));
        let mut ca = MemoryCharge::new(a.clone());
        for _ in 0..4 {
            ca.start_batch();
            ca.charge(25 * MIB).unwrap();
        }
        assert_eq!(a.used(), 100 * MIB);
        ca.start_batch();
        assert_eq!(
            ca.charge(1),
            Err(Shortfall::Member {
                limit: 100 * MIB,
                used: 100 * MIB
            })
        );
        assert!(!a.has_room(), "a member at its bound does not fetch");
        // One batch beyond its allowance is poison, however much is free.
        let mut cb = MemoryCharge::new(b.clone());
        cb.start_batch();
        cb.charge(30 * MIB).unwrap();
        let e = cb.charge(30 * MIB).unwrap_err();
        assert!(e.is_poison(), "{e:?}");
        assert!(e.to_string().contains(WORKER_BOUND_PROPERTY), "{e}");
        assert_eq!(pool.used(), 130 * MIB);
        // Dropping the charges gives everything back, to both.
        drop(ca);
        drop(cb);
        assert_eq!((a.used(), b.used(), pool.used()), (0, 0, 0));
    }

    #[test]
    fn members_together_stop_at_the_workers_bound() {
        let pool = MemoryPool::new(100 * MIB);
        let members: Vec<_> = (0..5)
            .map(|_| MemberMemory::new(1 << 40, pool.clone()))
            .collect();
        let mut charges: Vec<_> = members
            .iter()
            .map(|m| MemoryCharge::new(m.clone()))
            .collect();
        // Each member within its own bound (25 MiB) and allowance (12.5 MiB per batch).
        let mut refused = None;
        'fill: for round in 0..2 {
            for (i, c) in charges.iter_mut().enumerate() {
                c.start_batch();
                if let Err(e) = c.charge(12 * MIB) {
                    refused = Some((round, i, e));
                    break 'fill;
                }
            }
        }
        let (round, i, e) = refused.expect("the worker's bound was never reached");
        assert_eq!(
            (round, i),
            (1, 3),
            "eight charges of 12 MiB fit in 100 MiB, not nine"
        );
        assert_eq!(
            e,
            Shortfall::Worker {
                limit: 100 * MIB,
                used: 96 * MIB
            }
        );
        assert!(!e.is_poison());
        assert!(e.to_string().contains(WORKER_BOUND_PROPERTY), "{e}");
        assert!(members.iter().all(|m| !m.has_room()), "no member fetches");
        // A member's refused charge left nothing behind.
        assert_eq!(members[3].used(), 12 * MIB);
        assert_eq!(members.iter().map(|m| m.used()).sum::<usize>(), pool.used());
        charges.truncate(2);
        assert_eq!(pool.used(), 48 * MIB);
        assert!(!members[0].has_room(), "at 24 of its 25 MiB");
        assert!(members[4].has_room(), "the worker is below half again");
    }

    #[tokio::test]
    async fn room_made_wakes_who_waits_for_it() {
        let pool = MemoryPool::new(200 * MIB);
        let m = MemberMemory::new(40 * MIB, pool.clone());
        let (mut own, mut worker) = m.subscribe_room();
        let mut c = MemoryCharge::new(m.clone());
        c.start_batch();
        c.charge(15 * MIB).unwrap();
        c.start_batch();
        c.charge(15 * MIB).unwrap();
        assert!(!m.has_room());
        let mark = c.bytes();
        c.start_batch();
        c.charge(5 * MIB).unwrap();
        c.give_back_to(mark);
        assert_eq!(m.used(), 30 * MIB);
        assert!(!own.has_changed().unwrap(), "still above half");
        drop(c);
        assert!(own.has_changed().unwrap());
        assert!(
            !worker.has_changed().unwrap(),
            "the worker never was at half"
        );
        own.mark_unchanged();
        worker.mark_unchanged();
    }

    #[test]
    fn vectors_grow_only_by_what_was_charged() {
        let pool = MemoryPool::new(1 << 30);
        let m = MemberMemory::new(1 << 20, pool);
        let mut c = MemoryCharge::new(m.clone());
        c.start_batch();
        let mut v: Vec<u64> = Vec::new();
        let mut refused = None;
        for i in 0..1_000_000u64 {
            if let Err(e) = reserve_one(&mut v, &mut c) {
                refused = Some(e);
                break;
            }
            v.push(i);
        }
        assert!(refused.unwrap().is_poison(), "512 KiB allowance");
        assert!(
            v.capacity() * 8 <= c.bytes(),
            "{} > {}",
            v.capacity() * 8,
            c.bytes()
        );
        assert!(c.bytes() <= 512 * 1024);
    }
}
