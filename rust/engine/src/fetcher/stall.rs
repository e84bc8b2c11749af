//! Noticing a partition of the session that has gone quiet although records wait in it, so the
//! session can be rebuilt.
//!
//! Issue 14: after a broker restart a partition could stop delivering for good while every
//! fetch succeeded, the member believing its session held the partition and the broker serving
//! nothing from it (a session that is not the one the member thinks it has: a partition the
//! broker dropped or holds under a topic name it could not resolve, which it then answers for
//! with an error forever or not at all). Nothing in the fetch responses says so. So each
//! partition's last delivery is watched; one quiet for `share.partition.stall.ms` while the
//! member wants records is probed with ListOffsets on the session's own connection (its leader),
//! and if the log has records past the highest offset this member was given (or past the end
//! it had at the previous probe), the partition is stalled: the fetcher opens a new share
//! session (epoch 0, every partition added afresh) and refreshes metadata. A partition that
//! other members of the group drain can look the same; that costs one session rebuild per
//! `share.partition.stall.ms`, and only the first detection of an episode is logged at WARN.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::acks::PartitionKey;

#[derive(Debug, Clone)]
struct Watch {
    /// Since when the partition has delivered nothing (or since it joined the session).
    quiet_since: Instant,
    /// One past the highest offset delivered to this member; after a probe of a partition
    /// that never delivered, the log end it reported.
    next_offset: Option<i64>,
    /// A stall of this episode was already logged at WARN.
    warned: bool,
    /// Session rebuilds for this partition since it last delivered.
    rebuilds: u32,
    /// In the share session now (watches outlive sessions: what was delivered stays known).
    in_session: bool,
}

/// What a probe found for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stall {
    pub key: PartitionKey,
    /// Records in the log past what this member was given.
    pub waiting: i64,
    pub quiet_for: Duration,
    /// First detection since the partition last delivered (log it at WARN).
    pub first: bool,
}

/// The watch over one fetcher's partitions. Time is passed in, so it is tested without sleeps.
#[derive(Debug)]
pub(crate) struct StallWatch {
    stall_after: Duration,
    partitions: HashMap<PartitionKey, Watch>,
    next_check: Instant,
}

impl StallWatch {
    pub fn new(stall_after: Duration, now: Instant) -> Self {
        StallWatch {
            stall_after,
            partitions: HashMap::new(),
            next_check: now + stall_after,
        }
    }

    /// How often quiet partitions are looked at.
    fn check_interval(&self) -> Duration {
        (self.stall_after / 3).max(Duration::from_millis(200))
    }

    /// The session now holds `partitions`: a partition's quiet clock starts when it joins a
    /// session (a new one after a reset, or added to the current one).
    pub fn session_holds(
        &mut self,
        partitions: &std::collections::BTreeSet<PartitionKey>,
        now: Instant,
    ) {
        for (key, w) in self.partitions.iter_mut() {
            if !partitions.contains(key) {
                w.in_session = false;
            }
        }
        for key in partitions {
            let w = self.partitions.entry(*key).or_insert(Watch {
                quiet_since: now,
                next_offset: None,
                warned: false,
                rebuilds: 0,
                in_session: false,
            });
            if !w.in_session {
                w.in_session = true;
                w.quiet_since = now;
            }
        }
    }

    /// Records arrived for `key`, up to `last_offset`. Returns true when that ends a stall the
    /// watch had acted on (worth an INFO line).
    pub fn delivered(&mut self, key: &PartitionKey, last_offset: i64, now: Instant) -> bool {
        let Some(w) = self.partitions.get_mut(key) else {
            return false;
        };
        w.quiet_since = now;
        w.next_offset = Some(w.next_offset.unwrap_or(0).max(last_offset + 1));
        let recovered = w.rebuilds > 0;
        w.warned = false;
        w.rebuilds = 0;
        recovered
    }

    /// Partitions to probe now: quiet for `share.partition.stall.ms`, looked at no more often
    /// than a third of it. Empty unless the member wants records.
    pub fn due(&mut self, wants_records: bool, now: Instant) -> Vec<PartitionKey> {
        if now < self.next_check {
            return Vec::new();
        }
        self.next_check = now + self.check_interval();
        if !wants_records {
            return Vec::new();
        }
        let mut keys: Vec<PartitionKey> = self
            .partitions
            .iter()
            .filter(|(_, w)| w.in_session && now.duration_since(w.quiet_since) >= self.stall_after)
            .map(|(k, _)| *k)
            .collect();
        keys.sort_unstable();
        keys
    }

    /// When the next check is due (for the fetcher's sleep).
    pub fn next_check(&self) -> Instant {
        self.next_check
    }

