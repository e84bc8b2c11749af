//! The layering of the Rust side (DEVELOPING.md, "Layering, checked by tests"): the engine
//! depends on no JNI crate and names neither JNI nor Kafka Connect; the JNI crate names no
//! Connect concept. Read from `Cargo.lock` (the resolved graph, dev-dependencies included) and
//! from the crates' code, comments left out (they may say what a crate is not).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Kafka Connect's vocabulary: its record, task and connector types and its Java packages. Plain
/// `connector` is left out: a TLS connector is no Connect concept.
const CONNECT_WORDS: &[&str] = &[
    "sinkrecord",
    "sinktask",
    "sinkconnector",
    "sinktaskcontext",
    "workersinktask",
    "errantrecordreporter",
    "precommit",
    "pre_commit",
    "dead_letter",
    "deadletter",
];
const CONNECT_PATHS: &[&str] = &[
    "org/apache/kafka/connect",
    "org.apache.kafka.connect",
    "io/sharesink/connect",
    "io.sharesink.connect",
];

/// JNI's vocabulary: the crate, its types and the exports' name prefix.
const JNI_WORDS: &[&str] = &[
    "jni",
    "sharesink_jni",
    "jnienv",
    "jobject",
    "jclass",
    "jstring",
    "jint",
    "jlong",
    "jbytearray",
    "jni_onload",
];
const JNI_PATHS: &[&str] = &["Java_"];

/// The packages `name` depends on in `Cargo.lock`, transitively (itself excluded).
fn locked_closure(name: &str) -> BTreeSet<String> {
    let lock = fs::read_to_string(repo().join("Cargo.lock")).expect("Cargo.lock");
    // (name, version, dependencies as written: "name" or "name version ...")
    let mut packages: Vec<(String, String, Vec<String>)> = Vec::new();
    for block in lock.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
                .map(|v| v.trim_end_matches('"').to_string())
                .unwrap_or_default()
        };
        let deps = block
            .split_once("dependencies = [")
            .map(|(_, rest)| rest.split(']').next().unwrap_or(""))
            .unwrap_or("")
            .lines()
            .map(|l| l.trim().trim_end_matches(',').trim_matches('"').to_string())
            .filter(|l| !l.is_empty())
            .collect();
        packages.push((field("name"), field("version"), deps));
    }
    let find = |dep: &str| {
        let mut words = dep.split_whitespace();
        let (n, v) = (words.next().unwrap_or(""), words.next());
        packages
            .iter()
            .position(|(pn, pv, _)| pn == n && v.is_none_or(|v| v == pv))
            .unwrap_or_else(|| panic!("{dep} is not in Cargo.lock"))
    };
    let mut seen = BTreeSet::new();
    let mut todo = vec![find(name)];
    while let Some(i) = todo.pop() {
        for dep in &packages[i].2 {
            let j = find(dep);
            if seen.insert(format!("{} {}", packages[j].0, packages[j].1)) {
                todo.push(j);
            }
        }
    }
    seen
}

/// The crate's code under `src/`, comments removed, one entry a file.
fn code(crate_dir: &str) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![repo().join(crate_dir).join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("src dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = fs::read_to_string(&path).expect("source");
                out.push((path, without_comments(&text)));
            }
        }
    }
    out
}

/// `text` without `//` comments (outside string literals) and `/* */` blocks.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut in_block) = (false, false);
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        if in_block {
            if c == '*' && next == Some('/') {
                in_block = false;
                i += 1;
            }
        } else if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = next {
                    out.push(n);
                    i += 1;
                }
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            out.push('\n');
        } else if c == '/' && next == Some('*') {
            in_block = true;
            i += 1;
        } else {
            // A char literal holding a quote ('"') does not open a string.
            if c == '"' && !(i > 0 && chars[i - 1] == '\'' && next == Some('\'')) {
                in_string = true;
            }
            out.push(c);
        }
        i += 1;
    }
    out
}

/// Where `crate_dir`'s code uses one of `words` (as a whole identifier, any case) or `paths`.
fn uses(crate_dir: &str, words: &[&str], paths: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (file, text) in code(crate_dir) {
        for (n, line) in text.lines().enumerate() {
            let hits = line
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| words.contains(&w.to_lowercase().as_str()))
                .map(str::to_string)
                .chain(
                    paths
                        .iter()
                        .filter(|p| line.contains(*p))
                        .map(|p| p.to_string()),
                );
            for hit in hits {
                found.push(format!("{}:{}: {hit}", file.display(), n + 1));
            }
        }
    }
    found
}

#[test]
fn the_engine_depends_on_no_jni_crate() {
    let closure = locked_closure("sharesink-engine");
    assert!(
        closure.iter().any(|p| p.starts_with("tokio ")),
        "the graph is read: {closure:?}"
    );
    let jni: Vec<_> = closure
        .iter()
        .filter(|p| p.starts_with("jni") || p.starts_with("sharesink-jni "))
        .collect();
    assert!(jni.is_empty(), "sharesink-engine depends on {jni:?}");
}

#[test]
fn the_engine_names_neither_jni_nor_connect() {
    let mut found = uses("rust/engine", JNI_WORDS, JNI_PATHS);
    found.extend(uses("rust/engine", CONNECT_WORDS, CONNECT_PATHS));
    assert!(found.is_empty(), "the engine names: {found:#?}");
}

#[test]
fn the_jni_crate_names_no_connect_concept() {
    let found = uses("rust/jni", CONNECT_WORDS, CONNECT_PATHS);
    assert!(found.is_empty(), "sharesink-jni names: {found:#?}");
}

#[test]
fn the_scanner_sees_code_and_skips_comments() {
    let text = "let a = 1; // SinkRecord\nlet s = \"org.apache.kafka.connect // x\";\n/* jni */";
    let code = without_comments(text);
    assert!(!code.contains("SinkRecord"), "{code}");
    assert!(!code.contains("jni"), "{code}");
    assert!(code.contains("org.apache.kafka.connect // x"), "{code}");
    // It reads the sources: the JNI crate does name JNI.
    assert!(!uses("rust/jni", JNI_WORDS, JNI_PATHS).is_empty());
}
