//! ansible.posix's `synchronize` without rsync: the sender's tree is walked (by the
//! controller, or listed by the sender's agent), the receiver's agent lists the
//! destination in one exchange (`ListTree`, with digests under `checksum`), and what
//! rsync would send goes out in a few batches: directories, links and small files, then
//! the bytes of the other files (`synchronize_transfer.rs`), then deletions and the times
//! rsync's `--times` keeps (directories last, deepest first, so writing into them does not
//! move them again). Where the two ends are, as the action plugin decides it (push, pull,
//! delegated), is `synchronize_route.rs`. The result is what the module reports after
//! running rsync with Ansible's `--out-format='<<CHANGED>>%i %n%L'`: the same itemized
//! lines in rsync's order, `changed` when there is one, `cmd`, `rc`.

use std::collections::{HashMap, VecDeque};
use std::path::Path;

use serde_json::json;
use turbo_proto::{
    Command, Digest, EnsureFile, EnsurePath, Exec, FileContent, FileKind, FileMode, Op, OpResult,
    Ownership, PathState, StatInfo,
};

use super::spec::{Arg, Elem, Spec};
use super::synchronize_route::{Route, Sender};
use super::synchronize_source::*;
use super::synchronize_transfer::{BATCH_BYTES, Carry, INLINE_MAX, Move, Stage, carry};
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, find_local_source};

pub struct Synchronize;

/// Options of rsync's connection (how it reaches the host, not what it copies): the agent's
/// session is that connection. Their values still show in `cmd`.
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
        .default_str("push"),
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

impl Module for Synchronize {
    fn name(&self) -> &'static str {
        "synchronize"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let opts = Options::from_args(args)?;
        let written_src = args.str("src").unwrap_or_default().to_string();
        let written_dest = args.str("dest").unwrap_or_default().to_string();
        let route = Route::decide(ctx, &written_src, &written_dest, &opts);
        let task = Task {
            cmd: route.command_line(&opts, ctx.check_mode),
            opts,
            check: ctx.check_mode,
            diff: ctx.diff,
            route,
        };
        match task.route.sender {
            Sender::Controller => {
                let src = find_local_source(&written_src, ctx, "files")?;
                let contents_only = written_src.ends_with('/');
                let source = walk_source(&src, contents_only, &task.opts)?;
                Ok(list_destination(source, task))
            }
            Sender::Agent(peer) => {
                let src = task.route.src.clone();
                let listed = match src.trim_end_matches('/') {
                    "" => "/".to_string(),
                    trimmed => trimmed.to_string(),
                };
                let op = Op::ListTree {
                    path: listed,
                    max_depth: (!task.opts.recursive).then_some(1),
                    follow: task.opts.copy_links,
                    checksum: task.opts.checksum.then_some(Digest::Sha256),
                };
                Ok(Plan::Step(
                    op,
                    Next::new(move |reply| {
                        let OpResult::Tree(tree) = reply else {
                            return Err(reply_error(reply));
                        };
                        match source_from_tree(&src, tree.root, tree.entries, &task.opts)? {
                            Ok(source) => Ok(list_destination(source, task)),
                            Err(message) => {
                                let mut outcome = TaskOutcome::failed(message);
                                outcome.data.insert("rc".into(), json!(23));
                                outcome.data.insert("cmd".into(), json!(task.cmd));
                                Ok(Plan::Done(outcome))
                            }
                        }
                    })
                    .on(peer),
                ))
            }
        }
    }
}

/// One synchronize task as planned: its options, ends and command line.
struct Task {
    opts: Options,
    route: Route,
    cmd: String,
    check: bool,
    diff: bool,
}

/// The receiver's listing of `dest`, then the comparison and what it takes.
fn list_destination(source: Source, task: Task) -> Plan {
    let dest = task.route.dest.clone();
    // Where the walked root lands: `dest` itself for `dir/` and for a file copied to a
    // new name, `dest/<name>` otherwise (rsync's rule; a file into an existing
    // directory is settled once the listing says what `dest` is).
    let target = match &source.root_name {
        Some(name) if source.root.kind == EntryKind::Dir => join(&dest, name),
        _ => dest.clone(),
    };
    let mut ops = vec![
        Op::Stat {
            path: dest.clone(),
            follow: true,
            checksum: None,
        },
        Op::ListTree {
            path: target.clone(),
            // A file needs only what `dest` holds at its top.
            max_depth: (source.root.kind != EntryKind::Dir || !task.opts.recursive).then_some(1),
            follow: false,
            checksum: task.opts.checksum.then_some(Digest::Sha256),
        },
    ];
    if task.opts.owner || task.opts.group {
        ops.push(Op::Exec(Exec::plain(Command::Argv(vec![
            "id".into(),
            "-u".into(),
        ]))));
    }
    let receiver = task.route.receiver;
    Plan::Step(
        Op::Batch(ops),
        Next::new(move |reply| {
            let listing = Listing::from_reply(reply, &dest, &target)?;
            let local = task.route.sender == Sender::Controller;
            let mut changes =
                Comparison::new(&source, &listing, &task.opts, task.route.sent, local).run()?;
            let result = Finished {
                lines: std::mem::take(&mut changes.lines),
                cmd: task.cmd,
                diff: task.diff,
            };
            let nothing = changes.steps.iter().all(Vec::is_empty)
                && changes.moves.is_empty()
                && changes.finals.is_empty();
            if task.check || nothing {
                return Ok(Plan::Done(result.outcome()));
            }
            let mut stages: VecDeque<Stage> =
                changes.steps.into_iter().map(Stage::Receiver).collect();
            stages.push_back(Stage::Moves(changes.moves));
            stages.push_back(Stage::Receiver(changes.finals));
            Ok(carry(
                stages,
                Carry {
                    sender: task.route.sender,
                    receiver: task.route.receiver,
                    outcome: result.outcome(),
                },
            ))
        })
        .on(receiver)
        .touching(format!("synchronize:{}", task.route.dest)),
    )
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
    /// `mode: pull`.
    pub(super) pull: bool,
    /// What only the command line shows.
    pub(super) set_remote_user: bool,
    pub(super) dest_port: Option<i64>,
    pub(super) private_key: Option<String>,
    pub(super) ssh_connection_multiplexing: bool,
    pub(super) verify_host: bool,
    pub(super) partial: bool,
}

