//! The look for a Python library that Debian installs for every Python 3 of the system
//! (python3-apt, python3-debian), which Ansible's modules import before they do anything:
//! a `Stat` of its `__init__.py`, which also runs in check mode.

use turbo_proto::{FileKind, Op, OpResult};

/// The look for the library whose `__init__.py` is at `path`.
pub(super) fn probe(path: &str) -> Op {
    Op::Stat {
        path: path.to_string(),
        checksum: None,
        follow: true,
    }
}

/// Whether the look found the library's file.
pub(super) fn found(reply: Option<&OpResult>) -> bool {
    matches!(reply, Some(OpResult::Stat(s)) if s.exists && s.kind == FileKind::File)
}
