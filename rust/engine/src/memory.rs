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
//! **No member starves another.** Each member *reserves* room for one fetch of its own when it
//! starts ([`MemberMemory::reserve`]): `fetch.max.bytes`, at most its batch allowance. The
//! reservations together never pass the worker's limit; a member whose reservation does not
//! fit is refused at start, naming the bounds. What a member holds counts against its own
//! reservation first; only what it holds beyond that comes from the *shared* part of the pool
//! (the limit less every reservation). So members that hold all they may (a sink whose `put`
//! stalls keeps its buffer full) can use up the shared part, never another member's
//! reservation.
//!
//! A member sends a fetch only while it holds less than half its bound and can take a whole
//! fetch's reservation without passing the worker's limit ([`MemberMemory::has_room`]): under
//! pressure it waits rather than fetch records it would have to release (a release costs a
//! delivery attempt). A member that holds nothing can always fetch.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

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
/// limit, and what each member reserved of it. Cloned as an `Arc` into each member.
#[derive(Debug)]
pub struct MemoryPool {
    limit: AtomicUsize,
    /// Bytes every member holds together (a mirror of the sum, for reading without the lock).
    used: AtomicUsize,
    shares: Mutex<Shares>,
    /// Bumped when the shared part gets room back: fetchers waiting for room look again.
    room: watch::Sender<u64>,
}

/// How the pool is divided: one reservation per member, and the shared rest.
#[derive(Debug, Default)]
struct Shares {
    /// Sum of the members' reservations.
    reserved: usize,
    members: usize,
    /// Bytes members hold beyond their own reservations: what they took of the shared part.
    shared_used: usize,
}

impl MemoryPool {
    /// A pool of `limit` bytes.
    pub fn new(limit: usize) -> Arc<MemoryPool> {
        Arc::new(MemoryPool {
            limit: AtomicUsize::new(limit.max(1)),
            used: AtomicUsize::new(0),
            shares: Mutex::new(Shares::default()),
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

    /// Changes the limit; what is held and reserved already stays.
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit.max(1), SeqCst);
        self.room.send_modify(|n| *n += 1);
    }

    /// Bytes the members of this pool hold now.
    pub fn used(&self) -> usize {
        self.used.load(SeqCst)
    }

    /// Bytes the members reserved together, and how many members reserved them.
    pub fn reserved(&self) -> (usize, usize) {
        let shares = self.shares.lock().expect("memory shares");
        (shares.reserved, shares.members)
    }

    /// Bytes of the shared part no member holds now.
    fn shared_free(&self) -> usize {
        let shares = self.shares.lock().expect("memory shares");
        self.limit()
            .saturating_sub(shares.reserved)
            .saturating_sub(shares.shared_used)
    }

    /// Reserves `bytes` for a member if the reservations together stay within the limit. What
    /// members hold of the shared part meanwhile does not count: whether a task starts depends
    /// on the configuration alone, never on the load. The shared part shrinks; what members
    /// held beyond it stays theirs, no member takes more of it until they hold less, and the
    /// worker's limit still holds every take ([`MemoryPool::try_take_total`]).
    fn reserve(&self, bytes: usize) -> Result<(), ReservationRefused> {
        let mut shares = self.shares.lock().expect("memory shares");
        let limit = self.limit();
        if shares.reserved.saturating_add(bytes) > limit {
            return Err(ReservationRefused {
                reservation: bytes,
                reserved: shares.reserved,
                members: shares.members,
                limit,
            });
        }
        shares.reserved += bytes;
        shares.members += 1;
        Ok(())
    }

    fn unreserve(&self, bytes: usize) {
        let mut shares = self.shares.lock().expect("memory shares");
        shares.reserved -= bytes;
        shares.members -= 1;
        drop(shares);
        self.room.send_modify(|n| *n += 1);
    }

    /// Takes `n` bytes of the shared part, if that much is free.
    fn take_shared(&self, n: usize) -> Result<(), ()> {
        let mut shares = self.shares.lock().expect("memory shares");
        let room = self
            .limit()
            .saturating_sub(shares.reserved)
            .saturating_sub(shares.shared_used);
        if n > room {
            return Err(());
        }
        shares.shared_used += n;
        Ok(())
    }

    /// Takes `n` bytes of the worker's limit: the hard bound, whatever the shares say.
    fn try_take_total(&self, n: usize) -> Result<(), ()> {
        let limit = self.limit();
        self.used
            .fetch_update(SeqCst, SeqCst, |used| {
                used.checked_add(n).filter(|total| *total <= limit)
            })
            .map(|_| ())
            .map_err(|_| ())
    }

    /// Bytes of the worker's limit no member holds now.
    fn free(&self) -> usize {
        self.limit().saturating_sub(self.used())
    }

    fn give_back_shared(&self, n: usize) {
        let mut shares = self.shares.lock().expect("memory shares");
        shares.shared_used -= n;
        drop(shares);
        self.room.send_modify(|v| *v += 1);
    }
}

/// A member the worker's pool cannot guarantee room for one fetch of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReservationRefused {
    pub reservation: usize,
    pub reserved: usize,
    pub members: usize,
    pub limit: usize,
}

