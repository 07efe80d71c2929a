//! `lookup()`/`query()`/`q()`: Ansible's lookup plugins that read the controller (files,
//! environment, commands). Relative paths resolve against the current role (`role_path`)
//! and then the playbook's directory (the `playbook_dir` variable, else the Templar's base
//! directory, else the working directory).

use std::path::{Path, PathBuf};

use minijinja::value::{Kwargs, Rest, Value as MjValue, ValueKind, from_args};
use minijinja::{Environment, Error as MjError, ErrorKind, State};

/// The hosts an Ansible host pattern selects, for `inventory_hostnames`.
pub type HostSelector = std::sync::Arc<dyn Fn(&str) -> Result<Vec<String>, String> + Send + Sync>;

/// What lookups reach beyond the template's variables.
#[derive(Clone)]
struct Reach {
    base: Option<PathBuf>,
    hosts: Option<HostSelector>,
    /// Where the run's Python lookups are.
    plugins: Option<std::sync::Arc<crate::plugins::Catalog>>,
}

/// The lookups turbo-play has.
pub const NAMES: &[&str] = &[
    "file",
    "unvault",
    "env",
    "template",
    "fileglob",
    "first_found",
    "pipe",
    "lines",
    "items",
    "list",
    "sequence",
    "dict",
    "vars",
    "varnames",
    "inventory_hostnames",
    "random_choice",
    "ini",
    "csvfile",
    "password",
    "config",
    "nested",
    "cartesian",
    "together",
    "subelements",
    "indexed_items",
];

pub fn register(
    env: &mut Environment<'static>,
    base_dir: Option<PathBuf>,
    hosts: Option<HostSelector>,
    plugins: Option<std::sync::Arc<crate::plugins::Catalog>>,
) {
    let reach = Reach {
        base: base_dir,
        hosts,
        plugins,
    };
    for (alias, always_list) in [("lookup", false), ("query", true), ("q", true)] {
        let reach = reach.clone();
        env.add_function(
            alias,
            move |state: &State, name: String, args: Rest<MjValue>| {
                run(state, &name, &args, &reach, always_list)
            },
        );
    }
}

/// The lookups that read nothing but their terms, for the fuzz targets: the others run
/// commands, read files and the environment, or write password files.
#[cfg(feature = "fuzzing")]
const PURE: &[&str] = &[
    "items",
    "list",
    "sequence",
    "dict",
    "nested",
    "cartesian",
    "together",
    "subelements",
    "indexed_items",
];

/// `lookup()`/`query()`/`q()` limited to [`PURE`].
#[cfg(feature = "fuzzing")]
pub fn register_pure(env: &mut Environment<'static>) {
    let reach = Reach {
        base: None,
        hosts: None,
        plugins: None,
    };
    for (alias, always_list) in [("lookup", false), ("query", true), ("q", true)] {
        let reach = reach.clone();
        env.add_function(
            alias,
            move |state: &State, name: String, args: Rest<MjValue>| {
                if !PURE.contains(&name.as_str()) {
                    return Err(error(format!("lookup {name} is off while fuzzing")));
                }
                run(state, &name, &args, &reach, always_list)
            },
        );
    }
}

fn error(message: impl Into<String>) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message.into())
}

