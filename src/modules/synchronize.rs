//! ansible.posix's `synchronize` without rsync: the controller walks `src`, the agent lists
//! the destination in one exchange (`ListTree`, with digests under `checksum`), and what
//! rsync would send goes in one batch: directories, links, the changed files' bytes,
//! deletions, then the times rsync's `--times` keeps (directories last, deepest first, so
//! writing into them does not move them again). The result is what the module reports
//! after running rsync with Ansible's `--out-format='<<CHANGED>>%i %n%L'`: the same
//! itemized lines in rsync's order, `changed` when there is one, `cmd`, `rc`.
//!
//! Only `mode: push` from the controller runs here; a delegated task (rsync started on
//! another host) and the options that need rsync itself fail when they run, saying so.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};
use turbo_proto::{
    Command, Digest, EnsureFile, EnsurePath, Exec, FileContent, FileKind, FileMode, Op, OpResult,
    Ownership, PathState, StatInfo,
};

use super::spec::{Arg, Elem, Spec};
use super::synchronize_source::*;
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, find_local_source};

pub struct Synchronize;

/// Options of rsync's connection (how it reaches the host, not what it copies): the agent's
/// session is that connection.
const TRANSPORT: &str = "turbo-play copies over its own connection to the host, not through rsync";

static SPEC: Spec = Spec::new(&[
    Arg::bool("archive").default_bool(true),
    Arg::bool("checksum").default_bool(false),
    Arg::bool("compress")
        .default_bool(true)
        .no_effect(TRANSPORT),
    Arg::bool("copy_links").default_bool(false),
    Arg::bool("delay_updates")
        .default_bool(true)
        .no_effect("every file is written to a temporary file and renamed into place"),
    Arg::bool("delete").default_bool(false),
    Arg::path("dest").required(),
    Arg::int("dest_port").no_effect(TRANSPORT),
    Arg::bool("dirs").default_bool(false),
    Arg::bool("existing_only").default_bool(false),
    Arg::bool("group"),
    Arg::list("link_dest", Elem::Path).not_yet(),
    Arg::bool("links"),
    Arg::str("mode")
        .choices(&["pull", "push"])
        .default_str("push")
        .not_yet(),
    Arg::bool("owner"),
    Arg::bool("partial")
        .default_bool(false)
        .no_effect(TRANSPORT),
    Arg::bool("perms"),
    Arg::path("private_key").no_effect(TRANSPORT),
    Arg::bool("recursive"),
    Arg::list("rsync_opts", Elem::Str),
    Arg::str("rsync_path").not_yet(),
    Arg::int("rsync_timeout")
        .default_int(0)
        .no_effect(TRANSPORT),
    Arg::bool("set_remote_user")
        .default_bool(true)
        .no_effect(TRANSPORT),
    Arg::path("src").required(),
    Arg::bool("ssh_connection_multiplexing")
        .default_bool(false)
        .no_effect(TRANSPORT),
    Arg::bool("times"),
    Arg::bool("use_ssh_args")
        .default_bool(false)
        .no_effect(TRANSPORT),
    Arg::bool("verify_host")
        .default_bool(false)
        .no_effect(TRANSPORT),
]);

/// Changed content sent in one request; more goes in the requests after it.
const BATCH_BYTES: u64 = 16 << 20;

/// A file larger than this would not fit one frame.
const FILE_LIMIT: u64 = 48 << 20;