impl std::fmt::Display for ReservationRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "this member needs {} of the worker's memory for one fetch of its own (fetch.max.bytes, \
             at most half of {MEMBER_BOUND_KEY} and an eighth of {WORKER_BOUND_PROPERTY}); {} other \
             members reserved {} of the worker's {} ({WORKER_BOUND_PROPERTY}); lower \
             fetch.max.bytes or raise {WORKER_BOUND_PROPERTY} (or run fewer tasks on this worker)",
            mib(self.reservation),
            self.members,
            mib(self.reserved),
            mib(self.limit),
        )
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

/// One member's memory: its own bound and its reservation, inside the worker's pool. The
/// reservation goes back to the pool when the last charge of the member is dropped.
#[derive(Debug)]
pub(crate) struct MemberMemory {
    configured: usize,
    reservation: usize,
    /// What the member holds; the lock orders a take or a give-back with its shared-part share.
    held: Mutex<usize>,
    /// A mirror of `held`, for reading without the lock.
    used: AtomicUsize,
    /// What the last response that did not fit needed; 0 once one fits.
    wanted: AtomicUsize,
    pool: Arc<MemoryPool>,
    /// Bumped when this member may fetch again after it could not.
    room: watch::Sender<u64>,
}

impl MemberMemory {
    /// A member bounded by `configured` (`share.memory.max.bytes`) that reserves room for one
    /// fetch of `fetch_bytes` (`fetch.max.bytes`, at most its batch allowance) in `pool`.
    pub fn reserve(
        configured: usize,
        fetch_bytes: usize,
        pool: Arc<MemoryPool>,
    ) -> Result<Arc<MemberMemory>, ReservationRefused> {
        let allowance = batch_allowance(configured, pool.limit()).0;
        let reservation = fetch_bytes.min(allowance).max(1);
        pool.reserve(reservation)?;
        Ok(Arc::new(MemberMemory {
            configured,
            reservation,
            held: Mutex::new(0),
            used: AtomicUsize::new(0),
            wanted: AtomicUsize::new(0),
            pool,
            room: watch::Sender::new(0),
        }))
    }

    /// A member with the bound and fetch size `config` gives it (`share.memory.max.bytes`,
    /// `fetch.max.bytes`).
    pub fn reserve_for(
        config: &crate::config::ConsumerConfig,
        pool: Arc<MemoryPool>,
    ) -> Result<Arc<MemberMemory>, ReservationRefused> {
        MemberMemory::reserve(
            config.max_memory_bytes,
            config.fetch_max_bytes as usize,
            pool,
        )
    }

    /// A member of `pool` that reserves as little as it can (tests of the bounds alone).
    #[cfg(test)]
    pub fn new(configured: usize, pool: Arc<MemoryPool>) -> Arc<MemberMemory> {
        MemberMemory::reserve(configured, 1, pool).expect("room for a reservation of one byte")
    }

    /// The member's bound: its setting, at most a quarter of the worker's, so that no single
    /// member can hold most of the shared part of the worker's memory.
    pub fn limit(&self) -> usize {
        self.configured.min(self.pool.limit() / 4).max(1)
    }

    pub fn used(&self) -> usize {
        self.used.load(SeqCst)
    }

    /// The room reserved for this member: the most one of its fetches asks for.
    pub fn reservation(&self) -> usize {
        self.reservation
    }

    /// What one record batch may take (see the module docs), and which bound sets it.
    pub fn batch_allowance(&self) -> (usize, Bound) {
        batch_allowance(self.configured, self.pool.limit())
    }

