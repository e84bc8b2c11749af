//! bench-krafka-members: consume N records through krafka's share consumer with M members in
//! one process and print the same line as sharesink-bench (clock from the first record; CPU from
//! getrusage of the process, also from the first record).
//!
//! ```text
//! bench-krafka-members --bootstrap HOST:PORT --topic T --group G --records N
//!                      [--members M] [--max-poll-records R] [--fetch-max-bytes B] [--implicit]
//! ```
//! The group must already have `share.auto.offset.reset=earliest` (bench/run.py sets it).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
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

struct Args {
    bootstrap: String,
    topic: String,
    group: String,
    records: u64,
    members: usize,
    max_poll: i32,
    fetch_max_bytes: Option<i32>,
    explicit: bool,
}

fn parse() -> Args {
    let mut a = Args {
        bootstrap: String::new(),
        topic: String::new(),
        group: String::new(),
        records: 0,
        members: 1,
        max_poll: 500,
        fetch_max_bytes: None,
        explicit: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--bootstrap" => a.bootstrap = v(),
            "--topic" => a.topic = v(),
            "--group" => a.group = v(),
            "--records" => a.records = v().parse().expect("--records"),
            "--members" => a.members = v().parse().expect("--members"),
            "--max-poll-records" => a.max_poll = v().parse().expect("--max-poll-records"),
            "--fetch-max-bytes" => a.fetch_max_bytes = Some(v().parse().expect("--fetch-max-bytes")),
            "--implicit" => a.explicit = false,
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2)
            }
        }
    }
    if a.bootstrap.is_empty() || a.topic.is_empty() || a.group.is_empty() || a.records == 0 {
        eprintln!("--bootstrap, --topic, --group and --records are required");
        std::process::exit(2)
    }
    a
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = parse();
    let total = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let first: Arc<OnceLock<(Instant, f64)>> = Arc::new(OnceLock::new());
    let started = Instant::now();
    let mut tasks = Vec::new();
    for m in 0..a.members {
        let kafka = Kafka::builder(a.bootstrap.clone())
            .client_id(format!("krafka-bench-{m}"))
            .connect()
            .await?;
        let mut b = kafka
            .share_consumer(a.group.clone())
            .acknowledgement_mode(if a.explicit {
                AcknowledgementMode::Explicit
            } else {
                AcknowledgementMode::Implicit
            })
            .max_poll_records(a.max_poll);
        if let Some(fmb) = a.fetch_max_bytes {
            b = b.fetch_max_bytes(fmb);
        }
        let consumer = b.build().await?;
        consumer.subscribe([a.topic.as_str()]).await?;
        let (total, bytes, first) = (total.clone(), bytes.clone(), first.clone());
        let (target, explicit) = (a.records, a.explicit);
        tasks.push(tokio::spawn(async move {
            while total.load(Relaxed) < target {
                let records = match consumer.poll(Duration::from_millis(200)).await {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("member {m}: poll failed: {e}");
                        break;
                    }
                };
                if records.is_empty() {
                    continue;
                }
                first.get_or_init(|| (Instant::now(), cpu_seconds()));
                let mut b = 0u64;
                for r in &records {
                    b += r.key.as_ref().map_or(0, |k| k.len()) as u64
                        + r.value.as_ref().map_or(0, |v| v.len()) as u64;
                    if explicit {
                        if let Err(e) = consumer.ack(r) {
                            eprintln!("member {m}: ack failed: {e}");
                        }
                    }
                }
                bytes.fetch_add(b, Relaxed);
                total.fetch_add(records.len() as u64, Relaxed);
            }
            consumer
        }));
    }
    let mut last = (0u64, Instant::now());
    let mut report = Instant::now();
    while total.load(Relaxed) < a.records {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let n = total.load(Relaxed);
        if n != last.0 {
            last = (n, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(30) {
            eprintln!("no progress for 30 s at {n} records; stopping");
            break;
        }
        if report.elapsed() > Duration::from_secs(5) {
            eprintln!("... {n} records");
            report = Instant::now();
        }
        if tasks.iter().all(|t| t.is_finished()) {
            break;
        }
    }
    let (end, cpu_end) = (Instant::now(), cpu_seconds());
    for t in tasks {
        match tokio::time::timeout(Duration::from_secs(10), t).await {
            Ok(Ok(consumer)) => {
                let _ = tokio::time::timeout(Duration::from_secs(10), consumer.close()).await;
            }
            _ => eprintln!("a member did not finish"),
        }
    }
    let n = total.load(Relaxed);
    let b = bytes.load(Relaxed);
    let Some((start, cpu_start)) = first.get().copied() else {
        eprintln!("no records consumed");
        std::process::exit(1);
    };
    let secs = end.duration_since(start).as_secs_f64().max(1e-9);
    let cpu = cpu_end - cpu_start;
    println!(
        "consumed {n} records ({:.1} MB) with {} member(s) in {secs:.2} s (+{:.2} s join): {:.0} records/s, {:.2} MB/s, CPU {cpu:.2} s ({:.2} CPU s per million records)",
        b as f64 / 1e6,
        a.members,
        start.duration_since(started).as_secs_f64(),
        n as f64 / secs,
        b as f64 / 1e6 / secs,
        cpu / (n as f64 / 1e6),
    );
    Ok(())
}
