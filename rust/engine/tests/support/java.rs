//! Java's `KafkaShareConsumer` as a peer measured in the same scenario: the helper
//! `tests/java/KafkaClientHelper.java` (`share` mode: explicit ACCEPT, commitSync per poll) run
//! as a child process, each delivery it prints recorded in a [`Ledger`] when its line arrives.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::Ledger;

/// Compiles the helper once per test binary against `SHARESINK_KAFKA_CLASSPATH`; the
/// classpath to run it with.
pub fn classpath() -> String {
    static CLASSES: OnceLock<String> = OnceLock::new();
    let kafka = std::env::var("SHARESINK_KAFKA_CLASSPATH")
        .expect("SHARESINK_KAFKA_CLASSPATH is not set (a classpath with kafka-clients 4.x)");
    let classes = CLASSES.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kafka-client-helper-peer");
        std::fs::create_dir_all(&out).unwrap();
        let source =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/java/KafkaClientHelper.java");
        let status = Command::new("javac")
            .arg("-cp")
            .arg(&kafka)
            .arg("-d")
            .arg(&out)
            .arg(&source)
            .status()
            .expect("running javac (JDK 17+ must be on the PATH)");
        assert!(status.success(), "javac failed on {}", source.display());
        out.display().to_string()
    });
    format!("{classes}:{kafka}")
}

pub struct JavaShareMember {
    child: Child,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl JavaShareMember {
    pub fn start(
        bootstrap: &str,
        group: &str,
        topic: &str,
        name: &str,
        ledger: Arc<Ledger>,
    ) -> Self {
        let mut child = Command::new("java")
            .arg("-Xmx256m")
            .arg("-cp")
            .arg(classpath())
            .arg("KafkaClientHelper")
            .args(["share", bootstrap, group, topic, name, "500", "0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the Java share consumer");
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // REC <member> <topic> <partition> <offset> <delivery> <polled> <acked> <error>
                let f: Vec<&str> = line.split_whitespace().collect();
                if f.len() == 9 && f[0] == "REC" {
                    if let (Ok(p), Ok(o)) = (f[3].parse(), f[4].parse()) {
                        ledger.record(p, o);
                    }
                }
            }
        });
        JavaShareMember {
            child,
            reader: Some(reader),
        }
    }

    /// Closes its stdin (the helper closes its consumer) and waits for it to exit.
    pub fn stop(mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

impl Drop for JavaShareMember {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}