    /// Whether a fetch may go out: the member holds less than half its bound, and a whole
    /// fetch's reservation fits in what it has left of its own plus the free shared part.
    pub fn has_room(&self) -> bool {
        self.may_fetch(self.used(), self.pool.shared_free())
    }

    fn may_fetch(&self, used: usize, shared_free: usize) -> bool {
        let fetch = self.reservation.max(self.wanted.load(SeqCst));
        let needs_shared = self.beyond(used.saturating_add(fetch)) - self.beyond(used);
        used < self.limit() / 2 && shared_free >= needs_shared && self.pool.free() >= fetch
    }

    /// A response needed `bytes` (at least) and did not fit beside what the worker's members
    /// hold: the next fetch waits until that much fits, rather than fetch records it would
    /// release again.
    fn note_wanted(&self, bytes: usize) {
        self.wanted.fetch_max(bytes, SeqCst);
    }

    /// A response was decoded whole: fetches ask for the reservation's room again.
    pub fn fetched_whole(&self) {
        self.wanted.store(0, SeqCst);
    }

    /// Receivers that change when room is made: this member's, then the worker's.
    pub fn subscribe_room(&self) -> (watch::Receiver<u64>, watch::Receiver<u64>) {
        (self.room.subscribe(), self.pool.room.subscribe())
    }

    /// The part of `held` bytes that lies beyond the reservation.
    fn beyond(&self, held: usize) -> usize {
        held.saturating_sub(self.reservation)
    }

    fn try_take(&self, n: usize) -> Result<(), Shortfall> {
        let limit = self.limit();
        let mut held = self.held.lock().expect("member memory");
        let after = match held.checked_add(n).filter(|total| *total <= limit) {
            Some(after) => after,
            None => return Err(Shortfall::Member { limit, used: *held }),
        };
        let shared = self.beyond(after) - self.beyond(*held);
        let worker_short = || Shortfall::Worker {
            limit: self.pool.limit(),
            used: self.pool.used(),
        };
        if shared > 0 && self.pool.take_shared(shared).is_err() {
            return Err(worker_short());
        }
        if self.pool.try_take_total(n).is_err() {
            if shared > 0 {
                self.pool.give_back_shared(shared);
            }
            return Err(worker_short());
        }
        *held = after;
        self.used.store(after, SeqCst);
        Ok(())
    }

    /// Takes `n` bytes whatever the bounds say ([`MemoryCharge::for_frame`]).
    fn take_forced(&self, n: usize) {
        let mut held = self.held.lock().expect("member memory");
        let after = held.saturating_add(n);
        let shared = self.beyond(after) - self.beyond(*held);
        if shared > 0 {
            self.pool.shares.lock().expect("memory shares").shared_used += shared;
        }
        self.pool.used.fetch_add(n, SeqCst);
        *held = after;
        self.used.store(after, SeqCst);
    }

    fn give_back(&self, n: usize) {
        let mut held = self.held.lock().expect("member memory");
        let before = *held;
        let after = before - n;
        let shared = self.beyond(before) - self.beyond(after);
        *held = after;
        self.used.store(after, SeqCst);
        let pool_before = self.pool.used.fetch_sub(n, SeqCst);
        if shared > 0 {
            self.pool.give_back_shared(shared);
        } else if self.pool.limit().saturating_sub(pool_before) < self.pool.limit() / 4 {
            // The worker was nearly full (members held more than the shared part while a new
            // member reserved): who waits for room in it looks again.
            self.pool.room.send_modify(|v| *v += 1);
        }
        drop(held);
        let shared_free = self.pool.shared_free();
        if self.may_fetch(after, shared_free) && !self.may_fetch(before, shared_free) {
            self.room.send_modify(|v| *v += 1);
        }
    }
}

impl Drop for MemberMemory {
    fn drop(&mut self) {
        self.pool.unreserve(self.reservation);
    }
}

