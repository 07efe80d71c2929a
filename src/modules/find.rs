//! `find`: files under directories on the target, filtered as Ansible's find module filters
//! them. One round trip lists every path (`ListTree`, with the SHA-1s when `get_checksum`);
//! `follow` costs one more (Ansible reports links by `lstat` even when it walks through
//! them), and `contains` one more for the contents of the files every other filter kept.
//! The walk itself, Ansible's `os.walk` loop with its counters and quirks, runs here on the
//! listing ([`Search::evaluate`]).

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};
use turbo_proto::{Digest, FileKind, Op, OpResult, StatInfo, TreeListing};

use super::fetch_dest::normpath;
use super::find_filters::{
    Names, age_matches, mode_matches, parse_age, parse_octal_mode, parse_size, size_matches,
};
use super::spec::{Arg, Elem, Spec};
use super::text_file;
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, unexpected};
use crate::template::pyregex::{Anchor, PyRegex};

pub struct Find;

/// ansible-core 2.21's find.
static SPEC: Spec = Spec::new(&[
    Arg::str("age"),
    Arg::str("age_stamp")
        .default_str("mtime")
        .choices(&["atime", "ctime", "mtime"]),
    Arg::str("checksum_algorithm")
        .aliases(&["checksum", "checksum_algo"])
        .choices(&["md5", "sha1", "sha224", "sha256", "sha384", "sha512"])
        .default_str("sha1"),
    Arg::str("contains"),
    Arg::int("depth"),
    Arg::str("encoding"),
    Arg::bool("exact_mode").default_bool(true),
    Arg::list("excludes", Elem::Str).aliases(&["exclude"]),
    Arg::str("file_type")
        .default_str("file")
        .choices(&["any", "directory", "file", "link"]),
    Arg::bool("follow").default_bool(false),
    Arg::bool("get_checksum").default_bool(false),
    Arg::bool("hidden").default_bool(false),
    Arg::int("limit"),
    Arg::raw("mode"),
    Arg::list("paths", Elem::Path)
        .aliases(&["name", "path"])
        .required(),
    Arg::list("patterns", Elem::Str).aliases(&["pattern"]),
    Arg::bool("read_whole_file").default_bool(false),
    Arg::bool("recurse").default_bool(false),
    Arg::str("size"),
    Arg::bool("use_regex").default_bool(false),
]);

#[derive(Clone, Copy, PartialEq, Eq)]
enum FileType {
    Any,
    Directory,
    File,
    Link,
}

#[derive(Clone, Copy)]
enum Stamp {
    Atime,
    Ctime,
    Mtime,
}

/// The validated query.
struct Search {
    names: Names,
    contains: Option<PyRegex>,
    /// `read_whole_file`: `contains` searched in the whole text, not matched per line.
    whole_file: bool,
    file_type: FileType,
    age: Option<i64>,
    stamp: Stamp,
    size: Option<i64>,
    recurse: bool,
    depth: Option<u32>,
    hidden: bool,
    follow: bool,
    checksum: bool,
    mode: Option<u32>,
    exact_mode: bool,
    limit: Option<i64>,
    encoding: Option<String>,
    now: f64,
}

/// One `paths` entry as the target described it.
struct Listed {
    /// Whether the path is a directory (through a symlink, as `os.path.isdir`).
    is_dir: bool,
    /// The path with `~` expanded.
    path: String,
    tree: TreeListing,
}

/// A file's content for `contains`, as far as the module can read it.
enum Content {
    Text(String),
    /// Not valid in the encoding: Ansible stops searching that path.
    Undecodable(String),
    /// Unreadable or gone: not a match.
    Unreadable,
}

