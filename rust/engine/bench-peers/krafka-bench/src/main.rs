//! krafka-bench: consume N records through krafka's share consumer and print the same figures
//! as sharesink-bench (clock from the first record; CPU from getrusage).
//!
//! krafka-bench BOOTSTRAP TOPIC GROUP RECORDS [explicit|implicit] [MAX_POLL_RECORDS]
//! The group must already have `share.auto.offset.reset=earliest` (sharesink-bench's admin or
//! the harness sets it).

use std::time::{Duration, Instant};

use krafka::share_consumer::AcknowledgementMode;
use krafka::Kafka;

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: krafka-bench BOOTSTRAP TOPIC GROUP RECORDS [explicit|implicit] [MAX_POLL_RECORDS]");
        std::process::exit(2);
    }
    let (bootstrap, topic, group) = (&args[1], &args[2], &args[3]);
    let target: u64 = args[4].parse()?;
    let explicit = args.get(5).map(|m| m == "explicit").unwrap_or(true);
    let max_poll: i32 = args.get(6).map(|v| v.parse()).transpose()?.unwrap_or(500);
    let kafka = Kafka::builder(bootstrap.clone()).client_id("krafka-bench").connect().await?;
    let consumer = kafka
        .share_consumer(group.clone())
        .acknowledgement_mode(if explicit {
            AcknowledgementMode::Explicit
        } else {
            AcknowledgementMode::Implicit
        })
        .max_poll_records(max_poll)
        .build()
        .await?;
    consumer.subscribe([topic.as_str()]).await?;
    let joined = Instant::now();
    let mut first: Option<(Instant, f64)> = None;
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut idle_since = Instant::now();
    while n < target && idle_since.elapsed() < Duration::from_secs(30) {
        let records = consumer.poll(Duration::from_millis(200)).await?;
        if records.is_empty() {
            continue;
        }
        idle_since = Instant::now();
        first.get_or_insert_with(|| (Instant::now(), cpu_seconds()));
        for r in &records {
            n += 1;
            bytes += r.key.as_ref().map_or(0, |k| k.len()) as u64 + r.value.as_ref().map_or(0, |v| v.len()) as u64;
            if explicit {
                consumer.ack(r)?;
            }
        }
    }
    let (end, cpu_end) = (Instant::now(), cpu_seconds());
    consumer.close().await?;
    let Some((start, cpu_start)) = first else {
        eprintln!("no records consumed");
        std::process::exit(1);
    };
    let secs = end.duration_since(start).as_secs_f64().max(1e-9);
    let cpu = cpu_end - cpu_start;
    println!(
        "krafka ({}) consumed {n} records ({:.1} MB) in {secs:.2} s (+{:.2} s join): {:.0} records/s, {:.2} MB/s, CPU {cpu:.2} s ({:.2} CPU s per million records)",
        if explicit { "explicit acks" } else { "implicit acks" },
        bytes as f64 / 1e6,
        start.duration_since(joined).as_secs_f64(),
        n as f64 / secs,
        bytes as f64 / 1e6 / secs,
        cpu / (n as f64 / 1e6),
    );
    Ok(())
}