/// What one record batch of a member bounded by `configured` in a pool of `pool_limit` may
/// take, and which bound sets it.
fn batch_allowance(configured: usize, pool_limit: usize) -> (usize, Bound) {
    let member = configured / 2;
    let worker = pool_limit / 8; // half of the member's share
    if MAX_DECOMPRESSED_BATCH_BYTES <= member.min(worker) {
        (MAX_DECOMPRESSED_BATCH_BYTES, Bound::Decompressed)
    } else if member <= worker {
        (member.max(1), Bound::Member)
    } else {
        (worker.max(1), Bound::Worker)
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

    /// A response frame of `n` bytes about to be read for `member`: charged before it is
    /// allocated, within the bounds when they have room, else counted all the same (the frame
    /// is within the bound of its request, and a fetch went out only with room for its
    /// reservation; reading it is how the connection stays in step): decoding then finds the
    /// member and the worker full and releases the records.
    pub fn for_frame(member: Arc<MemberMemory>, n: usize) -> MemoryCharge {
        if member.try_take(n).is_err() {
            member.take_forced(n);
        }
        MemoryCharge {
            member: Some(member),
            bytes: n,
            batch_bytes: 0,
        }
    }

    /// Whether this charge pays for anything (a frame read for a member).
    pub fn is_charged(&self) -> bool {
        self.member.is_some()
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
        self.take(n)?;
        self.batch_bytes += n;
        Ok(())
    }

    /// Counts `n` bytes against the current batch's allowance without taking them (they are
    /// taken as the vector they go into grows: [`reserve_one`]).
    fn count_in_batch(&mut self, n: usize) -> Result<(), Shortfall> {
        let (allowance, bound) = match &self.member {
            Some(member) => member.batch_allowance(),
            None => (MAX_DECOMPRESSED_BATCH_BYTES, Bound::Decompressed),
        };
        if self.batch_bytes.saturating_add(n) > allowance {
            return Err(Shortfall::Batch { allowance, bound });
        }
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
        self.take(n)
    }

    fn take(&mut self, n: usize) -> Result<(), Shortfall> {
        if let Some(member) = &self.member {
            if let Err(shortfall) = member.try_take(n) {
                if let Shortfall::Worker { .. } = shortfall {
                    member.note_wanted(self.bytes.saturating_add(n));
                }
                return Err(shortfall);
            }
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
/// `Vec` does, but never allocating what was not charged). The vector holds the elements of
/// every batch of a response: its growth is charged to the member and the worker, and only the
/// element itself counts against the current batch's allowance, so a doubling during a small
/// batch never makes that batch look like one that can never fit.
pub(crate) fn reserve_one<T>(v: &mut Vec<T>, charge: &mut MemoryCharge) -> Result<(), Shortfall> {
    charge.count_in_batch(std::mem::size_of::<T>())?;
    if v.len() < v.capacity() {
        return Ok(());
    }
    let more = v.capacity().max(16);
    charge.charge_held(more.saturating_mul(std::mem::size_of::<T>()))?;
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
        assert!(
            members[..3].iter().all(|m| !m.has_room()),
            "members at half their bound do not fetch"
        );
        // A member's refused charge left nothing behind.
        assert_eq!(members[3].used(), 12 * MIB);
        assert_eq!(members.iter().map(|m| m.used()).sum::<usize>(), pool.used());
        charges.truncate(2);
        assert_eq!(pool.used(), 48 * MIB);
        assert!(!members[0].has_room(), "at 24 of its 25 MiB");
        assert!(members[4].has_room());
    }

    #[tokio::test]
    async fn members_that_hold_all_they_may_leave_another_members_reservation_alone() {
        let pool = MemoryPool::new(100 * MIB);
        let victim = MemberMemory::reserve(32 * MIB, 8 * MIB, pool.clone()).unwrap();
        let hogs: Vec<_> = (0..4)
            .map(|_| MemberMemory::reserve(1 << 40, 8 * MIB, pool.clone()).unwrap())
            .collect();
        assert_eq!(pool.reserved(), (40 * MIB, 5));
        assert_eq!(victim.reservation(), 8 * MIB);
        // Stalled sinks: each hog fills its bound (a quarter of the pool) in 1 MiB batches,
        // its own 8 MiB first, then what the shared 60 MiB has left.
        let mut held = Vec::new();
        for hog in &hogs {
            let mut charge = MemoryCharge::new(hog.clone());
            while charge.bytes() < hog.limit() {
                charge.start_batch();
                if charge.charge(MIB).is_err() {
                    break;
                }
            }
            held.push(charge);
        }
        assert_eq!(
            pool.used(),
            92 * MIB,
            "four own 8 MiB and the shared 60 MiB"
        );
        assert!(hogs.iter().all(|h| !h.has_room()));
        // The old gate (no fetch while the worker is half full) stopped everyone here.
        let (own_room, _) = victim.subscribe_room();
        assert!(victim.has_room(), "the victim's reservation is whole");
        let mut fetched = MemoryCharge::new(victim.clone());
        fetched.start_batch();
        fetched.charge(8 * MIB).unwrap();
        assert!(
            !victim.has_room(),
            "no room for a second fetch: it waits rather than fetch records to release"
        );
        drop(fetched);
        assert!(
            victim.has_room(),
            "polled and dropped: room for the next fetch"
        );
        assert!(own_room.has_changed().unwrap());
        // A response that needs more than the reservation and does not fit: the victim waits
        // for that much room, though it holds nothing, rather than fetch records to release.
        let mut response = MemoryCharge::new(victim.clone());
        response.start_batch();
        response.charge(6 * MIB).unwrap();
        response.start_batch();
        assert!(matches!(
            response.charge(4 * MIB),
            Err(Shortfall::Worker { .. })
        ));
        drop(response);
        assert!(!victim.has_room(), "10 MiB do not fit beside the hogs");
        // A hog that lets go gives the shared part back to everyone.
        held.truncate(3);
        assert_eq!(pool.used(), 75 * MIB, "the last hog got 17 MiB");
        assert!(victim.has_room());
        victim.fetched_whole();
        drop(held);
        drop(hogs);
        assert_eq!(pool.reserved(), (8 * MIB, 1));
    }

    #[test]
    fn a_member_whose_reservation_does_not_fit_is_refused_naming_the_bounds() {
        let pool = MemoryPool::new(64 * MIB);
        // An allowance of an eighth of the pool: 8 MiB reserved for a fetch of 50 MiB.
        let members: Vec<_> = (0..8)
            .map(|_| MemberMemory::reserve(200 * MIB, 50 * MIB, pool.clone()).unwrap())
            .collect();
        assert_eq!(pool.reserved(), (64 * MIB, 8));
        let refused = MemberMemory::reserve(200 * MIB, 50 * MIB, pool.clone()).unwrap_err();
        assert_eq!(refused.reservation, 8 * MIB);
        assert_eq!(refused.members, 8);
        let message = refused.to_string();
        for named in ["fetch.max.bytes", WORKER_BOUND_PROPERTY, "64.0 MiB"] {
            assert!(message.contains(named), "{message}");
        }
        drop(members);
        assert_eq!(pool.reserved(), (0, 0));
        // What members hold meanwhile does not decide who starts: a hog holds 8 MiB of the
        // shared part, and seven members still reserve the 56 MiB the hog did not reserve.
        let hog = MemberMemory::reserve(1 << 40, 8 * MIB, pool.clone()).unwrap();
        let mut charge = MemoryCharge::new(hog.clone());
        for _ in 0..16 {
            charge.start_batch();
            charge.charge(MIB).unwrap();
        }
        assert_eq!(pool.used(), 16 * MIB);
        let more: Vec<_> = (0..7)
            .map(|_| MemberMemory::reserve(1 << 40, 8 * MIB, pool.clone()).unwrap())
            .collect();
        // The worker's limit still holds: the newcomers have 48 MiB between them until the hog
        // lets go, and none fetches beyond what is free.
        let mut taken = Vec::new();
        for m in &more {
            let mut c = MemoryCharge::new(m.clone());
            c.start_batch();
            if c.charge(8 * MIB).is_ok() {
                taken.push(c);
            }
        }
        assert_eq!((taken.len(), pool.used()), (6, 64 * MIB));
        assert!(more.iter().all(|m| !m.has_room()));
        drop(charge);
        assert_eq!(
            more.iter().filter(|m| m.has_room()).count(),
            1,
            "the one without records; the others hold half their bound"
        );
        drop(taken);
    }

    #[test]
    fn a_frame_read_while_the_worker_is_full_is_counted_and_decoding_finds_no_room() {
        let pool = MemoryPool::new(64 * MIB);
        let hog = MemberMemory::reserve(1 << 40, 8 * MIB, pool.clone()).unwrap();
        let member = MemberMemory::reserve(1 << 40, 8 * MIB, pool.clone()).unwrap();
        let mut held = MemoryCharge::new(hog.clone());
        for _ in 0..16 {
            held.start_batch();
            held.charge(MIB).unwrap();
        }
        let mut other = MemoryCharge::new(member.clone());
        for _ in 0..6 {
            other.start_batch();
            other.charge(MIB).unwrap();
        }
        // 16 + 6 of 64 MiB held; 40 MiB shared, 8 of it taken. A frame of 12 MiB for `member`
        // passes its reservation by 10 MiB: it fits, charged as any take.
        let frame = MemoryCharge::for_frame(member.clone(), 12 * MIB);
        assert_eq!((member.used(), pool.used()), (18 * MIB, 34 * MIB));
        drop(frame);
        // The same frame when the member is at its bound: counted all the same, and what the
        // decoding charges next is refused, so its records are released.
        let mut frame = MemoryCharge::for_frame(member.clone(), 12 * MIB);
        let more = MemoryCharge::for_frame(member.clone(), 2 * MIB);
        assert_eq!(member.used(), 20 * MIB, "over its 16 MiB bound");
        frame.start_batch();
        assert!(matches!(frame.charge(1), Err(Shortfall::Member { .. })));
        drop((frame, more, other, held));
        assert_eq!((member.used(), hog.used(), pool.used()), (0, 0, 0));
        assert_eq!(pool.shared_free(), 48 * MIB);
    }

    #[test]
    fn takes_and_give_backs_from_many_threads_leave_nothing_behind() {
        let pool = MemoryPool::new(64 * MIB);
        let members: Vec<_> = (0..4)
            .map(|_| MemberMemory::reserve(1 << 40, 2 * MIB, pool.clone()).unwrap())
            .collect();
        std::thread::scope(|s| {
            for (i, member) in members.iter().enumerate() {
                for t in 0..2 {
                    let member = member.clone();
                    s.spawn(move || {
                        let mut kept = Vec::new();
                        for n in 0..2_000usize {
                            let mut charge = MemoryCharge::new(member.clone());
                            charge.start_batch();
                            let _ = charge.charge(((n * 7919 + i * 31 + t) % 512 + 1) * 1024);
                            if n % 3 == 0 {
                                kept.push(charge);
                            }
                            if kept.len() > 8 {
                                kept.remove(0);
                            }
                        }
                    });
                }
            }
        });
        assert_eq!(pool.used(), 0);
        assert!(members.iter().all(|m| m.used() == 0));
        assert_eq!(pool.shared_free(), 64 * MIB - 8 * MIB);
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
            worker.has_changed().unwrap(),
            "what it held beyond its reservation went back to the shared part"
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
        assert_eq!(v.len(), 512 * 1024 / 8, "the elements one batch may add");
        assert!(
            v.capacity() * 8 <= c.bytes(),
            "{} > {}",
            v.capacity() * 8,
            c.bytes()
        );
        assert!(c.bytes() <= m.limit());
    }

    #[test]
    fn a_vector_doubling_during_a_small_batch_is_not_that_batchs_fault() {
        let pool = MemoryPool::new(1 << 30);
        let m = MemberMemory::new(4 * MIB, pool); // a batch may take 2 MiB, the member 4
        let mut c = MemoryCharge::new(m.clone());
        let mut v: Vec<u64> = Vec::new();
        let push_batch = |v: &mut Vec<u64>, c: &mut MemoryCharge, n: usize, own: usize| {
            c.start_batch();
            c.charge(own).unwrap(); // what the batch holds of its own (decompressed, say)
            for i in 0..n {
                reserve_one(v, c).unwrap_or_else(|e| panic!("{e:?} at {} elements", v.len()));
                v.push(i as u64);
            }
        };
        // Batches of 1,000 elements fill the vector to 131,072 (1 MiB of capacity).
        for _ in 0..131 {
            push_batch(&mut v, &mut c, 1_000, 0);
        }
        push_batch(&mut v, &mut c, 72, 0);
        assert_eq!((v.len(), v.capacity()), (131_072, 131_072));
        // A batch of 1.5 MiB of its own and one element: the vector doubles by 1 MiB during
        // it, 2.5 MiB against its 2 MiB allowance if that doubling were the batch's.
        push_batch(&mut v, &mut c, 1, 3 * MIB / 2);
        assert_eq!(v.capacity(), 262_144);
        assert_eq!(c.bytes(), 2 * MIB + 3 * MIB / 2);
    }
}
