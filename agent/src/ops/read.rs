//! `Op::ReadFile`: a slice of a remote file (slurp, fetch, lineinfile's current content).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use turbo_proto::{FileRead, OpError, OpResult, READ_BYTES_MAX, StatInfo};

use super::stat::describe;
use super::{Agent, io_error, stat_follow};

pub fn read_file(
    agent: &mut Agent,
    path: &str,
    offset: u64,
    limit: Option<u64>,
) -> Result<OpResult, OpError> {
    let path = agent.expand(path);
    let nothing = |stat| {
        Ok(OpResult::Read(FileRead {
            stat,
            offset,
            data: Vec::new(),
            eof: true,
        }))
    };
    let Some(meta) = stat_follow(&path)? else {
        return nothing(StatInfo::missing(path.to_string_lossy().into_owned()));
    };
    // Only regular files are opened: opening a FIFO would wait for a writer, and a
    // device may never end.
    if !meta.is_file() {
        return nothing(describe(agent, &path, &meta)?);
    }
    let mut file = File::open(&path).map_err(|e| io_error(e, &path))?;
    // The description is of the file opened, which a rename may have put there since.
    let meta = file.metadata().map_err(|e| io_error(e, &path))?;
    let stat = describe(agent, &path, &meta)?;
    let want = limit.map_or(READ_BYTES_MAX as u64, |l| l.min(READ_BYTES_MAX as u64));
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| io_error(e, &path))?;
    let expected = meta.len().saturating_sub(offset).min(want);
    let mut data = Vec::with_capacity(expected as usize + 1);
    // One byte past the window tells whether anything is left, also for /proc files,
    // whose size says 0.
    file.take(want + 1)
        .read_to_end(&mut data)
        .map_err(|e| io_error(e, &path))?;
    let eof = data.len() as u64 <= want;
    data.truncate(want as usize);
    Ok(OpResult::Read(FileRead {
        stat,
        offset,
        data,
        eof,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use turbo_proto::FileKind;

    fn read(a: &mut Agent, path: &str, offset: u64, limit: Option<u64>) -> FileRead {
        match read_file(a, path, offset, limit).unwrap() {
            OpResult::Read(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn whole_file_pages_and_past_the_end() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        std::fs::write(dir.join("f"), b"0123456789").unwrap();
        let r = read(&mut a, "~/f", 0, None);
        assert_eq!(
            (r.data.as_slice(), r.eof, r.stat.size),
            (&b"0123456789"[..], true, 10)
        );
        assert_eq!(r.stat.kind, FileKind::File);
        let r = read(&mut a, "~/f", 2, Some(3));
        assert_eq!(
            (r.data.as_slice(), r.eof, r.offset),
            (&b"234"[..], false, 2)
        );
        let r = read(&mut a, "~/f", 7, Some(3));
        assert_eq!((r.data.as_slice(), r.eof), (&b"789"[..], true));
        let r = read(&mut a, "~/f", 50, Some(3));
        assert_eq!((r.data.len(), r.eof), (0, true));
        let r = read(&mut a, "~/f", 0, Some(0));
        assert_eq!((r.data.len(), r.eof), (0, false));
    }

    #[test]
    fn missing_files_directories_and_proc_files() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let r = read(&mut a, &dir.str("nope"), 0, None);
        assert!(!r.stat.exists && r.data.is_empty() && r.eof);
        let r = read(&mut a, "~", 0, None);
        assert_eq!((r.stat.kind, r.data.len()), (FileKind::Directory, 0));
        let r = read(&mut a, "/proc/self/status", 0, None);
        assert_eq!(r.stat.size, 0);
        assert!(r.eof && String::from_utf8_lossy(&r.data).contains("Name:"));
    }

    #[test]
    fn one_reply_is_capped() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        std::fs::write(dir.join("big"), vec![1u8; READ_BYTES_MAX + 10]).unwrap();
        let r = read(&mut a, "~/big", 0, Some(u64::MAX));
        assert_eq!((r.data.len(), r.eof), (READ_BYTES_MAX, false));
        let r = read(&mut a, "~/big", READ_BYTES_MAX as u64, None);
        assert_eq!((r.data.len(), r.eof), (10, true));
    }
}
