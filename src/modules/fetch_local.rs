//! The controller side of `fetch`: a remote file arrives page by page into a temp file
//! beside its destination, hashed as it comes, and replaces the destination by one
//! rename only when every page is in. A run that stops half way (an agent error, a dropped
//! connection, the task dropped) removes the temp file and leaves the old copy as it was.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha1::{Digest as _, Sha1};

/// The SHA-1 (Ansible's `checksum`) and MD5 (its `md5sum`) of a local file, or `None`
/// when there is no regular file to hash (Ansible's `checksum()` of a missing path or a
/// directory).
pub(super) fn local_digests(path: &Path) -> Option<(String, String)> {
    if !path.is_file() {
        return None;
    }
    let mut file = File::open(path).ok()?;
    let mut sha1 = Sha1::new();
    let mut md5 = md5::Context::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        sha1.update(&buf[..n]);
        md5.consume(&buf[..n]);
    }
    Some((hex(&sha1.finalize()), format!("{:x}", md5.finalize())))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A download in progress.
pub(super) struct Download {
    dest: PathBuf,
    temp: PathBuf,
    file: Option<File>,
    sha1: Sha1,
    md5: md5::Context,
    pub received: u64,
}

impl Download {
    /// Makes the destination's directories (as Ansible's `makedirs_safe`) and opens the
    /// temp file in the destination's own directory, so the final rename is atomic.
    pub fn start(dest: &Path) -> Result<Download, String> {
        let dir = dest.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(dir).map_err(|e| {
            format!(
                "could not create {} for the fetched file: {e}",
                dir.display()
            )
        })?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = dir.join(format!(".{name}.{}.turbo-fetch", std::process::id()));
        let file =
            File::create(&temp).map_err(|e| format!("could not write {}: {e}", temp.display()))?;
        Ok(Download {
            dest: dest.to_path_buf(),
            temp,
            file: Some(file),
            sha1: Sha1::new(),
            md5: md5::Context::new(),
            received: 0,
        })
    }

    pub fn append(&mut self, data: &[u8]) -> Result<(), String> {
        let file = self.file.as_mut().expect("an open download");
        file.write_all(data)
            .map_err(|e| format!("could not write {}: {e}", self.temp.display()))?;
        self.sha1.update(data);
        self.md5.consume(data);
        self.received += data.len() as u64;
        Ok(())
    }

    /// Flushes, renames over the destination, and gives the new file's SHA-1 and MD5.
    pub fn commit(mut self) -> Result<(String, String), String> {
        let file = self.file.take().expect("an open download");
        file.sync_all()
            .map_err(|e| format!("could not write {}: {e}", self.temp.display()))?;
        drop(file);
        std::fs::rename(&self.temp, &self.dest).map_err(|e| {
            format!(
                "could not move {} to {}: {e}",
                self.temp.display(),
                self.dest.display()
            )
        })?;
        let sha1 = std::mem::take(&mut self.sha1);
        let md5 = std::mem::replace(&mut self.md5, md5::Context::new());
        Ok((hex(&sha1.finalize()), format!("{:x}", md5.finalize())))
    }
}

impl Drop for Download {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_committed_download_replaces_the_file_and_hashes_it() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("sub/f");
        let mut d = Download::start(&dest).unwrap();
        d.append(b"hello ").unwrap();
        d.append(b"world").unwrap();
        let (sha1, md5) = d.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"hello world");
        assert_eq!(sha1, "2aae6c35c94fcfb415dbe95f408b9ce91ee846ed");
        assert_eq!(md5, "5eb63bbbe01eeed093cb22bb8f5acdc3");
        assert_eq!(local_digests(&dest), Some((sha1, md5)));
        assert_eq!(
            std::fs::read_dir(dir.path().join("sub")).unwrap().count(),
            1
        );
    }

    #[test]
    fn an_abandoned_download_leaves_the_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("f");
        std::fs::write(&dest, "old").unwrap();
        let mut d = Download::start(&dest).unwrap();
        d.append(b"new, half").unwrap();
        drop(d);
        assert_eq!(std::fs::read(&dest).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(local_digests(dir.path()), None);
    }
}