fn run(
    state: &State,
    name: &str,
    args: &[MjValue],
    reach: &Reach,
    always_list: bool,
) -> Result<MjValue, MjError> {
    let base = reach.base.as_deref();
    let (terms, kwargs) = from_args::<(&[MjValue], Kwargs)>(args)?;
    let wantlist = always_list || kwargs.get::<Option<bool>>("wantlist")?.unwrap_or(false);
    let errors: String = kwargs
        .get::<Option<String>>("errors")?
        .unwrap_or_else(|| "strict".into());
    let playbook_dir = state
        .lookup("playbook_dir")
        .and_then(|v| v.as_str().map(PathBuf::from))
        .or_else(|| base.map(Path::to_path_buf))
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    // The task's `ansible_search_path` when the executor gave one (role, the task's
    // own file's directory, playbook), else the role's directory; the playbook's last.
    let mut dirs: Vec<PathBuf> = match state.lookup("ansible_search_path") {
        Some(listed) if listed.kind() == ValueKind::Seq => listed
            .try_iter()
            .into_iter()
            .flatten()
            .filter_map(|d| d.as_str().map(PathBuf::from))
            .collect(),
        _ => state
            .lookup("role_path")
            .and_then(|v| v.as_str().map(PathBuf::from))
            .into_iter()
            .collect(),
    };
    dirs.retain(|d| *d != playbook_dir);
    dirs.push(playbook_dir);
    let base = SearchPath { dirs };
    let python = python_lookup(reach, name);
    // `ansible.builtin.file` is `file`.
    let name = name.strip_prefix("ansible.builtin.").unwrap_or(name);
    let results = match name {
        _ if python.is_some() => {
            let file = python.as_ref().expect("matched");
            let catalog = reach
                .plugins
                .as_deref()
                .expect("a found plugin has a catalog");
            let rest: Vec<(String, MjValue)> = kwargs
                .args()
                .filter(|k| !matches!(*k, "wantlist" | "errors"))
                .filter_map(|k| Some((k.to_string(), kwargs.get::<MjValue>(k).ok()?)))
                .collect();
            // A `with_<name>` loop hands the plugin its list of terms itself.
            let as_with = state
                .lookup("__tp_lookup_with")
                .is_some_and(|v| v.is_true());
            let spread: Vec<MjValue>;
            let terms = match terms {
                [list] if as_with && list.kind() == ValueKind::Seq => {
                    spread = list.try_iter()?.collect();
                    spread.as_slice()
                }
                _ => terms,
            };
            let terms = super::python_plugins::embedded_templates(state, terms)?;
            match super::python_plugins::lookup(
                state,
                file,
                &terms,
                rest,
                catalog,
                Some(base.playbook_dir().to_path_buf()),
            ) {
                Ok(Some(results)) => Ok(results),
                // It declined an undefined term: the result is that undefined value.
                Ok(None) => return Ok(MjValue::UNDEFINED),
                Err(e) => Err(e),
            }
        }
        "file" => file(terms, &kwargs, &base),
        "unvault" => unvault(terms, &base),
        "env" => env(terms, &kwargs),
        "template" => template(state, terms, &kwargs, &base),
        "fileglob" => fileglob(terms, &base),
        "first_found" => {
            // A `with_first_found` loop searches the subdirectory its task's action implies.
            let subdir = state
                .lookup("__tp_lookup_subdir")
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "files".into());
            first_found(terms, &kwargs, &base, &subdir)
        }
        "pipe" => pipe(terms, &base),
        "lines" => lines(terms, &base),
        "inventory_hostnames" => inventory_hostnames(terms, reach.hosts.as_ref()),
        "varnames" => varnames(state, terms),
        "items" | "list" => Ok(flatten_terms(terms, name == "items")),
        "sequence" => sequence(terms, &kwargs),
        "dict" => dict(terms),
        "vars" => vars(state, terms, &kwargs),
        "random_choice" => Ok(random_choice(terms)),
        "ini" => super::ini_lookup::ini(&term_texts(terms), &kwargs, &|name| {
            find(&base, "files", name).filter(|p| p.is_file())
        }),
        "config" => super::config_lookup::config(state, terms, &kwargs, base.playbook_dir()),
        "password" => {
            super::password_lookup::password(&term_texts(terms), &kwargs, base.playbook_dir())
        }
        "csvfile" => super::csvfile_lookup::csvfile(&term_texts(terms), &kwargs, &|name| {
            find(&base, "files", name).filter(|p| p.is_file())
        }),
        other if super::Combinator::from_lookup(other).is_some() => {
            let combinator = super::Combinator::from_lookup(other).expect("matched");
            let terms = serde_json::to_value(terms).map_err(|e| error(e.to_string()))?;
            combinator
                .items(terms)
                .map(|items| items.into_iter().map(MjValue::from_serialize).collect())
                .map_err(error)
        }
        other => Err(error(format!("The lookup plugin '{other}' was not found."))),
    };
    let results = match results {
        Ok(r) => r,
        Err(_) if errors == "ignore" || errors == "warn" => {
            return Ok(if wantlist {
                MjValue::from(Vec::<MjValue>::new())
            } else {
                MjValue::from(())
            });
        }
        Err(e) => return Err(e),
    };
    kwargs.assert_all_used()?;
    // Ansible gives the results as they are with `wantlist`, and none as an empty list.
    if wantlist || results.is_empty() {
        return Ok(MjValue::from(results));
    }
    // Ansible joins string results with commas; other results come back as they are.
    if results.iter().all(|v| v.kind() == ValueKind::String) {
        let joined: Vec<&str> = results.iter().filter_map(|v| v.as_str()).collect();
        return Ok(MjValue::from(joined.join(",")));
    }
    Ok(match results.len() {
        1 => results.into_iter().next().unwrap_or_default(),
        _ => MjValue::from(results),
    })
}