impl Module for Find {
    fn name(&self) -> &'static str {
        "find"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let search = match Search::new(args)? {
            Ok(search) => search,
            Err(failure) => return Ok(Plan::Done(failure)),
        };
        let paths = args.str_list("paths");
        let max_depth = match (search.recurse, search.depth) {
            (false, _) => Some(1),
            // One level more than matched: Ansible's walk counts the entries of the
            // deepest directories it enters before it stops.
            (true, Some(d)) => Some(d + 1),
            (true, None) => None,
        };
        let digest = search.checksum.then(|| checksum_digest(args)).transpose()?;
        let mut ops = Vec::new();
        for path in &paths {
            ops.push(Op::ListTree {
                path: path.clone(),
                max_depth,
                follow: search.follow,
                checksum: digest,
            });
            ops.push(Op::Stat {
                path: path.clone(),
                checksum: None,
                follow: true,
            });
        }
        Ok(Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| Ok(after_listing(search, reply))),
        ))
    }
}

fn checksum_digest(args: &Args) -> Result<Digest, ModuleError> {
    match args.str("checksum_algorithm") {
        Some("sha256") => Ok(Digest::Sha256),
        Some("sha1") | None => Ok(Digest::Sha1),
        _ => Err(ModuleError::NotSupported(
            "find's checksum_algorithm other than sha1 or sha256",
        )),
    }
}

fn fail_with(key: &str, value: &str, msg: &str) -> TaskOutcome {
    let mut out = TaskOutcome::failed(msg);
    out.data.insert(key.into(), json!(value));
    out
}

impl Search {
    /// The query, or the failure Ansible's module reports for its arguments.
    fn new(args: &Args) -> Result<Result<Search, TaskOutcome>, ModuleError> {
        let mode = match args.raw("mode") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s)) => Some(parse_octal_mode(s).ok_or(
                ModuleError::NotSupported("find's symbolic mode (write it in octal)"),
            )?),
            Some(other) => {
                return Ok(Err(TaskOutcome::failed(format!(
                    "argument 'mode' is not a string and conversion is not allowed, value is of type {}",
                    crate::template::python_type(other)
                ))));
            }
        };
        if args.is_set("encoding") {
            text_file::check_encoding(args, "find")?;
        }
        let use_regex = args.bool("use_regex");
        let mut patterns = args.str_list("patterns");
        if patterns.is_empty() {
            patterns.push(if use_regex { ".*" } else { "*" }.to_string());
        }
        let names = Names::new(patterns, args.str_list("excludes"), use_regex)
            .map_err(ModuleError::Invalid)?;
        let age = match args.str("age") {
            None => None,
            Some(text) => match parse_age(text) {
                Some(age) => Some(age),
                None => return Ok(Err(fail_with("age", text, "failed to process age"))),
            },
        };
        let size = match args.str("size") {
            None => None,
            Some(text) => match parse_size(text) {
                Some(size) => Some(size),
                None => return Ok(Err(fail_with("size", text, "failed to process size"))),
            },
        };
        let limit = args.int("limit");
        if let Some(limit) = limit.filter(|l| *l <= 0) {
            return Ok(Err(TaskOutcome::failed(format!(
                "limit cannot be {limit} (use None for unlimited)"
            ))));
        }
        let contains = match args.str("contains") {
            None => None,
            Some(pattern) => {
                let anchor = if args.bool("read_whole_file") {
                    Anchor::Search
                } else {
                    Anchor::Start
                };
                let body = if args.bool("read_whole_file") {
                    pattern.to_string()
                } else {
                    text_file::line_pattern(pattern)
                };
                Some(
                    PyRegex::new(&body, anchor, false, false)
                        .map_err(|e| ModuleError::Invalid(e.to_string()))?,
                )
            }
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or_default();
        Ok(Ok(Search {
            names,
            contains,
            whole_file: args.bool("read_whole_file"),
            file_type: match args.str("file_type") {
                Some("any") => FileType::Any,
                Some("directory") => FileType::Directory,
                Some("link") => FileType::Link,
                _ => FileType::File,
            },
            age,
            stamp: match args.str("age_stamp") {
                Some("atime") => Stamp::Atime,
                Some("ctime") => Stamp::Ctime,
                _ => Stamp::Mtime,
            },
            size,
            recurse: args.bool("recurse"),
            // `if params['depth']`: 0 is no limit.
            depth: args
                .int("depth")
                .filter(|d| *d != 0)
                .map(|d| d.clamp(0, u32::MAX as i64) as u32),
            hidden: args.bool("hidden"),
            follow: args.bool("follow"),
            checksum: args.bool("get_checksum"),
            mode,
            exact_mode: args.bool("exact_mode"),
            limit,
            encoding: args.str("encoding").map(str::to_string),
            now,
        }))
    }
}