impl Module for Synchronize {
    fn name(&self) -> &'static str {
        "synchronize"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        if ctx.delegated {
            return Err(ModuleError::Invalid(
                "synchronize with delegate_to (rsync run on another host) is not supported by \
                 turbo-play yet; copy from the controller, or run this task with ansible-playbook"
                    .into(),
            ));
        }
        let opts = Options::from_args(args)?;
        let written_src = args.str("src").unwrap_or_default().to_string();
        let dest = args.str("dest").unwrap_or_default().to_string();
        let src = find_local_source(&written_src, ctx, "files")?;
        let contents_only = written_src.ends_with('/');
        let sender = if local_connection(ctx) { '>' } else { '<' };
        let source = walk_source(&src, contents_only, &opts)?;
        // Where the walked root lands: `dest` itself for `dir/` and for a file copied to a
        // new name, `dest/<name>` otherwise (rsync's rule; a file into an existing
        // directory is settled once the listing says what `dest` is).
        let root_name = source.root_name.clone();
        let target = match &root_name {
            Some(name) if source.root.kind == EntryKind::Dir => join(&dest, name),
            _ => dest.clone(),
        };
        let cmd = command_line(&opts, &written_src, &dest, ctx);
        let mut ops = vec![
            Op::Stat {
                path: dest.clone(),
                follow: true,
                checksum: None,
            },
            Op::ListTree {
                path: target.clone(),
                // A file needs only what `dest` holds at its top.
                max_depth: (source.root.kind != EntryKind::Dir || !opts.recursive).then_some(1),
                follow: false,
                checksum: opts.checksum.then_some(Digest::Sha256),
            },
        ];
        if opts.owner || opts.group {
            ops.push(Op::Exec(Exec::plain(Command::Argv(vec![
                "id".into(),
                "-u".into(),
            ]))));
        }
        let check = ctx.check_mode;
        let diff = ctx.diff;
        Ok(Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| {
                let listing = Listing::from_reply(reply, &dest, &target)?;
                let mut plan = Comparison::new(&source, &listing, &opts, sender).run()?;
                let result = Finished {
                    lines: std::mem::take(&mut plan.lines),
                    cmd,
                    diff,
                };
                if check || plan.steps.iter().all(Vec::is_empty) {
                    return Ok(Plan::Done(result.outcome()));
                }
                Ok(send_steps(plan.steps, result))
            })
            .touching(format!("synchronize:{}", args_dest_key(args))),
        ))
    }
}

fn args_dest_key(args: &Args) -> String {
    args.str("dest").unwrap_or_default().to_string()
}

fn local_connection(ctx: &PlanContext) -> bool {
    ctx.vars
        .and_then(|vars| vars.get_attr("ansible_connection").ok())
        .and_then(|v| v.as_str().map(|s| s == "local"))
        .unwrap_or(false)
}

/// What the arguments ask of the copy, with `archive`'s defaults applied as the module
/// applies them (`archive` turns on what is not turned off one by one).
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub(super) checksum: bool,
    pub(super) delete: bool,
    pub(super) existing_only: bool,
    pub(super) dirs: bool,
    pub(super) recursive: bool,
    pub(super) links: bool,
    pub(super) copy_links: bool,
    pub(super) perms: bool,
    pub(super) times: bool,
    pub(super) owner: bool,
    pub(super) group: bool,
    pub(super) filters: Vec<Filter>,
    /// `rsync_opts` as given, for `cmd`.
    pub(super) rsync_opts: Vec<String>,
    pub(super) archive: bool,
    pub(super) compress: bool,
    pub(super) delay_updates: bool,
}