/// The Python lookup `name` names, if any: one in the playbook's, a role's or a configured
/// directory (taking the place of turbo-play's own, as it comes first in Ansible's search
/// order), a collection's, or ansible-core's own for a name turbo-play does not have.
fn python_lookup(reach: &Reach, name: &str) -> Option<crate::plugins::PluginFile> {
    let catalog = reach.plugins.as_deref()?;
    if let Some(found) = catalog.find(crate::plugins::Kind::Lookup, name, &[]) {
        return Some(found);
    }
    let short = name
        .strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."))
        .unwrap_or(name);
    if NAMES.contains(&short) || !crate::plugins::catalog::is_identifier(short) {
        return None;
    }
    let dir = crate::plugins::python::controller()?.ansible_dir.as_ref()?;
    let path = dir.join("plugins/lookup").join(format!("{short}.py"));
    path.is_file().then(|| crate::plugins::PluginFile {
        name: short.to_string(),
        path,
        import_name: format!("ansible.plugins.lookup.{short}"),
        collection: None,
    })
}

/// Python's name for a value's type, as Ansible's messages show it.
fn python_type(value: &MjValue) -> &'static str {
    super::filters::mj_type_name(value)
}

fn term_texts(terms: &[MjValue]) -> Vec<String> {
    flatten_terms(terms, true)
        .iter()
        .map(|t| t.as_str().map_or_else(|| t.to_string(), str::to_string))
        .collect()
}

/// Lookup terms given as lists count as their items.
fn flatten_terms(terms: &[MjValue], flatten: bool) -> Vec<MjValue> {
    let mut out = Vec::new();
    for term in terms {
        if flatten && term.kind() == ValueKind::Seq {
            out.extend(term.try_iter().into_iter().flatten());
        } else {
            out.push(term.clone());
        }
    }
    out
}

/// Where relative names are looked for: the role's directory (when in a role), then the
/// playbook's.
struct SearchPath {
    dirs: Vec<PathBuf>,
}

impl SearchPath {
    /// The playbook's directory: where commands run and `paths:` are relative to.
    fn playbook_dir(&self) -> &Path {
        self.dirs.last().map_or(Path::new("."), PathBuf::as_path)
    }

    /// `<dir>/<subdir>/<name>`, then `<dir>/<name>`, for each directory in order.
    fn candidates(&self, subdir: &str, name: &str) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .flat_map(|d| [d.join(subdir).join(name), d.join(name)])
            .collect()
    }
}

/// Ansible's search path for a relative name.
fn find(base: &SearchPath, subdir: &str, name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    if path.is_absolute() {
        return path.exists().then(|| path.to_path_buf());
    }
    base.candidates(subdir, name)
        .into_iter()
        .find(|p| p.exists())
}

