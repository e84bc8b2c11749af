//! Files a client setting names (trust and key stores): read only when they are regular files of
//! at most [`MAX_SETTING_FILE_BYTES`]. A path is chosen by whoever writes the connector's config,
//! so `/dev/zero`, a FIFO or a 3 GiB sparse file must fail with an error naming the setting, never
//! block the caller (opening a FIFO for reading waits for a writer) or fill its memory.

use std::fs::{Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};

use crate::error::EngineError;

/// Far above any real trust or key store (a few KiB; a bundle of every public CA is ~250 KiB).
pub const MAX_SETTING_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Why a setting's file was not read.
#[derive(Debug, thiserror::Error)]
pub enum SettingFileError {
    #[error("{path} is {kind}, not a regular file")]
    NotRegular { path: String, kind: &'static str },

    #[error("{path} holds more than {limit} bytes (at least {size}); no store is that large")]
    TooLarge { path: String, size: u64, limit: u64 },

    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The contents of the file `path` that setting `setting` names, or a `Config` error naming the
/// setting and the path.
pub(crate) fn read_setting_file(setting: &str, path: &str) -> Result<Vec<u8>, EngineError> {
    read_bounded(path, MAX_SETTING_FILE_BYTES)
        .map_err(|e| EngineError::config(setting, e.to_string()))
}

/// Reads `path` when it is a regular file of at most `limit` bytes. The path's type is checked
/// before it is opened (stat), and again on the open file (fstat), which is what is read: a path
/// swapped meanwhile changes nothing. The open does not block should the path have become a FIFO
/// (O_NONBLOCK), and the read stops one byte past the limit whatever the file's size claimed
/// (files of /proc report 0).
pub fn read_bounded(path: &str, limit: u64) -> Result<Vec<u8>, SettingFileError> {
    let io = |source| SettingFileError::Io {
        path: path.to_string(),
        source,
    };
    check(path, &std::fs::metadata(path).map_err(io)?, limit)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    let opened = file.metadata().map_err(io)?;
    check(path, &opened, limit)?;
    let mut data = Vec::with_capacity(opened.len() as usize);
    file.take(limit + 1).read_to_end(&mut data).map_err(io)?;
    if data.len() as u64 > limit {
        return Err(SettingFileError::TooLarge {
            path: path.to_string(),
            size: data.len() as u64,
            limit,
        });
    }
    Ok(data)
}

fn check(path: &str, meta: &Metadata, limit: u64) -> Result<(), SettingFileError> {
    let kind = meta.file_type();
    let not_regular = if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    };
    if let Some(kind) = not_regular {
        return Err(SettingFileError::NotRegular {
            path: path.to_string(),
            kind,
        });
    }
    if meta.len() > limit {
        return Err(SettingFileError::TooLarge {
            path: path.to_string(),
            size: meta.len(),
            limit,
        });
    }
    Ok(())
}

/// Hostile files for the tests of every reader of settings' files.
#[cfg(test)]
pub(crate) mod test_support {
    use std::ffi::CString;
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::{Path, PathBuf};

    /// A fresh directory under the system's temp dir, removed on drop.
    pub(crate) struct TempDir(PathBuf);

