//! A loop's items that edit one file (`lineinfile` over a list of lines). Ansible runs
//! them one after another, each reading what the one before wrote; sent so, every item
//! costs a read and a write, two round trips. Instead the controller answers each item's
//! read itself, with what the item before it is about to write, and sends all the writes
//! in one batch. Each write is guarded by the digest of the content it was computed from
//! (`FileContent::Replacing`): the agent refuses one whose guess was wrong, leaving the
//! file alone, and the items from there go again, reading for real. A loop over one file
//! costs two round trips when every guess holds, which it does unless something else
//! writes the file meanwhile or a write fails.

use std::collections::HashSet;

use sha2::{Digest as _, Sha256};
use turbo_proto::{
    ErrorKind, FileContent, FileKind, FileRead, Op, OpResult, Ownership, READ_BYTES_MAX, StatInfo,
};

use super::transport::{Round, send_remote, send_round};
use super::{ItemRun, ItemState, Target, prepare};
use crate::modules::TaskOutcome;

/// Whether every item that is to read first reads the same one file, so that each must
/// see what the one before wrote.
pub(super) fn one_file(runs: &[ItemRun], running: &[usize]) -> bool {
    let mut touched = None;
    running.iter().all(|&i| match &runs[i].state {
        ItemState::Step(_, next) => match (next.touches(), touched) {
            (None, _) => false,
            (Some(what), None) => {
                touched = Some(what);
                true
            }
            (Some(what), Some(before)) => what == before,
        },
        ItemState::Done(_) | ItemState::Remote(_) => true,
        ItemState::Flow(_) => false,
    })
}

/// Sends `running`, items over one file, in order, each planned on the content the
/// items before it leave (see the module's doc). False when the host turned out
/// unreachable.
pub(super) async fn send_one_file_items(
    target: &Target<'_>,
    runs: &mut [ItemRun],
    running: &[usize],
) -> bool {
    let mut at = 0;
    while at < running.len() {
        let first = running[at];
        let Some(read_op) = whole_file_read(&runs[first].state) else {
            if !send_remote(target, runs, &[first]).await {
                return false;
            }
            at += 1;
            continue;
        };
        let mut seen = Vec::new();
        let mut solo = HashSet::new();
        if let Round::Lost = send_round(target, runs, &[first], &mut solo, Some(&mut seen)).await {
            return false;
        }
        let Some(mut view) = seen
            .pop()
            .and_then(|(_, reply)| FileView::of(read_op, reply))
        else {
            if !send_remote(target, runs, &[first]).await {
                return false;
            }
            at += 1;
            continue;
        };
        // The items planned on `view`, in order; the first on a real read.
        let mut chain = vec![first];
        loop {
            let last = *chain.last().expect("the first item");
            let follows = match &mut runs[last].state {
                ItemState::Step(op, _) => view.follow_write(op),
                ItemState::Done(_) => true,
                ItemState::Remote(_) | ItemState::Flow(_) => false,
            };
            if !follows {
                if chain.len() > 1 {
                    // Planned on a guess its next op cannot be checked against: it goes
                    // again from its read, after the others.
                    chain.pop();
                    replan(target, &mut runs[last]);
                }
                break;
            }
            let Some(&next) = running.get(at + chain.len()) else {
                break;
            };
            if whole_file_read(&runs[next].state).as_ref() != Some(&view.read_op) {
                break;
            }
            resume(&mut runs[next], view.predicted());
            chain.push(next);
        }
        seen.clear();
        if let Round::Lost = send_round(target, runs, &chain, &mut solo, Some(&mut seen)).await {
            return false;
        }
        // The first item whose write did not land as guessed: the items after it were
        // planned on content the file does not hold.
        let wrong = seen
            .iter()
            .filter(|(_, reply)| !matches!(reply, OpResult::File(_)))
            .map(|(i, reply)| {
                let place = chain.iter().position(|c| c == i).expect("in the chain");
                let conflict = matches!(reply, OpResult::Error(e) if e.kind == ErrorKind::Conflict);
                (place, conflict)
            })
            .min();
        let kept = match wrong {
            Some((place, true)) => place,
            Some((place, false)) => place + 1,
            None => chain.len(),
        };
        for &i in &chain[kept..] {
            replan(target, &mut runs[i]);
        }
        // The file changed under the first item between its read and its write: it goes
        // again alone, as it would have gone without guessing.
        let kept = kept.max(1);
        // Whatever steps the kept items have left (none, for a plain write).
        if !send_remote(target, runs, &chain[..kept]).await {
            return false;
        }
        at += kept;
    }
    true
}