fn after_listing(search: Search, reply: OpResult) -> Plan {
    let OpResult::Batch(replies) = reply else {
        return Plan::Done(unexpected("find", reply));
    };
    let mut listed = Vec::new();
    let mut replies = replies.into_iter();
    while let (Some(tree), Some(stat)) = (replies.next(), replies.next()) {
        let (OpResult::Tree(tree), OpResult::Stat(stat)) = (tree, stat) else {
            return Plan::Done(TaskOutcome::failed(
                "internal error: find got an unexpected reply from the agent",
            ));
        };
        listed.push(Listed {
            is_dir: stat.kind == FileKind::Directory,
            path: stat.path,
            tree,
        });
    }
    if !search.follow {
        return with_lstats(search, listed, HashMap::new());
    }
    // Under `follow` the listing describes links by what they point to; Ansible reports
    // each entry by lstat all the same.
    let paths: Vec<String> = listed
        .iter()
        .flat_map(|l| l.tree.entries.iter().map(|e| e.path.clone()))
        .collect();
    let ops = paths
        .iter()
        .map(|p| Op::Stat {
            path: p.clone(),
            checksum: None,
            follow: false,
        })
        .collect();
    Plan::Step(
        Op::Batch(ops),
        Next::new(move |reply| {
            let OpResult::Batch(stats) = reply else {
                return Ok(Plan::Done(unexpected("find", reply)));
            };
            let lstats = paths
                .into_iter()
                .zip(stats)
                .filter_map(|(p, r)| match r {
                    OpResult::Stat(s) if s.exists => Some((p, s)),
                    _ => None,
                })
                .collect();
            Ok(with_lstats(search, listed, lstats))
        }),
    )
}

fn with_lstats(search: Search, listed: Vec<Listed>, lstats: HashMap<String, StatInfo>) -> Plan {
    let wanted = match &search.contains {
        None => Vec::new(),
        Some(_) => search.evaluate(&listed, &lstats, None).needed,
    };
    if wanted.is_empty() {
        let found = search.evaluate(&listed, &lstats, Some(&HashMap::new()));
        return Plan::Done(found.outcome());
    }
    read_contents(wanted, HashMap::new(), search, listed, lstats)
}

/// Reads every file in `paths` to its end (a file bigger than one reply takes more
/// rounds), then evaluates with their contents.
fn read_contents(
    paths: Vec<(String, u64)>,
    mut bytes: HashMap<String, Option<Vec<u8>>>,
    search: Search,
    listed: Vec<Listed>,
    lstats: HashMap<String, StatInfo>,
) -> Plan {
    let ops = paths
        .iter()
        .map(|(path, offset)| Op::ReadFile {
            path: path.clone(),
            offset: *offset,
            limit: None,
        })
        .collect();
    Plan::Step(
        Op::Batch(ops),
        Next::new(move |reply| {
            let OpResult::Batch(reads) = reply else {
                return Ok(Plan::Done(unexpected("find", reply)));
            };
            let mut more = Vec::new();
            for ((path, _), read) in paths.into_iter().zip(reads) {
                match read {
                    OpResult::Read(read) if read.stat.kind == FileKind::File => {
                        let so_far = bytes
                            .entry(path.clone())
                            .or_insert_with(|| Some(Vec::new()));
                        if let Some(so_far) = so_far {
                            so_far.extend_from_slice(&read.data);
                            if !read.eof {
                                more.push((path, so_far.len() as u64));
                            }
                        }
                    }
                    _ => {
                        bytes.insert(path, None);
                    }
                }
            }
            if !more.is_empty() {
                return Ok(read_contents(more, bytes, search, listed, lstats));
            }
            let contents = bytes
                .into_iter()
                .map(|(path, data)| {
                    let content = match data {
                        None => Content::Unreadable,
                        Some(data) => match text_file::decode(&data, true) {
                            Ok(text) => Content::Text(text),
                            Err(_) => Content::Undecodable(format!(
                                "Failed to decode the file {} with encoding: {}",
                                python_repr(&path),
                                search
                                    .encoding
                                    .clone()
                                    .unwrap_or_else(|| "utf-8 (Python default)".into())
                            )),
                        },
                    };
                    (path, content)
                })
                .collect();
            Ok(Plan::Done(
                search.evaluate(&listed, &lstats, Some(&contents)).outcome(),
            ))
        }),
    )
}