impl Options {
    fn from_args(args: &Args) -> Result<Options, ModuleError> {
        let archive = args.bool("archive");
        let pick = |name: &str| args.opt_bool(name).unwrap_or(archive);
        let rsync_opts = args.str_list("rsync_opts");
        Ok(Options {
            checksum: args.bool("checksum"),
            delete: args.bool("delete"),
            existing_only: args.bool("existing_only"),
            dirs: args.bool("dirs"),
            recursive: pick("recursive"),
            links: pick("links"),
            copy_links: args.bool("copy_links"),
            perms: pick("perms"),
            times: pick("times"),
            owner: pick("owner"),
            group: pick("group"),
            filters: parse_rsync_opts(&rsync_opts)?,
            rsync_opts,
            archive,
            compress: args.bool("compress"),
            delay_updates: args.bool("delay_updates"),
        })
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// What the agent found at the destination.
struct Listing {
    /// `dest` as given: there, a directory, or neither.
    dest: StatInfo,
    /// The walked root's place (`target`), and everything under it by relative path.
    root: StatInfo,
    entries: HashMap<String, StatInfo>,
    /// The agent runs as root (rsync keeps owners only then).
    root_user: bool,
    dest_path: String,
    target: String,
}

impl Listing {
    fn from_reply(reply: OpResult, dest: &str, target: &str) -> Result<Listing, ModuleError> {
        let OpResult::Batch(mut results) = reply else {
            return Err(reply_error(reply));
        };
        let root_user = match results.get(2) {
            Some(OpResult::Exec(out)) => String::from_utf8_lossy(&out.stdout).trim() == "0",
            _ => false,
        };
        results.truncate(2);
        let tree = results.pop();
        let stat = results.pop();
        let dest_stat = match stat {
            Some(OpResult::Stat(stat)) => stat,
            Some(other) => return Err(reply_error(other)),
            None => return Err(ModuleError::Invalid("synchronize: empty reply".into())),
        };
        let tree = match tree {
            Some(OpResult::Tree(tree)) => tree,
            Some(other) => return Err(reply_error(other)),
            None => return Err(ModuleError::Invalid("synchronize: empty reply".into())),
        };
        let root_path = tree.root.path.clone();
        let entries = tree
            .entries
            .into_iter()
            .filter_map(|e| {
                let rel = e
                    .path
                    .strip_prefix(&root_path)?
                    .trim_start_matches('/')
                    .to_string();
                Some((rel, e))
            })
            .collect();
        Ok(Listing {
            dest: dest_stat,
            root: tree.root,
            entries,
            root_user,
            dest_path: dest.to_string(),
            target: target.to_string(),
        })
    }
}

fn reply_error(reply: OpResult) -> ModuleError {
    match reply {
        OpResult::Error(e) => ModuleError::Invalid(e.message),
        other => ModuleError::Invalid(format!("synchronize: unexpected reply {other:?}")),
    }
}

/// The ops in the order they must run (one request each, content split by size) and
/// rsync's itemized lines.
struct Changes {
    steps: Vec<Vec<Op>>,
    lines: Vec<String>,
}

struct Comparison<'a> {
    source: &'a Source,
    listing: &'a Listing,
    opts: &'a Options,
    sender: char,
    /// The controller's user and group names by id, read once (rsync keeps owners by
    /// name); empty unless owners are kept.
    users: HashMap<u32, String>,
    groups: HashMap<u32, String>,
    /// Where the root lands on the target; a file root may land inside `dest`.
    root_path: String,
    lines: Vec<String>,
    writes: Vec<(Op, u64)>,
    deletions: Vec<Op>,
    deletion_lines: Vec<String>,
    times: Vec<Op>,
    /// Deepest first.
    dir_times: Vec<Op>,
}

impl<'a> Comparison<'a> {
    fn new(
        source: &'a Source,
        listing: &'a Listing,
        opts: &'a Options,
        sender: char,
    ) -> Comparison<'a> {
        Comparison {
            source,
            listing,
            opts,
            sender,
            users: if listing.root_user && opts.owner {
                id_names("/etc/passwd")
            } else {
                HashMap::new()
            },
            groups: if listing.root_user && opts.group {
                id_names("/etc/group")
            } else {
                HashMap::new()
            },
            root_path: listing.target.clone(),
            lines: source.skipped.get("..").cloned().unwrap_or_default(),
            writes: Vec::new(),
            deletions: Vec::new(),
            deletion_lines: Vec::new(),
            times: Vec::new(),
            dir_times: Vec::new(),
        }
    }