/// The item planned again from its arguments, as `until` plans a retry.
fn replan(target: &Target<'_>, run: &mut ItemRun) {
    let (args, state) = prepare::plan_args(
        target.ctx,
        target.playbook,
        target.task,
        &run.vars,
        &run.raw_args,
        target.become_,
    );
    run.args = args;
    run.state = state;
}

fn resume(run: &mut ItemRun, reply: OpResult) {
    let state = std::mem::replace(&mut run.state, ItemState::Done(TaskOutcome::default()));
    run.state = match state {
        ItemState::Step(_, next) => match next.resume(reply) {
            Ok(plan) => ItemState::of(plan),
            Err(e) => ItemState::Done(TaskOutcome::from_error(e)),
        },
        other => other,
    };
}

/// The op of a step that reads a whole file as the text modules do (its lstat and its
/// bytes), touching only that file.
fn whole_file_read(state: &ItemState) -> Option<Op> {
    let ItemState::Step(op @ Op::Batch(ops), next) = state else {
        return None;
    };
    match ops.as_slice() {
        [
            Op::Stat {
                path,
                checksum: None,
                follow: false,
            },
            Op::ReadFile {
                path: read,
                offset: 0,
                limit: None,
            },
        ] if path == read && next.touches() == Some(path.as_str()) => Some(op.clone()),
        _ => None,
    }
}

/// What a regular file holds as far as the controller knows: the reply to a real read,
/// then what the planned writes put in it.
struct FileView {
    read_op: Op,
    lstat: StatInfo,
    read: FileRead,
}

impl FileView {
    /// Only a whole regular file read in one reply (not a symlink, whose writes go to
    /// where it points).
    fn of(read_op: Op, reply: OpResult) -> Option<FileView> {
        let OpResult::Batch(mut replies) = reply else {
            return None;
        };
        let (Some(OpResult::Read(read)), Some(OpResult::Stat(lstat))) =
            (replies.pop(), replies.pop())
        else {
            return None;
        };
        (lstat.kind == FileKind::File && read.eof && read.offset == 0 && read.stat.exists)
            .then_some(FileView {
                read_op,
                lstat,
                read,
            })
    }

    /// The read's reply as it would come after the writes planned so far.
    fn predicted(&self) -> OpResult {
        OpResult::Batch(vec![
            OpResult::Stat(self.lstat.clone()),
            OpResult::Read(self.read.clone()),
        ])
    }