    impl TempDir {
        pub(crate) fn new(tag: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!(
                "sharesink-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        pub(crate) fn path(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    pub(crate) fn mkfifo(path: &Path) {
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file system node.
        assert_eq!(
            unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
            0,
            "mkfifo {path:?}"
        );
    }

    /// A FIFO with a writer waiting to hand it `content`: read the plain way, it would deliver
    /// `content` (so a reader that opens FIFOs passes for one that works). The writer is released
    /// when the guard drops, whether or not anything read.
    pub(crate) struct FifoWithWriter {
        path: PathBuf,
        writer: Option<std::thread::JoinHandle<()>>,
    }

    impl FifoWithWriter {
        pub(crate) fn new(path: PathBuf, content: Vec<u8>) -> FifoWithWriter {
            mkfifo(&path);
            let to = path.clone();
            let writer = std::thread::spawn(move || {
                // Blocks until a reader opens the FIFO (the reader under test, or drop's).
                if let Ok(mut w) = std::fs::OpenOptions::new().write(true).open(&to) {
                    let _ = w.write_all(&content);
                }
            });
            FifoWithWriter {
                path,
                writer: Some(writer),
            }
        }

        pub(crate) fn path(&self) -> &str {
            self.path.to_str().unwrap()
        }
    }

    impl Drop for FifoWithWriter {
        fn drop(&mut self) {
            // A reader of our own (non-blocking: none may be waiting to write any more) lets a
            // writer still waiting in its open go on; it stays open until the writer is done, so
            // the write never meets a pipe without readers.
            let reader = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&self.path);
            if let Some(w) = self.writer.take() {
                w.join().unwrap();
            }
            drop(reader);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{FifoWithWriter, TempDir};
    use super::*;

    #[test]
    fn a_regular_file_within_the_bound_is_read() {
        let dir = TempDir::new("files-ok");
        let path = dir.path("store.pem");
        std::fs::write(&path, b"0123456789").unwrap();
        let path = path.to_str().unwrap();
        assert_eq!(read_bounded(path, 10).unwrap(), b"0123456789");
        assert!(matches!(
            read_bounded(path, 9),
            Err(SettingFileError::TooLarge {
                size: 10,
                limit: 9,
                ..
            })
        ));
    }

    #[test]
    fn a_fifo_is_refused_without_being_opened() {
        let dir = TempDir::new("files-fifo");
        let fifo = FifoWithWriter::new(dir.path("store.pem"), b"not for you".to_vec());
        let e = read_bounded(fifo.path(), MAX_SETTING_FILE_BYTES).unwrap_err();
        assert!(
            matches!(e, SettingFileError::NotRegular { kind: "a FIFO", .. }),
            "{e}"
        );
        assert!(e.to_string().contains(fifo.path()), "{e}");
    }

    #[test]
    fn dev_zero_is_refused() {
        let e = read_bounded("/dev/zero", MAX_SETTING_FILE_BYTES).unwrap_err();
        assert!(
            matches!(
                e,
                SettingFileError::NotRegular {
                    kind: "a character device",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = TempDir::new("files-dir");
        let sub = dir.path("store.pem");
        std::fs::create_dir(&sub).unwrap();
        let e = read_bounded(sub.to_str().unwrap(), MAX_SETTING_FILE_BYTES).unwrap_err();
        assert!(
            matches!(
                e,
                SettingFileError::NotRegular {
                    kind: "a directory",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn a_sparse_file_over_the_bound_is_refused_unread() {
        let dir = TempDir::new("files-sparse");
        let path = dir.path("store.pem");
        // Sparse: no disk used. Read whole, it would come back as MAX + 1 zero bytes.
        std::fs::File::create(&path)
            .unwrap()
            .set_len(MAX_SETTING_FILE_BYTES + 1)
            .unwrap();
        let e = read_bounded(path.to_str().unwrap(), MAX_SETTING_FILE_BYTES).unwrap_err();
        assert!(
            matches!(
                e,
                SettingFileError::TooLarge {
                    size,
                    limit: MAX_SETTING_FILE_BYTES,
                    ..
                } if size == MAX_SETTING_FILE_BYTES + 1
            ),
            "{e}"
        );
    }

    #[test]
    fn a_file_whose_size_stat_does_not_tell_is_cut_at_the_bound() {
        // Files of /proc report a size of 0 and hold more.
        let e = read_bounded("/proc/self/maps", 16).unwrap_err();
        assert!(
            matches!(
                e,
                SettingFileError::TooLarge {
                    size: 17,
                    limit: 16,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_setting_and_the_path() {
        let e = read_setting_file("ssl.truststore.location", "/dev/zero").unwrap_err();
        assert!(
            matches!(e, EngineError::Config { ref key, ref message }
                if key == "ssl.truststore.location" && message.contains("/dev/zero")),
            "{e}"
        );
        let e = read_setting_file("ssl.keystore.location", "/nonexistent/store.p12").unwrap_err();
        assert!(
            matches!(e, EngineError::Config { ref key, .. } if key == "ssl.keystore.location"),
            "{e}"
        );
    }
}