fn file(terms: &[MjValue], kwargs: &Kwargs, base: &SearchPath) -> Result<Vec<MjValue>, MjError> {
    let rstrip = kwargs.get::<Option<bool>>("rstrip")?.unwrap_or(true);
    let lstrip = kwargs.get::<Option<bool>>("lstrip")?.unwrap_or(false);
    term_texts(terms)
        .iter()
        .map(|term| {
            let path = find(base, "files", term)
                .filter(|p| p.is_file())
                .ok_or_else(|| error(format!("could not locate file in lookup: {term}")))?;
            let text = read_text(&path)?;
            let text = if rstrip { text.trim_end() } else { &text };
            let text = if lstrip { text.trim_start() } else { text };
            Ok(MjValue::from(text))
        })
        .collect()
}

/// A file's text as Ansible's loader gives it to lookups: decrypted when vault-encrypted.
fn read_text(path: &Path) -> Result<String, MjError> {
    let bytes = crate::vault::read_file(path).map_err(|e| match e {
        crate::vault::ReadError::Vault(vault) => error(vault.describe(&path.display().to_string())),
        io => error(format!("could not read {}: {io}", path.display())),
    })?;
    String::from_utf8(bytes).map_err(|_| error(format!("{} is not UTF-8 text", path.display())))
}

/// `unvault`: the file lookup's search, the contents decrypted and never stripped.
fn unvault(terms: &[MjValue], base: &SearchPath) -> Result<Vec<MjValue>, MjError> {
    term_texts(terms)
        .iter()
        .map(|term| {
            let path = find(base, "files", term)
                .filter(|p| p.is_file())
                .ok_or_else(|| error(format!("Unable to find file matching \"{term}\" ")))?;
            Ok(MjValue::from(read_text(&path)?))
        })
        .collect()
}

/// `lookup('env', NAME..., default='')`: an unset variable is the default; `undef()`
/// there (no hint of its own) says which variable was not set.
fn env(terms: &[MjValue], kwargs: &Kwargs) -> Result<Vec<MjValue>, MjError> {
    use super::hinted_undefined;
    // An undefined default (a variable that is not set) is kept: the lookup's value is
    // then undefined, and the expression says which variable.
    let default: Option<MjValue> = if kwargs.has("default") {
        Some(kwargs.get::<MjValue>("default")?)
    } else {
        None
    };
    Ok(term_texts(terms)
        .iter()
        .map(|term| {
            let name = term.split_whitespace().next().unwrap_or_default();
            let value = match std::env::var(name) {
                Ok(v) => MjValue::from(v),
                Err(_) => default.clone().unwrap_or_else(|| MjValue::from("")),
            };
            if hinted_undefined::hint(&value).as_deref() == Some(hinted_undefined::NO_HINT) {
                return hinted_undefined::hinted(&format!(
                    "The environment variable '{name}' is not set."
                ));
            }
            if let Some(text) = value.as_str() {
                super::protomatter::remember_origin(
                    text,
                    format!("<environment variable '{name}'>"),
                );
            }
            value
        })
        .collect())
}