/// Python's `repr` of a path string: single quotes unless it holds one.
fn python_repr(text: &str) -> String {
    if text.contains('\'') && !text.contains('"') {
        format!("\"{text}\"")
    } else {
        format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// What the walk found.
#[derive(Default)]
struct Found {
    files: Vec<Value>,
    examined: u64,
    skipped: BTreeMap<String, String>,
    warnings: Vec<String>,
    limit_reached: bool,
    /// Files whose content `contains` must see (path, offset 0), when evaluated without.
    needed: Vec<(String, u64)>,
}

impl Found {
    fn outcome(self) -> TaskOutcome {
        let msg = if !self.warnings.is_empty() {
            "Not all paths examined, check warnings for details"
        } else if self.limit_reached {
            "Limit of matches reached"
        } else {
            "All paths examined"
        };
        let mut out = TaskOutcome {
            msg: Some(msg.into()),
            ..TaskOutcome::default()
        };
        out.data.insert("matched".into(), json!(self.files.len()));
        out.data.insert("files".into(), Value::Array(self.files));
        out.data.insert("examined".into(), json!(self.examined));
        let skipped: Map<String, Value> = self
            .skipped
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        out.data
            .insert("skipped_paths".into(), Value::Object(skipped));
        if !self.warnings.is_empty() {
            out.data.insert("warnings".into(), json!(self.warnings));
        }
        out
    }
}

/// The walk's position in one listing: entries grouped under their directory.
struct Tree<'a> {
    children: HashMap<&'a str, Vec<&'a StatInfo>>,
    root: &'a str,
}

impl<'a> Tree<'a> {
    fn new(listing: &'a TreeListing) -> Tree<'a> {
        let root = listing.root.path.as_str();
        let mut children: HashMap<&str, Vec<&StatInfo>> = HashMap::new();
        for entry in &listing.entries {
            let rel = relative(root, &entry.path);
            let parent = rel.rsplit_once('/').map_or("", |(p, _)| p);
            children.entry(parent).or_default().push(entry);
        }
        Tree { children, root }
    }

    fn rel(&self, entry: &'a StatInfo) -> &'a str {
        relative(self.root, &entry.path)
    }
}

fn relative<'p>(root: &str, path: &'p str) -> &'p str {
    path.strip_prefix(root)
        .map(|r| r.trim_start_matches('/'))
        .unwrap_or(path)
}

/// Why a walk stopped early.
enum Stop {
    /// `limit` matches.
    Limit,
    /// A file `contains` could not decode: Ansible gives up the whole path.
    Undecodable(String),
}

impl Search {
    /// Ansible's walk over the listings. Without `contents`, every file that only
    /// `contains` can still decide is collected in `needed` instead.
    fn evaluate(
        &self,
        listed: &[Listed],
        lstats: &HashMap<String, StatInfo>,
        contents: Option<&HashMap<String, Content>>,
    ) -> Found {
        let mut found = Found::default();
        for l in listed {
            if !l.is_dir {
                let why = format!("'{}' is not a directory", l.path);
                found.warnings.push(format!(
                    "Skipped '{}' path due to this access issue: {why}\n",
                    l.path
                ));
                found.skipped.insert(l.path.clone(), why);
                continue;
            }
            for s in &l.tree.skipped {
                found
                    .skipped
                    .insert(s.path.clone(), python_os_error(&s.message, &s.path));
            }
            let tree = Tree::new(&l.tree);
            let walk = Walk {
                search: self,
                tree: &tree,
                npath: &l.path,
                lstats,
                contents,
            };
            match walk.dir("", &mut found) {
                Ok(()) => {}
                Err(Stop::Limit) => found.limit_reached = true,
                Err(Stop::Undecodable(why)) => {
                    found.warnings.push(format!(
                        "Skipped '{}' path due to this access issue: {why}\n",
                        l.path
                    ));
                    found.skipped.insert(l.path.clone(), why);
                }
            }
        }
        found
    }
}

/// Python's `str(OSError)` for what the agent reported in Rust's words.
fn python_os_error(message: &str, path: &str) -> String {
    for (rust, errno, text) in [
        ("os error 13", 13, "Permission denied"),
        ("os error 2", 2, "No such file or directory"),
        ("os error 1", 1, "Operation not permitted"),
    ] {
        if message.contains(rust) {
            return format!("[Errno {errno}] {text}: {}", python_repr(path));
        }
    }
    message.to_string()
}

struct Walk<'a> {
    search: &'a Search,
    tree: &'a Tree<'a>,
    npath: &'a str,
    lstats: &'a HashMap<String, StatInfo>,
    contents: Option<&'a HashMap<String, Content>>,
}