    /// Takes `op` into the view when it is a plain write of the whole file (no mode, owner,
    /// validation or backup, which the view cannot predict), guarding it with the digest
    /// of what it replaces.
    fn follow_write(&mut self, op: &mut Op) -> bool {
        let Op::EnsureFile(file) = op else {
            return false;
        };
        let plain = file.path == self.read.stat.path
            && file.mode.is_none()
            && file.owner == Ownership::default()
            && file.validate.is_none()
            && !file.backup
            && file.force;
        let FileContent::Inline(bytes) = &file.content else {
            return false;
        };
        if !plain || bytes.len() > READ_BYTES_MAX {
            return false;
        }
        let bytes = bytes.clone();
        file.content = FileContent::Replacing {
            bytes: bytes.clone(),
            was_sha256: Sha256::digest(&self.read.data).into(),
        };
        self.read.stat.size = bytes.len() as u64;
        self.lstat.size = bytes.len() as u64;
        self.read.data = bytes;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::{Next, Plan};
    use turbo_proto::EnsureFile;

    fn read_op(path: &str) -> Op {
        Op::Batch(vec![
            Op::Stat {
                path: path.into(),
                checksum: None,
                follow: false,
            },
            Op::ReadFile {
                path: path.into(),
                offset: 0,
                limit: None,
            },
        ])
    }

    fn stat(path: &str, size: u64) -> StatInfo {
        StatInfo {
            path: path.into(),
            exists: true,
            kind: FileKind::File,
            mode: 0o644,
            size,
            ..StatInfo::default()
        }
    }

    fn reply(path: &str, data: &[u8]) -> OpResult {
        OpResult::Batch(vec![
            OpResult::Stat(stat(path, data.len() as u64)),
            OpResult::Read(FileRead {
                stat: stat(path, data.len() as u64),
                offset: 0,
                data: data.to_vec(),
                eof: true,
            }),
        ])
    }

    fn write(path: &str, bytes: &[u8]) -> EnsureFile {
        EnsureFile {
            path: path.into(),
            content: FileContent::Inline(bytes.to_vec()),
            mode: None,
            force: true,
            owner: Ownership::default(),
            validate: None,
            backup: false,
        }
    }

    #[test]
    fn a_whole_file_read_is_known_by_its_ops_and_what_it_touches() {
        let step = |touches: Option<&str>| {
            let next = Next::new(|_| Ok(Plan::Done(TaskOutcome::default())));
            let next = match touches {
                Some(path) => next.touching(path),
                None => next,
            };
            ItemState::Step(read_op("/f"), next)
        };
        assert_eq!(whole_file_read(&step(Some("/f"))), Some(read_op("/f")));
        assert_eq!(whole_file_read(&step(None)), None);
        assert_eq!(whole_file_read(&step(Some("/g"))), None);
    }

    #[test]
    fn each_write_is_guarded_by_what_the_one_before_left() {
        let mut view = FileView::of(read_op("/f"), reply("/f", b"a\n")).unwrap();
        let mut first = Op::EnsureFile(write("/f", b"a\nb\n"));
        assert!(view.follow_write(&mut first));
        let Op::EnsureFile(first) = first else {
            panic!()
        };
        assert_eq!(
            first.content,
            FileContent::Replacing {
                bytes: b"a\nb\n".to_vec(),
                was_sha256: Sha256::digest(b"a\n").into(),
            }
        );
        // The next item reads what the first is about to write.
        assert_eq!(view.predicted(), reply("/f", b"a\nb\n"));
        let mut second = Op::EnsureFile(write("/f", b"a\nb\nc\n"));
        assert!(view.follow_write(&mut second));
        let Op::EnsureFile(second) = second else {
            panic!()
        };
        assert!(matches!(second.content,
            FileContent::Replacing { was_sha256, .. } if was_sha256 == <[u8; 32]>::from(Sha256::digest(b"a\nb\n"))));
    }

    #[test]
    fn what_the_view_cannot_predict_is_not_followed() {
        let mut view = FileView::of(read_op("/f"), reply("/f", b"a\n")).unwrap();
        let with_mode = EnsureFile {
            mode: Some(turbo_proto::FileMode::Bits(0o600)),
            ..write("/f", b"x")
        };
        let validated = EnsureFile {
            validate: Some(vec!["true".into()]),
            ..write("/f", b"x")
        };
        for op in [with_mode, validated, write("/other", b"x")] {
            let mut op = Op::EnsureFile(op);
            let before = op.clone();
            assert!(!view.follow_write(&mut op));
            assert_eq!(op, before, "left as planned");
        }
        assert_eq!(view.predicted(), reply("/f", b"a\n"));
        // A symlink's writes go where it points, and a page of a long file is not all of it.
        let mut link = reply("/f", b"a\n");
        if let OpResult::Batch(r) = &mut link
            && let OpResult::Stat(s) = &mut r[0]
        {
            s.kind = FileKind::Symlink;
        }
        assert!(FileView::of(read_op("/f"), link).is_none());
        let mut page = reply("/f", b"a\n");
        if let OpResult::Batch(r) = &mut page
            && let OpResult::Read(read) = &mut r[1]
        {
            read.eof = false;
        }
        assert!(FileView::of(read_op("/f"), page).is_none());
    }
}