    fn run(mut self) -> Result<Changes, ModuleError> {
        let source = self.source;
        let root = &source.root;
        let dest_missing = !self.listing.dest.exists;
        if root.kind == EntryKind::Dir {
            if dest_missing && self.source.root_name.is_some() {
                self.lines
                    .push(format!("created directory {}", self.listing.dest_path));
                self.writes
                    .push((self.directory(&self.listing.dest_path, None), 0));
            } else if dest_missing {
                self.lines
                    .push(format!("created directory {}", self.listing.dest_path));
            }
            let existing = self.listing.root.exists.then_some(&self.listing.root);
            self.visit_dir(root, existing)?;
        } else {
            // A file: into `dest` when it is a directory (or written as one), else as `dest`.
            let into_dir = self.listing.dest.kind == FileKind::Directory
                || self.listing.dest_path.ends_with('/');
            let name = self.source.root_name.clone().unwrap_or_default();
            let (path, existing) = if into_dir {
                (
                    join(&self.listing.dest_path, &name),
                    self.listing.entries.get(&name).cloned(),
                )
            } else {
                (
                    self.listing.dest_path.clone(),
                    self.listing.dest.exists.then(|| self.listing.dest.clone()),
                )
            };
            if into_dir && dest_missing {
                self.lines
                    .push(format!("created directory {}", self.listing.dest_path));
                self.writes
                    .push((self.directory(&self.listing.dest_path, None), 0));
            }
            self.root_path = path.clone();
            self.visit_leaf(root, &name, &path, existing.as_ref())?;
        }
        if self.opts.delete && root.kind == EntryKind::Dir {
            self.lines.append(&mut self.deletion_lines);
        }
        let Comparison {
            writes,
            deletions,
            mut times,
            mut dir_times,
            lines,
            ..
        } = self;
        // Batches of content up to BATCH_BYTES; the deletions and times go in the last.
        let mut steps = vec![Vec::new()];
        let mut size = 0;
        for (op, bytes) in writes {
            if size + bytes > BATCH_BYTES && !steps.last().is_some_and(Vec::is_empty) {
                steps.push(Vec::new());
                size = 0;
            }
            size += bytes;
            steps.last_mut().expect("a step").push(op);
        }
        let last = steps.last_mut().expect("a step");
        last.extend(deletions);
        last.append(&mut times);
        last.append(&mut dir_times);
        Ok(Changes { steps, lines })
    }

    fn shown(&self, rel: &str, kind: EntryKind) -> String {
        let name = shown_name(self.source.root_name.as_deref(), rel);
        if kind == EntryKind::Dir {
            format!("{name}/")
        } else {
            name
        }
    }

    fn remote_path(&self, rel: &str) -> String {
        if rel.is_empty() {
            self.root_path.clone()
        } else {
            join(&self.root_path, rel)
        }
    }

    fn ownership(&self, entry: &SourceEntry) -> Ownership {
        if !self.listing.root_user {
            return Ownership::default();
        }
        Ownership {
            user: self.opts.owner.then(|| name_of(&self.users, entry.uid)),
            group: self.opts.group.then(|| name_of(&self.groups, entry.gid)),
        }
    }

    fn directory(&self, path: &str, entry: Option<&SourceEntry>) -> Op {
        Op::EnsurePath(EnsurePath {
            path: path.to_string(),
            state: PathState::Directory,
            mode: entry
                .filter(|_| self.opts.perms)
                .map(|e| FileMode::Bits(e.mode)),
            recurse_parents: false,
            owner: entry.map(|e| self.ownership(e)).unwrap_or_default(),
        })
    }

