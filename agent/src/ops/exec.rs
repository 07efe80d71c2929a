//! `Op::Exec`: Ansible's `command` and `shell`.