impl Walk<'_> {
    /// One step of `os.walk(topdown=True)`: this directory's files, then its
    /// directories, counted, matched, then entered (with `recurse`).
    fn dir(&self, rel: &str, found: &mut Found) -> Result<(), Stop> {
        let s = self.search;
        let children = self.tree.children.get(rel).cloned().unwrap_or_default();
        let (dirs, files): (Vec<&StatInfo>, Vec<&StatInfo>) = children
            .into_iter()
            .partition(|e| e.kind == FileKind::Directory);
        found.examined += (dirs.len() + files.len()) as u64;
        let mut enter = true;
        let mut limit_hit = false;
        for entry in files.iter().chain(dirs.iter()) {
            let entry_rel = self.tree.rel(entry);
            let fsname = normpath(&format!("{}/{}", self.npath, entry_rel));
            if let Some(depth) = s.depth {
                let wpath = format!("{}/", self.npath.trim_end_matches('/'));
                let d = fsname.matches('/').count() as i64 - wpath.matches('/').count() as i64 + 1;
                if d > depth as i64 {
                    enter = false;
                    continue;
                }
            }
            let name = entry_rel.rsplit('/').next().unwrap_or(entry_rel);
            if name.starts_with('.') && !s.hidden {
                continue;
            }
            let st = self.lstats.get(&entry.path).unwrap_or(entry);
            if let Some(record) = self.matches(st, entry, name, &fsname, found)? {
                found.files.push(record);
            }
            if s.limit == Some(found.files.len() as i64) {
                limit_hit = true;
                break;
            }
        }
        if limit_hit {
            return Err(Stop::Limit);
        }
        if !s.recurse || !enter {
            return Ok(());
        }
        for d in dirs {
            self.dir(self.tree.rel(d), found)?;
        }
        Ok(())
    }

    /// The entry's record when it passes the filters of `file_type`.
    fn matches(
        &self,
        st: &StatInfo,
        listed: &StatInfo,
        name: &str,
        fsname: &str,
        found: &mut Found,
    ) -> Result<Option<Value>, Stop> {
        let s = self.search;
        let common = || {
            s.names.matches(name)
                && age_matches(s.now, stamp(st, s.stamp), s.age)
                && mode_matches(st.mode, s.mode, s.exact_mode)
        };
        let kind = st.kind;
        let keep = match s.file_type {
            FileType::Any => common() && (kind != FileKind::File || size_matches(st.size, s.size)),
            FileType::Directory => kind == FileKind::Directory && common(),
            FileType::Link => kind == FileKind::Symlink && common(),
            FileType::File => {
                kind == FileKind::File
                    && common()
                    && size_matches(st.size, s.size)
                    && self.content_matches(fsname, found)?
            }
        };
        if !keep {
            return Ok(None);
        }
        let mut record = Map::new();
        record.insert("path".into(), json!(fsname));
        statinfo(st, &mut record);
        if s.checksum
            && kind == FileKind::File
            && matches!(s.file_type, FileType::Any | FileType::File)
            && let Some(sum) = &listed.checksum
        {
            record.insert("checksum".into(), json!(super::fetch_local::hex(sum)));
        }
        Ok(Some(Value::Object(record)))
    }

    fn content_matches(&self, fsname: &str, found: &mut Found) -> Result<bool, Stop> {
        let Some(regex) = &self.search.contains else {
            return Ok(true);
        };
        let Some(contents) = self.contents else {
            found.needed.push((fsname.to_string(), 0));
            return Ok(true);
        };
        match contents.get(fsname) {
            Some(Content::Text(text)) => Ok(if self.search.whole_file {
                regex.is_match(text).unwrap_or(false)
            } else {
                text.split_inclusive('\n')
                    .any(|line| regex.is_match(line).unwrap_or(false))
            }),
            Some(Content::Undecodable(why)) => Err(Stop::Undecodable(why.clone())),
            Some(Content::Unreadable) | None => Ok(false),
        }
    }
}