    fn visit_dir(
        &mut self,
        dir: &'a SourceEntry,
        existing: Option<&StatInfo>,
    ) -> Result<(), ModuleError> {
        let path = self.remote_path(&dir.rel);
        let shown = self.shown(&dir.rel, EntryKind::Dir);
        let existing = match existing {
            Some(there) if there.kind != FileKind::Directory => {
                // Something else in a directory's place goes first.
                self.writes.push((absent(&path), 0));
                None
            }
            other => other,
        };
        match existing {
            None => {
                if self.opts.existing_only {
                    return Ok(());
                }
                self.lines.push(format!("cd+++++++++ {shown}"));
                self.writes.push((self.directory(&path, Some(dir)), 0));
            }
            Some(there) => {
                let flags = self.attr_flags(dir, there);
                if flags.any() {
                    self.lines.push(format!(".d{} {shown}", flags.text()));
                    if flags.perms || flags.owner || flags.group {
                        self.writes.push((self.directory(&path, Some(dir)), 0));
                    }
                }
            }
        }
        if let Some(skipped) = self.source.skipped.get(&dir.rel) {
            self.lines.extend(skipped.iter().cloned());
        }
        let time_differs =
            existing.is_none_or(|there| (there.mtime, there.mtime_nsec) != dir.mtime);
        let changes_before = self.writes.len() + self.deletions.len() + self.times.len();
        let (subdirs, leaves): (Vec<&'a SourceEntry>, Vec<&'a SourceEntry>) =
            dir.children.iter().partition(|c| c.kind == EntryKind::Dir);
        for leaf in leaves {
            let there = self.listing.entries.get(&leaf.rel).cloned();
            let child_path = self.remote_path(&leaf.rel);
            self.visit_leaf(leaf, &leaf.rel, &child_path, there.as_ref())?;
        }
        if self.opts.delete {
            self.note_extraneous(dir);
        }
        for sub in subdirs {
            let there = self.listing.entries.get(&sub.rel).cloned();
            if self.opts.recursive {
                self.visit_dir(sub, there.as_ref())?;
            } else {
                // `dirs` without recursion: the directory, never what is in it.
                let shown = self.shown(&sub.rel, EntryKind::Dir);
                if there.is_none() && !self.opts.existing_only {
                    self.lines.push(format!("cd+++++++++ {shown}"));
                    let path = self.remote_path(&sub.rel);
                    self.writes.push((self.directory(&path, Some(sub)), 0));
                }
            }
        }
        // After what is inside (children before their parents), and only where the time
        // is not already right: writing into a directory moves its time.
        let changed_inside =
            self.writes.len() + self.deletions.len() + self.times.len() != changes_before;
        if self.opts.times && (time_differs || changed_inside) {
            self.dir_times.push(set_times(&path, dir.mtime));
        }
        Ok(())
    }

    /// Entries of the target directory that the source does not have, for `delete`
    /// (`--delete-after`): listed after the transfer, in reverse name order, a
    /// directory's contents before it. Excluded names are kept, as rsync keeps them.
    fn note_extraneous(&mut self, dir: &SourceEntry) {
        let wanted: std::collections::HashSet<&str> =
            dir.children.iter().map(|c| c.rel.as_str()).collect();
        let prefix = if dir.rel.is_empty() {
            String::new()
        } else {
            format!("{}/", dir.rel)
        };
        let mut extra: Vec<(&String, &StatInfo)> = self
            .listing
            .entries
            .iter()
            .filter(|(rel, _)| {
                rel.strip_prefix(&prefix)
                    .is_some_and(|name| !name.is_empty() && !name.contains('/'))
                    && !wanted.contains(rel.as_str())
            })
            .filter(|(rel, stat)| {
                !excluded(&self.opts.filters, rel, stat.kind == FileKind::Directory)
            })
            .collect();
        extra.sort_by(|a, b| b.0.cmp(a.0));
        for (rel, stat) in extra {
            let mut lines = Vec::new();
            self.deleted_lines(rel, stat, &mut lines);
            self.deletion_lines.extend(lines);
            self.deletions.push(absent(&self.remote_path(rel)));
        }
    }

    fn deleted_lines(&self, rel: &str, stat: &StatInfo, lines: &mut Vec<String>) {
        if stat.kind == FileKind::Directory {
            let prefix = format!("{rel}/");
            let mut inside: Vec<(&String, &StatInfo)> = self
                .listing
                .entries
                .iter()
                .filter(|(r, _)| {
                    r.strip_prefix(&prefix)
                        .is_some_and(|name| !name.is_empty() && !name.contains('/'))
                })
                .collect();
            inside.sort_by(|a, b| b.0.cmp(a.0));
            for (r, s) in inside {
                self.deleted_lines(r, s, lines);
            }
            lines.push(format!("*deleting   {}", self.shown(rel, EntryKind::Dir)));
        } else {
            lines.push(format!("*deleting   {}", self.shown(rel, EntryKind::File)));
        }
    }