fn template(
    state: &State,
    terms: &[MjValue],
    kwargs: &Kwargs,
    base: &SearchPath,
) -> Result<Vec<MjValue>, MjError> {
    let extra: Option<MjValue> = kwargs.get("template_vars")?;
    let _: Option<bool> = kwargs.get("convert_data")?;
    let mut options = super::TextOptions {
        trim_blocks: kwargs.get::<Option<bool>>("trim_blocks")?.unwrap_or(true),
        ..super::TextOptions::default()
    };
    for name in [
        "variable_start_string",
        "variable_end_string",
        "comment_start_string",
        "comment_end_string",
    ] {
        if let Some(value) = kwargs.get::<Option<String>>(name)?
            && let Some(slot) = options.delimiters.slot(name)
        {
            *slot = value;
        }
    }
    let mut context: Vec<(String, MjValue)> = state
        .known_variables()
        .into_iter()
        .filter_map(|name| state.lookup(&name).map(|v| (name.to_string(), v)))
        .collect();
    if let Some(extra) = extra.filter(|e| e.kind() == ValueKind::Map) {
        for key in extra.try_iter()? {
            let value = extra.get_item(&key)?;
            context.push((key.to_string(), value));
        }
    }
    // What the template module adds that a template lookup sees too, below the variables.
    if !context.iter().any(|(name, _)| name == "ansible_managed") {
        context.insert(
            0,
            ("ansible_managed".into(), MjValue::from("Ansible managed")),
        );
    }
    let context = MjValue::from_iter(context);
    term_texts(terms)
        .iter()
        .map(|term| {
            let path = find(base, "templates", term)
                .filter(|p| p.is_file())
                .ok_or_else(|| {
                    error(format!(
                        "the template file {term} could not be found for the lookup"
                    ))
                })?;
            let source = read_text(&path)?;
            // Its includes are looked for beside it, then where the lookup looks, as
            // Ansible's template lookup does.
            let mut options = options.clone();
            options.search_path = path.parent().map(Path::to_path_buf).into_iter().collect();
            options.search_path.extend(
                base.dirs
                    .iter()
                    .flat_map(|d| [d.join("templates"), d.clone()]),
            );
            let custom = options.delimiters != super::Delimiters::default();
            let source = if !custom && super::chain::may_need_rewrite(&source) {
                super::chain::rewrite_template(&source)
            } else {
                source
            };
            let rendered = if options.is_plain_for(&source) {
                state.env().render_str(&source, &context)?
            } else {
                options
                    .environment(state.env())
                    .map_err(error)?
                    .render_str(&source, &context)?
            };
            // A template that renders nothing is None, as in Ansible 2.21.
            if rendered.is_empty() {
                return Ok(MjValue::from(()));
            }
            Ok(MjValue::from(super::preserve_trailing_newlines(
                &source, rendered,
            )))
        })
        .collect()
}

/// Files (not directories) matching each pattern; wildcards in the last component only,
/// as Ansible's fileglob.
fn fileglob(terms: &[MjValue], base: &SearchPath) -> Result<Vec<MjValue>, MjError> {
    let mut out = Vec::new();
    for term in term_texts(terms) {
        let (dir, pattern) = match term.rfind('/') {
            Some(i) => (&term[..i.max(1)], &term[i + 1..]),
            None => ("", term.as_str()),
        };
        let dirs: Vec<PathBuf> = if Path::new(dir).is_absolute() {
            vec![PathBuf::from(dir)]
        } else if dir.is_empty() {
            // A bare pattern tries every search directory (each one's `files/` first)
            // until one has a match, as Ansible's fileglob does.
            base.candidates("files", dir)
        } else {
            // A pattern with a directory globs in the first search directory that has it.
            base.candidates("files", dir)
                .into_iter()
                .find(|d| d.is_dir())
                .into_iter()
                .collect()
        };
        for found_dir in dirs.iter().filter(|d| d.is_dir()) {
            let matches = glob_in(found_dir, pattern)?;
            if !matches.is_empty() {
                out.extend(matches.into_iter().map(MjValue::from));
                break;
            }
        }
    }
    Ok(out)
}

/// The regular files in `dir` whose names match `pattern`, sorted.
fn glob_in(dir: &Path, pattern: &str) -> Result<Vec<String>, MjError> {
    let mut matches: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| error(format!("fileglob: {}: {e}", dir.display())))?
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| crate::fnmatch::glob_component(pattern, name))
        .map(|name| dir.join(name).display().to_string())
        .collect();
    matches.sort();
    Ok(matches)
}