impl Options {
    pub(super) fn from_args(args: &Args) -> Result<Options, ModuleError> {
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
            pull: args.str("mode") == Some("pull"),
            set_remote_user: args.bool("set_remote_user"),
            dest_port: args.int("dest_port"),
            private_key: args.str("private_key").map(str::to_string),
            ssh_connection_multiplexing: args.bool("ssh_connection_multiplexing"),
            verify_host: args.bool("verify_host"),
            partial: args.bool("partial"),
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

/// The receiver's ops in the order they must run (one request each, inline content split
/// by size), the files whose bytes come after them, the deletions and times that come
/// last, and rsync's itemized lines.
struct Changes {
    steps: Vec<Vec<Op>>,
    moves: Vec<Move>,
    finals: Vec<Op>,
    lines: Vec<String>,
}

struct Comparison<'a> {
    source: &'a Source,
    listing: &'a Listing,
    opts: &'a Options,
    /// rsync's `%i` letter for a file sent.
    sent: char,
    /// The sender is the controller: its files are read here.
    local: bool,
    /// The controller's user and group names by id, read once (rsync keeps owners by
    /// name); empty unless owners are kept.
    users: HashMap<u32, String>,
    groups: HashMap<u32, String>,
    /// Where the root lands on the target; a file root may land inside `dest`.
    root_path: String,
    lines: Vec<String>,
    writes: Vec<(Op, u64)>,
    moves: Vec<Move>,
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
        sent: char,
        local: bool,
    ) -> Comparison<'a> {
        Comparison {
            source,
            listing,
            opts,
            sent,
            local,
            users: if local && listing.root_user && opts.owner {
                id_names("/etc/passwd")
            } else {
                HashMap::new()
            },
            groups: if local && listing.root_user && opts.group {
                id_names("/etc/group")
            } else {
                HashMap::new()
            },
            root_path: listing.target.clone(),
            lines: source.skipped.get("..").cloned().unwrap_or_default(),
            writes: Vec::new(),
            moves: Vec::new(),
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
            moves,
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
        let mut finals = deletions;
        finals.append(&mut times);
        finals.append(&mut dir_times);
        Ok(Changes {
            steps,
            moves,
            finals,
            lines,
        })
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
        let (user, group) = match &entry.names {
            Some((user, group)) => (user.clone(), group.clone()),
            None => (
                name_of(&self.users, entry.uid),
                name_of(&self.groups, entry.gid),
            ),
        };
        Ownership {
            user: self.opts.owner.then_some(user),
            group: self.opts.group.then_some(group),
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
                let transfer = match existing {
                    None => true,
                    Some(there) => {
                        there.size != leaf.size
                            || if self.opts.checksum {
                                let sum = match &leaf.checksum {
                                    Some(sum) => sum.clone(),
                                    None => local_sha256(&leaf.path)?.to_vec(),
                                };
                                there.checksum.as_deref() != Some(&sum[..])
                            } else {
                                (there.mtime, there.mtime_nsec) != leaf.mtime
                            }
                    }
                };
                match existing {
                    None => {
                        self.lines.push(format!("{}f+++++++++ {shown}", self.sent));
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
                                .push(format!("{}f{} {shown}", self.sent, flags.text()));
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
                let ensure = EnsureFile {
                    path: path.to_string(),
                    content: FileContent::Inline(Vec::new()),
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
                };
                if self.local && leaf.size <= INLINE_MAX {
                    let bytes =
                        std::fs::read(&leaf.path).map_err(|e| read_error(&leaf.path, &e))?;
                    let size = bytes.len() as u64;
                    let op = Op::EnsureFile(EnsureFile {
                        content: FileContent::Inline(bytes),
                        ..ensure
                    });
                    self.writes.push((op, size));
                } else {
                    self.moves.push(Move {
                        from: leaf.path.display().to_string(),
                        size: leaf.size,
                        ensure,
                        basis: existing.is_some(),
                    });
                }
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

#[cfg(test)]
#[path = "synchronize_tests.rs"]
mod tests;