    fn visit_leaf(
        &mut self,
        leaf: &SourceEntry,
        rel: &str,
        path: &str,
        existing: Option<&StatInfo>,
    ) -> Result<(), ModuleError> {
        let shown = if leaf.rel.is_empty() {
            rel.to_string()
        } else {
            self.shown(&leaf.rel, leaf.kind)
        };
        let wanted_kind = match leaf.kind {
            EntryKind::Link => FileKind::Symlink,
            _ => FileKind::File,
        };
        let existing = match existing {
            Some(there) if there.kind != wanted_kind => {
                self.writes.push((absent(path), 0));
                None
            }
            other => other,
        };
        if existing.is_none() && self.opts.existing_only {
            return Ok(());
        }
        match leaf.kind {
            EntryKind::Link => {
                let target = leaf.link.clone().unwrap_or_default();
                let same = existing.is_some_and(|e| e.link_target.as_deref() == Some(&target));
                if let (true, Some(there)) = (same, existing) {
                    if self.attr_flags(leaf, there).time {
                        self.lines.push(format!(".L..t...... {shown} -> {target}"));
                        self.times.push(set_times(path, leaf.mtime));
                    }
                    return Ok(());
                }
                let flags = if existing.is_some() {
                    "c.........".to_string()
                } else {
                    "+++++++++".to_string()
                };
                self.lines.push(format!("cL{flags} {shown} -> {target}"));
                self.writes.push((
                    Op::EnsurePath(EnsurePath {
                        path: path.to_string(),
                        state: PathState::Link {
                            target,
                            force: true,
                        },
                        mode: None,
                        recurse_parents: false,
                        owner: Ownership::default(),
                    }),
                    0,
                ));
                if self.opts.times {
                    self.times.push(set_times(path, leaf.mtime));
                }
            }
            EntryKind::File | EntryKind::Dir => {
                if leaf.size > FILE_LIMIT {
                    return Err(ModuleError::Invalid(format!(
                        "{}: {} bytes; turbo-play's synchronize sends files of up to {} MiB \
                         (copy a larger file with the copy module)",
                        leaf.path.display(),
                        leaf.size,
                        FILE_LIMIT >> 20
                    )));
                }
                let transfer = match existing {
                    None => true,
                    Some(there) => {
                        there.size != leaf.size
                            || if self.opts.checksum {
                                there.checksum.as_deref() != Some(&local_sha256(&leaf.path)?[..])
                            } else {
                                (there.mtime, there.mtime_nsec) != leaf.mtime
                            }
                    }
                };
                match existing {
                    None => {
                        self.lines
                            .push(format!("{}f+++++++++ {shown}", self.sender));
                    }
                    Some(there) => {
                        let mut flags = self.attr_flags(leaf, there);
                        flags.content = self.opts.checksum && transfer;
                        flags.size = there.size != leaf.size;
                        if transfer && !self.opts.times {
                            flags.transfer_time = true;
                        }
                        if transfer {
                            self.lines
                                .push(format!("{}f{} {shown}", self.sender, flags.text()));
                        } else if flags.any() {
                            self.lines.push(format!(".f{} {shown}", flags.text()));
                        }
                        if !transfer && (flags.perms || flags.owner || flags.group) {
                            self.writes.push((
                                Op::EnsurePath(EnsurePath {
                                    path: path.to_string(),
                                    state: PathState::File,
                                    mode: self.opts.perms.then_some(FileMode::Bits(leaf.mode)),
                                    recurse_parents: false,
                                    owner: self.ownership(leaf),
                                }),
                                0,
                            ));
                        }
                        if !transfer && flags.time && self.opts.times {
                            self.times.push(set_times(path, leaf.mtime));
                        }
                        if !transfer {
                            return Ok(());
                        }
                    }
                }
                let bytes = std::fs::read(&leaf.path).map_err(|e| read_error(&leaf.path, &e))?;
                let size = bytes.len() as u64;
                self.writes.push((
                    Op::EnsureFile(EnsureFile {
                        path: path.to_string(),
                        content: FileContent::Inline(bytes),
                        // Without `perms` rsync gives a new file the source's bits under the
                        // usual umask, and leaves an existing file's alone.
                        mode: self
                            .opts
                            .perms
                            .then_some(FileMode::Bits(leaf.mode))
                            .or_else(|| {
                                existing
                                    .is_none()
                                    .then_some(FileMode::Bits(leaf.mode & !0o022))
                            }),
                        force: true,
                        owner: self.ownership(leaf),
                        validate: None,
                        backup: false,
                    }),
                    size,
                ));
                if self.opts.times {
                    self.times.push(set_times(path, leaf.mtime));
                }
            }
        }
        Ok(())
    }