/// `first_found`: terms are names or `{files: [...], paths: [...], skip: bool}`.
fn first_found(
    terms: &[MjValue],
    kwargs: &Kwargs,
    base: &SearchPath,
    subdir: &str,
) -> Result<Vec<MjValue>, MjError> {
    let mut files: Vec<String> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    // `skip` is a `type: boolean` option, which Ansible's config reads leniently.
    let lenient = |v: &MjValue| super::to_json(v).is_ok_and(|j| crate::booleans::lenient(&j));
    let mut skip = kwargs
        .get::<Option<MjValue>>("skip")?
        .is_some_and(|v| lenient(&v));
    let split = |v: &MjValue| -> Vec<String> {
        let items: Vec<MjValue> = if v.kind() == ValueKind::Seq {
            v.try_iter().into_iter().flatten().collect()
        } else {
            vec![v.clone()]
        };
        // Ansible splits names on , ; and : as well.
        items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .flat_map(|s| {
                s.split([',', ';'])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    if let Some(f) = kwargs.get::<Option<MjValue>>("files")? {
        files.extend(split(&f));
    }
    if let Some(p) = kwargs.get::<Option<MjValue>>("paths")? {
        paths.extend(split(&p));
    }
    for term in flatten_terms(terms, true) {
        if term.kind() == ValueKind::Map {
            if let Ok(f) = term.get_attr("files")
                && !f.is_undefined()
            {
                files.extend(split(&f));
            }
            if let Ok(p) = term.get_attr("paths")
                && !p.is_undefined()
            {
                paths.extend(split(&p));
            }
            if let Ok(s) = term.get_attr("skip") {
                skip |= lenient(&s);
            }
        } else if let Some(s) = term.as_str() {
            files.push(s.to_string());
        } else {
            // Ansible's words, its stray parenthesis included.
            return Err(error(format!(
                "The lookup plugin 'first_found' failed: Invalid term supplied. A string, dict or list is required, not '{}').",
                python_type(&term)
            )));
        }
    }
    // As Ansible: every path joined with every name (path by path), each then looked
    // for along the search path like a name of its own.
    let searched: Vec<String> = if paths.is_empty() {
        files
    } else {
        paths
            .iter()
            .flat_map(|dir| dir.split(':').filter(|d| !d.is_empty()))
            .flat_map(|dir| {
                files
                    .iter()
                    .map(move |name| Path::new(dir).join(name).display().to_string())
            })
            .collect()
    };
    for name in &searched {
        if let Some(found) = find(base, subdir, name) {
            return Ok(vec![MjValue::from(found.display().to_string())]);
        }
    }
    if skip {
        return Ok(Vec::new());
    }
    Err(error(
        "No file was found when using first_found. Use errors='ignore' to allow this task \
         to be skipped if no files are found",
    ))
}

/// `varnames`: the names of the variables each pattern (Python `re.search`) finds, sorted.
fn varnames(state: &State, terms: &[MjValue]) -> Result<Vec<MjValue>, MjError> {
    let globals: std::collections::HashSet<String> = state
        .env()
        .globals()
        .map(|(name, _)| name.to_string())
        .collect();
    let mut names: Vec<String> = state
        .known_variables()
        .into_iter()
        .map(|n| n.into_owned())
        .filter(|n| !globals.contains(n) && !n.starts_with("__tp_"))
        .collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for term in flatten_terms(terms, true) {
        let Some(term) = term.as_str() else {
            return Err(error(format!(
                "Invalid setting identifier, \"{}\" is not a string, it is a <class '{}'>",
                super::filters::python_str(&term),
                python_type(&term)
            )));
        };
        let pattern =
            super::pyregex::PyRegex::new(term, super::pyregex::Anchor::Search, false, false)
                .map_err(|e| {
                    error(format!(
                        "Unable to use \"{term}\" as a search parameter: {e}"
                    ))
                })?;
        for name in &names {
            if pattern.is_match(name).map_err(|e| error(e.to_string()))? {
                out.push(MjValue::from(name.clone()));
            }
        }
    }
    Ok(out)
}

/// `lines`: each command's output, one result per line.
fn lines(terms: &[MjValue], base: &SearchPath) -> Result<Vec<MjValue>, MjError> {
    let mut out = Vec::new();
    for text in pipe(terms, base)? {
        let text = text.as_str().unwrap_or_default().to_string();
        out.extend(text.lines().map(|line| MjValue::from(line.to_string())));
    }
    Ok(out)
}

/// `inventory_hostnames`: the hosts the patterns select together (`['web', '!w1']` is
/// one pattern, as Ansible evaluates them); a pattern Ansible cannot evaluate gives none.
fn inventory_hostnames(
    terms: &[MjValue],
    hosts: Option<&HostSelector>,
) -> Result<Vec<MjValue>, MjError> {
    let Some(select) = hosts else {
        return Err(error(
            "lookup plugin 'inventory_hostnames' needs the run's inventory",
        ));
    };
    let pattern = term_texts(terms).join(",");
    let found = select(&pattern).unwrap_or_default();
    Ok(found.into_iter().map(MjValue::from).collect())
}

fn pipe(terms: &[MjValue], base: &SearchPath) -> Result<Vec<MjValue>, MjError> {
    term_texts(terms)
        .iter()
        .map(|cmd| {
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(cmd)
                .current_dir(if base.playbook_dir().is_dir() {
                    base.playbook_dir()
                } else {
                    Path::new(".")
                })
                .stderr(std::process::Stdio::inherit())
                .output()
                .map_err(|e| error(format!("lookup_plugin.pipe({cmd}): {e}")))?;
            if !out.status.success() {
                return Err(error(format!(
                    "lookup_plugin.pipe({cmd}) returned {}",
                    out.status.code().unwrap_or(-1)
                )));
            }
            Ok(MjValue::from(
                String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
            ))
        })
        .collect()
}

/// `sequence`: each term's form, over the options given as keywords
/// (`query('sequence', start=10, count=5)`); no term at all is the keywords alone.
fn sequence(terms: &[MjValue], kwargs: &Kwargs) -> Result<Vec<MjValue>, MjError> {
    let mut given = Vec::new();
    for key in ["start", "end", "count", "stride", "format"] {
        if let Some(value) = kwargs.get::<Option<MjValue>>(key)? {
            given.push(format!("{key}={value}"));
        }
    }
    let mut texts = term_texts(terms);
    if texts.is_empty() && !given.is_empty() {
        texts.push(String::new());
    }
    let mut out = Vec::new();
    for term in texts {
        let term = if given.is_empty() {
            term
        } else {
            format!("{} {term}", given.join(" ")).trim().to_string()
        };
        let items = super::sequence::sequence_items(&term).map_err(error)?;
        out.extend(items.into_iter().map(MjValue::from));
    }
    Ok(out)
}

/// `dict`: each term must be a mapping; a list is no list of mappings here, as in Ansible.
fn dict(terms: &[MjValue]) -> Result<Vec<MjValue>, MjError> {
    let mut out = Vec::new();
    for term in terms {
        if term.kind() != ValueKind::Map {
            return Err(error(format!(
                "the 'dict' lookup plugin expects a dictionary, got '{}' of type <class '{}'>)",
                super::filters::python_str(term),
                python_type(term)
            )));
        }
        for key in term.try_iter()? {
            let value = term.get_item(&key)?;
            out.push(MjValue::from_iter([
                ("key".to_string(), key),
                ("value".to_string(), value),
            ]));
        }
    }
    Ok(out)
}

/// `vars`: variables by (templated) name, or `default=` when one is missing.
fn vars(state: &State, terms: &[MjValue], kwargs: &Kwargs) -> Result<Vec<MjValue>, MjError> {
    let default: Option<MjValue> = kwargs.get("default")?;
    flatten_terms(terms, true)
        .iter()
        .map(|term| {
            let Some(name) = term.as_str() else {
                return Err(error(format!(
                    "Variable name must be 'str' not '{}'.",
                    python_type(term)
                )));
            };
            match state.lookup(name).filter(|v| !v.is_undefined()) {
                Some(v) => Ok(v),
                None => default.clone().ok_or_else(|| {
                    MjError::new(
                        ErrorKind::UndefinedError,
                        format!("No variable named '{name}' was found."),
                    )
                }),
            }
        })
        .collect()
}

/// `random_choice`: one of the terms, or none when there are none.
fn random_choice(terms: &[MjValue]) -> Vec<MjValue> {
    let terms = flatten_terms(terms, true);
    if terms.is_empty() {
        return terms;
    }
    let mut rng = super::prng::Prng::new(None);
    let pick = rng.below(terms.len() as u64) as usize;
    vec![terms[pick].clone()]
}