    /// A probe answered with each partition's log end offset: the stalled partitions. Each
    /// counts as a rebuild; their quiet clocks restart with the new session.
    pub fn verdict(&mut self, log_ends: &[(PartitionKey, i64)], now: Instant) -> Vec<Stall> {
        let mut stalls = Vec::new();
        for (key, end) in log_ends {
            let Some(w) = self.partitions.get_mut(key).filter(|w| w.in_session) else {
                continue;
            };
            let quiet_for = now.duration_since(w.quiet_since);
            if quiet_for < self.stall_after {
                continue; // delivered while the probe was out
            }
            match w.next_offset {
                Some(next) if *end > next => {
                    stalls.push(Stall {
                        key: *key,
                        waiting: end - next,
                        quiet_for,
                        first: !w.warned,
                    });
                    w.warned = true;
                    w.rebuilds += 1;
                    // Until it delivers, a further stall counts from the log end seen now.
                    w.next_offset = Some(*end);
                }
                Some(_) => {}
                None => w.next_offset = Some(*end),
            }
        }
        stalls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STALL: Duration = Duration::from_secs(15);

    fn key(p: i32) -> PartitionKey {
        (uuid::Uuid::from_u128(7), p)
    }

    fn set(keys: &[PartitionKey]) -> std::collections::BTreeSet<PartitionKey> {
        keys.iter().copied().collect()
    }

    fn watch(now: Instant) -> StallWatch {
        let mut w = StallWatch::new(STALL, now);
        w.session_holds(&set(&[key(0), key(1)]), now);
        w
    }

    #[test]
    fn a_partition_quiet_with_records_past_what_it_gave_is_stalled() {
        let t0 = Instant::now();
        let mut w = watch(t0);
        w.delivered(&key(0), 99, t0);
        w.delivered(&key(1), 49, t0);
        assert!(w.due(true, t0 + STALL / 2).is_empty(), "probed too early");
        let later = t0 + STALL;
        assert_eq!(w.due(true, later), vec![key(0), key(1)]);
        // Partition 0 has 50 records past offset 99; partition 1 is at its end.
        let stalls = w.verdict(&[(key(0), 150), (key(1), 50)], later);
        assert_eq!(
            stalls,
            vec![Stall {
                key: key(0),
                waiting: 50,
                quiet_for: STALL,
                first: true
            }]
        );
    }

    #[test]
    fn only_the_first_detection_of_an_episode_is_first_and_a_delivery_ends_it() {
        let t0 = Instant::now();
        let mut w = watch(t0);
        w.delivered(&key(0), 9, t0);
        let t1 = t0 + STALL;
        w.session_holds(&set(&[key(0), key(1)]), t1);
        assert!(w.verdict(&[(key(0), 20)], t1)[0].first);
        // The rebuild opened a new session (reset: empty, then every partition again): the
        // clock restarts, what was delivered stays known.
        w.session_holds(&set(&[]), t1);
        w.session_holds(&set(&[key(0), key(1)]), t1);
        assert!(w.verdict(&[(key(0), 30)], t1 + STALL / 2).is_empty());
        let again = w.verdict(&[(key(0), 30)], t1 + STALL);
        assert_eq!(again.len(), 1);
        assert!(!again[0].first, "a second detection of one episode");
        assert_eq!(
            again[0].waiting, 10,
            "counted from the end seen at the first"
        );
        assert!(w.delivered(&key(0), 29, t1 + STALL), "the stall ended");
        assert!(!w.delivered(&key(0), 30, t1 + STALL), "no stall to end");
    }

    #[test]
    fn a_partition_that_never_delivered_is_measured_from_its_first_probe() {
        let t0 = Instant::now();
        let mut w = watch(t0);
        let t1 = t0 + STALL;
        // A fully consumed topic: the end seen first is the baseline, no stall.
        assert!(w.verdict(&[(key(0), 500)], t1).is_empty());
        // Records produced since, none delivered to this member.
        let stalls = w.verdict(&[(key(0), 530)], t1 + Duration::from_secs(1));
        assert_eq!(stalls.len(), 1);
        assert_eq!(stalls[0].waiting, 30);
    }

    #[test]
    fn nothing_is_probed_while_the_member_wants_no_records() {
        let t0 = Instant::now();
        let mut w = watch(t0);
        assert!(w.due(false, t0 + STALL * 2).is_empty());
        // Forgotten partitions are no longer watched.
        w.session_holds(&set(&[key(1)]), t0 + STALL * 3);
        assert_eq!(w.due(true, t0 + STALL * 3), vec![key(1)]);
        assert!(w.verdict(&[(key(0), 10)], t0 + STALL * 3).is_empty());
    }
}