    fn attr_flags(&self, entry: &SourceEntry, there: &StatInfo) -> Flags {
        let owner = self.listing.root_user && self.opts.owner && there.uid != entry.uid;
        let group = self.listing.root_user && self.opts.group && there.gid != entry.gid;
        Flags {
            content: false,
            size: false,
            time: self.opts.times && (there.mtime, there.mtime_nsec) != entry.mtime,
            transfer_time: false,
            perms: self.opts.perms && there.mode != entry.mode,
            owner,
            group,
        }
    }
}

/// The letters of rsync's `%i` after the type: checksum, size, time, perms, owner,
/// group, then three unused places.
#[derive(Debug, Default)]
struct Flags {
    content: bool,
    size: bool,
    time: bool,
    /// Times not kept: the copy gets the time of writing (`T`).
    transfer_time: bool,
    perms: bool,
    owner: bool,
    group: bool,
}

impl Flags {
    fn any(&self) -> bool {
        self.content || self.size || self.time || self.perms || self.owner || self.group
    }

    fn text(&self) -> String {
        let mark = |on: bool, c: char| if on { c } else { '.' };
        let time = if self.transfer_time {
            'T'
        } else {
            mark(self.time, 't')
        };
        [
            mark(self.content, 'c'),
            mark(self.size, 's'),
            time,
            mark(self.perms, 'p'),
            mark(self.owner, 'o'),
            mark(self.group, 'g'),
            '.',
            '.',
            '.',
        ]
        .iter()
        .collect()
    }
}

fn absent(path: &str) -> Op {
    Op::EnsurePath(EnsurePath {
        path: path.to_string(),
        state: PathState::Absent,
        mode: None,
        recurse_parents: false,
        owner: Ownership::default(),
    })
}

fn set_times(path: &str, (mtime, mtime_nsec): (i64, u32)) -> Op {
    Op::SetTimes {
        path: path.to_string(),
        mtime,
        mtime_nsec,
    }
}

fn local_sha256(path: &Path) -> Result<[u8; 32], ModuleError> {
    super::local_digest(path).map(|(digest, _)| digest)
}

/// The name of an id, else the number.
fn name_of(names: &HashMap<u32, String>, id: u32) -> String {
    names.get(&id).cloned().unwrap_or_else(|| id.to_string())
}

/// `name:x:id:...` lines of /etc/passwd or /etc/group, by id (the first name of an id).
fn id_names(file: &str) -> HashMap<u32, String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut names = HashMap::new();
    for line in text.lines() {
        let mut fields = line.split(':');
        if let (Some(name), Some(Ok(id))) = (fields.next(), fields.nth(1).map(str::parse::<u32>)) {
            names.entry(id).or_insert_with(|| name.to_string());
        }
    }
    names
}