fn stamp(st: &StatInfo, stamp: Stamp) -> f64 {
    let (secs, nsec) = match stamp {
        Stamp::Atime => (st.atime, st.atime_nsec),
        Stamp::Ctime => (st.ctime, st.ctime_nsec),
        Stamp::Mtime => (st.mtime, st.mtime_nsec),
    };
    StatInfo::float_seconds(secs, nsec)
}

/// Ansible's `statinfo()`: the per-file fields of find's results, in its order.
fn statinfo(st: &StatInfo, out: &mut Map<String, Value>) {
    const S_IFCHR: u32 = 0o020000;
    const S_IFBLK: u32 = 0o060000;
    const S_IFIFO: u32 = 0o010000;
    const S_IFSOCK: u32 = 0o140000;
    let mode = st.mode;
    // A name the target does not know comes as the number; Python gives "".
    let name = |name: &str, id: u32| {
        if name == id.to_string() {
            String::new()
        } else {
            name.to_string()
        }
    };
    let float = StatInfo::float_seconds;
    out.insert("mode".into(), json!(format!("{:04o}", mode & 0o7777)));
    out.insert("isdir".into(), json!(st.kind == FileKind::Directory));
    out.insert("ischr".into(), json!(st.file_type == S_IFCHR));
    out.insert("isblk".into(), json!(st.file_type == S_IFBLK));
    out.insert("isreg".into(), json!(st.kind == FileKind::File));
    out.insert("isfifo".into(), json!(st.file_type == S_IFIFO));
    out.insert("islnk".into(), json!(st.kind == FileKind::Symlink));
    out.insert("issock".into(), json!(st.file_type == S_IFSOCK));
    out.insert("uid".into(), json!(st.uid));
    out.insert("gid".into(), json!(st.gid));
    out.insert("size".into(), json!(st.size));
    out.insert("inode".into(), json!(st.inode));
    out.insert("dev".into(), json!(st.dev));
    out.insert("nlink".into(), json!(st.nlink));
    out.insert("atime".into(), json!(float(st.atime, st.atime_nsec)));
    out.insert("mtime".into(), json!(float(st.mtime, st.mtime_nsec)));
    out.insert("ctime".into(), json!(float(st.ctime, st.ctime_nsec)));
    out.insert("gr_name".into(), json!(name(&st.group, st.gid)));
    out.insert("pw_name".into(), json!(name(&st.owner, st.uid)));
    for (key, bit) in [
        ("wusr", 0o200),
        ("rusr", 0o400),
        ("xusr", 0o100),
        ("wgrp", 0o020),
        ("rgrp", 0o040),
        ("xgrp", 0o010),
        ("woth", 0o002),
        ("roth", 0o004),
        ("xoth", 0o001),
        ("isuid", 0o4000),
        ("isgid", 0o2000),
    ] {
        out.insert(key.into(), json!(mode & bit != 0));
    }
    out.insert("blocks".into(), json!(st.blocks));
    out.insert("disk_usage_bytes".into(), json!(st.blocks * 512));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(v: Value) -> Result<Plan, String> {
        crate::modules::try_plan(&Find, v, &PlanContext::new(Path::new("/")))
    }

    fn first_op(v: Value) -> Op {
        match plan(v).unwrap() {
            Plan::Step(op, _) => op,
            other => panic!("expected a step, got {other:?}"),
        }
    }

    fn entry(path: &str, kind: FileKind, size: u64) -> StatInfo {
        StatInfo {
            path: path.into(),
            exists: true,
            kind,
            size,
            mode: 0o644,
            ..StatInfo::default()
        }
    }

    fn run(v: Value, root: &str, entries: Vec<StatInfo>) -> TaskOutcome {
        let Plan::Step(_, next) = plan(v).unwrap() else {
            panic!("expected a step")
        };
        let dir = entry(root, FileKind::Directory, 4096);
        let reply = OpResult::Batch(vec![
            OpResult::Tree(TreeListing {
                root: dir.clone(),
                entries,
                skipped: vec![],
            }),
            OpResult::Stat(dir),
        ]);
        match next.resume(reply).unwrap() {
            Plan::Done(out) => out,
            other => panic!("expected an outcome, got {other:?}"),
        }
    }

    #[test]
    fn lists_each_path_as_deep_as_the_walk_counts() {
        let list = |max_depth, follow, checksum| {
            Op::Batch(vec![
                Op::ListTree {
                    path: "/d".into(),
                    max_depth,
                    follow,
                    checksum,
                },
                Op::Stat {
                    path: "/d".into(),
                    checksum: None,
                    follow: true,
                },
            ])
        };
        assert_eq!(first_op(json!({"paths": "/d"})), list(Some(1), false, None));
        assert_eq!(
            first_op(json!({"paths": "/d", "recurse": true, "depth": 2})),
            list(Some(3), false, None)
        );
        assert_eq!(
            first_op(json!({"path": "/d", "recurse": true, "follow": true, "get_checksum": true})),
            list(None, true, Some(Digest::Sha1))
        );
    }

    #[test]
    fn bad_arguments_fail_as_the_module_does() {
        let failed = |v: Value| match plan(v).unwrap() {
            Plan::Done(out) => (out.msg.unwrap(), Value::Object(out.data)),
            other => panic!("expected a failure, got {other:?}"),
        };
        assert_eq!(
            failed(json!({"paths": "/d", "age": "3x"})),
            ("failed to process age".into(), json!({"age": "3x"}))
        );
        assert_eq!(
            failed(json!({"paths": "/d", "size": "1q"})),
            ("failed to process size".into(), json!({"size": "1q"}))
        );
        assert_eq!(
            failed(json!({"paths": "/d", "limit": 0})).0,
            "limit cannot be 0 (use None for unlimited)"
        );
        assert_eq!(
            failed(json!({"paths": "/d", "mode": 420})).0,
            "argument 'mode' is not a string and conversion is not allowed, value is of type int"
        );
        assert_eq!(
            plan(json!({"patterns": "*"})).unwrap_err(),
            "missing required arguments: paths"
        );
    }

    #[test]
    fn the_walk_matches_counts_and_skips_hidden_names() {
        let entries = vec![
            entry("/d/.h", FileKind::File, 1),
            entry("/d/a.log", FileKind::File, 10),
            entry("/d/sub", FileKind::Directory, 4096),
            entry("/d/sub/b.log", FileKind::File, 2000),
        ];
        let out = run(
            json!({"paths": "/d", "recurse": true, "patterns": "*.log", "size": "1k"}),
            "/d",
            entries,
        );
        assert_eq!(out.data["matched"], json!(1));
        assert_eq!(out.data["examined"], json!(4));
        assert_eq!(out.data["files"][0]["path"], json!("/d/sub/b.log"));
        assert_eq!(out.data["files"][0]["mode"], json!("0644"));
        assert_eq!(out.msg.as_deref(), Some("All paths examined"));
    }
}