/// The rsync command Ansible's module would have run, for the result's `cmd`.
fn command_line(opts: &Options, src: &str, dest: &str, ctx: &PlanContext) -> String {
    let mut cmd = vec!["rsync".to_string()];
    if opts.delay_updates {
        cmd.push("--delay-updates".into());
        cmd.push("-F".into());
    }
    if opts.compress {
        cmd.push("--compress".into());
    }
    if ctx.check_mode {
        cmd.push("--dry-run".into());
    }
    if opts.delete {
        cmd.push("--delete-after".into());
    }
    if opts.existing_only {
        cmd.push("--existing".into());
    }
    if opts.checksum {
        cmd.push("--checksum".into());
    }
    if opts.copy_links {
        cmd.push("--copy-links".into());
    }
    if opts.archive {
        cmd.push("--archive".into());
        for (on, off) in [
            (opts.recursive, "--no-recursive"),
            (opts.links, "--no-links"),
            (opts.perms, "--no-perms"),
            (opts.times, "--no-times"),
            (opts.owner, "--no-owner"),
            (opts.group, "--no-group"),
        ] {
            if !on {
                cmd.push(off.into());
            }
        }
    } else {
        for (on, flag) in [
            (opts.recursive, "--recursive"),
            (opts.links, "--links"),
            (opts.perms, "--perms"),
            (opts.times, "--times"),
            (opts.owner, "--owner"),
            (opts.group, "--group"),
        ] {
            if on {
                cmd.push(flag.into());
            }
        }
    }
    if opts.dirs {
        cmd.push("--dirs".into());
    }
    cmd.extend(opts.rsync_opts.iter().cloned());
    cmd.push("--out-format='<<CHANGED>>%i %n%L'".into());
    cmd.push(src.to_string());
    let var = |name: &str| {
        ctx.vars
            .and_then(|v| v.get_attr(name).ok())
            .and_then(|v| v.as_str().map(str::to_string))
    };
    match var("ansible_host").or_else(|| var("inventory_hostname")) {
        Some(host) if !local_connection(ctx) => match var("ansible_user") {
            Some(user) => cmd.push(format!("{user}@{host}:{dest}")),
            None => cmd.push(format!("{host}:{dest}")),
        },
        _ => cmd.push(dest.to_string()),
    }
    cmd.join(" ")
}

/// What the result reports once the ops ran (or, in check mode, would run).
struct Finished {
    lines: Vec<String>,
    cmd: String,
    diff: bool,
}

impl Finished {
    fn outcome(self) -> TaskOutcome {
        let msg: String = self.lines.iter().map(|l| format!("{l}\n")).collect();
        let changed = self
            .lines
            .iter()
            .any(|l| !l.starts_with("skipping ") && !l.starts_with("created directory"));
        let mut outcome = TaskOutcome {
            changed,
            ..TaskOutcome::default()
        };
        outcome.data.insert("msg".into(), json!(msg));
        outcome.data.insert("rc".into(), json!(0));
        outcome.data.insert("cmd".into(), json!(self.cmd));
        outcome
            .data
            .insert("stdout_lines".into(), json!(self.lines));
        if self.diff {
            outcome
                .data
                .insert("diff".into(), json!({ "prepared": msg }));
        }
        outcome
    }
}

/// The batches one after another; the first refusal fails the task with the agent's words.
fn send_steps(mut steps: Vec<Vec<Op>>, result: Finished) -> Plan {
    let ops = steps.remove(0);
    Plan::Step(
        Op::Batch(ops),
        Next::new(move |reply| {
            let results = match reply {
                OpResult::Batch(results) => results,
                other => vec![other],
            };
            if let Some(OpResult::Error(e)) =
                results.iter().find(|r| matches!(r, OpResult::Error(_)))
            {
                let mut outcome = TaskOutcome::failed(e.message.clone());
                outcome.data.insert("rc".into(), json!(23));
                outcome.data.insert("cmd".into(), Value::String(result.cmd));
                return Ok(Plan::Done(outcome));
            }
            if steps.is_empty() {
                return Ok(Plan::Done(result.outcome()));
            }
            Ok(send_steps(steps, result))
        }),
    )
}

#[cfg(test)]
#[path = "synchronize_tests.rs"]
mod tests;
