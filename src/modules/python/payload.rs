//! A module's payload, as AnsiballZ packs it: the module under the name it is imported by,
//! and every `module_utils` it imports, found from its imports recursively
//! (`ansible.module_utils.*` from ansible-core and `module_utils/` folders beside the
//! playbook and in roles, `ansible_collections.*.plugins.module_utils.*`, relative imports
//! inside a collection), with their packages' `__init__.py`. Built once per module per
//! run; its digest names it in the target's cache.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};

use sha2::{Digest, Sha256};
use turbo_proto::{ModuleStyle, PayloadFile};

use super::finding::{INSTALL_HINT, ModuleSource, installed};

/// A packed module, ready to run.
#[derive(Debug)]
pub struct Payload {
    pub style: ModuleStyle,
    pub files: Vec<PayloadFile>,
    pub sha256: [u8; 32],
}

/// Where imported support code is looked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct UtilsPaths {
    /// `module_utils/` folders (role's, playbook's, configured), searched before
    /// ansible-core's own for `ansible.module_utils.*`.
    pub module_utils: Vec<PathBuf>,
    /// Roots holding `ansible_collections/`.
    pub collection_roots: Vec<PathBuf>,
}

/// The payload of `source`, built on first use in the run.
pub fn payload(
    source: &ModuleSource,
    paths: &UtilsPaths,
    module_name: &str,
) -> Result<Arc<Payload>, String> {
    type Key = (PathBuf, String, UtilsPaths);
    static BUILT: LazyLock<Mutex<HashMap<Key, Arc<Payload>>>> = LazyLock::new(Default::default);
    let key = (source.path.clone(), source.fqn.clone(), paths.clone());
    if let Some(built) = BUILT.lock().expect("payload cache").get(&key) {
        return Ok(built.clone());
    }
    let built = Arc::new(build(source, paths, module_name)?);
    BUILT
        .lock()
        .expect("payload cache")
        .insert(key, built.clone());
    Ok(built)
}

fn build(source: &ModuleSource, paths: &UtilsPaths, module_name: &str) -> Result<Payload, String> {
    let data = std::fs::read(&source.path)
        .map_err(|e| format!("could not read module {}: {e}", source.path.display()))?;
    let file_name = source
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "module".into());
    let kind = sniff(&data);
    if matches!(kind, Kind::Old | Kind::WantJson) && shebang(&data).is_none() {
        return Err(format!(
            "module ({module_name}) is missing interpreter line"
        ));
    }
    if kind != Kind::NewStyle {
        let python = shebang(&data).is_some_and(|line| line.contains("python"));
        let style = match kind {
            Kind::Binary => ModuleStyle::Binary {
                path: file_name.clone(),
            },
            Kind::WantJson => ModuleStyle::WantJson {
                path: file_name.clone(),
                python,
            },
            _ => ModuleStyle::Old {
                path: file_name.clone(),
                python,
            },
        };
        return Ok(finish(style, BTreeMap::from([(file_name, (data, true))])));
    }

    let mut packer = Packer {
        paths,
        ansible_dir: installed().ansible_dir.clone(),
        files: BTreeMap::new(),
        done: Default::default(),
        pending: Vec::new(),
    };
    let module_parts: Vec<String> = source.fqn.split('.').map(str::to_string).collect();
    packer.add_packages(&module_parts[..module_parts.len() - 1]);
    let rel = format!("{}.py", module_parts.join("/"));
    packer.files.insert(rel, (data.clone(), false));
    packer.done.insert(module_parts.clone());
    let mut queue: Vec<(Vec<String>, bool)> = imports(&data, &module_parts, false);
    // What AnsiballZ always ships: the loader that runs the module, basic, and the
    // legacy serialization profiles.
    for always in [
        "ansible.module_utils._internal._ansiballz._loader",
        "ansible.module_utils.basic",
        "ansible.module_utils._internal._json._profiles._module_legacy_c2m",
        "ansible.module_utils._internal._json._profiles._module_legacy_m2c",
    ] {
        queue.push((always.split('.').map(str::to_string).collect(), false));
    }
    if packer.ansible_dir.is_none() {
        return Err(format!(
            "the module {} needs ansible-core's module_utils, which turbo-play could not find \
             on the controller: {INSTALL_HINT}",
            source.path.display()
        ));
    }
    loop {
        queue.extend(packer.pending.drain(..).map(|package| (package, true)));
        let Some((name, optional)) = queue.pop() else {
            break;
        };
        if !packer.done.insert(name.clone()) {
            continue;
        }
        let Some((found_parts, path, is_package)) = packer.locate(&name) else {
            if optional {
                continue;
            }
            return Err(format!(
                "Could not find imported module support code for {}. Looked for ({})",
                source.fqn,
                name.join(".")
            ));
        };
        // `from x.y import z` with z a name in x.y: x.y may be done already.
        if found_parts != name && !packer.done.insert(found_parts.clone()) {
            continue;
        }
        let text =
            std::fs::read(&path).map_err(|e| format!("could not read {}: {e}", path.display()))?;
        queue.extend(imports(&text, &found_parts, is_package));
        packer.add_packages(&found_parts[..found_parts.len() - 1]);
        let rel = if is_package {
            format!("{}/__init__.py", found_parts.join("/"))
        } else {
            format!("{}.py", found_parts.join("/"))
        };
        packer.files.insert(rel, (text, false));
    }
    Ok(finish(
        ModuleStyle::NewStyle {
            fqn: source.fqn.clone(),
            profile: "legacy".into(),
        },
        packer.files,
    ))
}

fn finish(style: ModuleStyle, files: BTreeMap<String, (Vec<u8>, bool)>) -> Payload {
    let mut digest = Sha256::new();
    // The style is part of what is cached: the same bytes run another way are another
    // payload only in name, which keeps the digest honest about what it describes.
    digest.update(format!("{style:?}\0").as_bytes());
    for (path, (data, executable)) in &files {
        digest.update((path.len() as u64).to_be_bytes());
        digest.update(path.as_bytes());
        digest.update((data.len() as u64).to_be_bytes());
        digest.update(data);
        digest.update([u8::from(*executable)]);
    }
    Payload {
        style,
        sha256: digest.finalize().into(),
        files: files
            .into_iter()
            .map(|(path, (data, executable))| PayloadFile {
                path,
                data,
                executable,
            })
            .collect(),
    }
}

struct Packer<'a> {
    paths: &'a UtilsPaths,
    ansible_dir: Option<PathBuf>,
    /// Relative path → (bytes, executable).
    files: BTreeMap<String, (Vec<u8>, bool)>,
    done: std::collections::HashSet<Vec<String>>,
    /// Packages whose real `__init__.py` is still to be looked for (and its imports).
    pending: Vec<Vec<String>>,
}

/// `ansible` and `ansible.module_utils` reach every directory of that name on the path,
/// as in AnsiballZ, so a payload's packages and another's combine in one interpreter.
const EXTENDING_INIT: &[u8] =
    b"from pkgutil import extend_path\n__path__ = extend_path(__path__, __name__)\n";

impl Packer<'_> {
    /// The `__init__.py` of each package on the way to a module: the real one when there
    /// is one, else empty.
    fn add_packages(&mut self, packages: &[String]) {
        for depth in 1..=packages.len() {
            let parts = &packages[..depth];
            let rel = format!("{}/__init__.py", parts.join("/"));
            if self.files.contains_key(&rel) {
                continue;
            }
            let extending = matches!(parts, [a] if a == "ansible")
                || matches!(parts, [a, b] if a == "ansible" && b == "module_utils");
            if extending {
                self.files.insert(rel, (EXTENDING_INIT.to_vec(), false));
                self.done.insert(parts.to_vec());
            } else {
                self.files.insert(rel, (Vec::new(), false));
                self.pending.push(parts.to_vec());
            }
        }
    }

    /// The file of the module (or package) `name`, or of its parent when the last part
    /// is a name imported from it (`from x.y import z`, z a function).
    fn locate(&self, name: &[String]) -> Option<(Vec<String>, PathBuf, bool)> {
        let exact = |parts: &[String]| -> Option<(PathBuf, bool)> {
            for base in self.bases(parts) {
                let (base, rest) = base;
                let stem = rest.iter().fold(base, |p, part| p.join(part));
                let file = stem.with_extension("py");
                if rest.is_empty() {
                    continue;
                }
                if file.is_file() {
                    return Some((file, false));
                }
                let init = stem.join("__init__.py");
                if init.is_file() {
                    return Some((init, true));
                }
            }
            None
        };
        if let Some((path, pkg)) = exact(name) {
            return Some((name.to_vec(), path, pkg));
        }
        let parent = &name[..name.len().checked_sub(1)?];
        exact(parent).map(|(path, pkg)| (parent.to_vec(), path, pkg))
    }

    /// Directories a dotted name may live under, each with the parts below it.
    fn bases<'n>(&self, parts: &'n [String]) -> Vec<(PathBuf, &'n [String])> {
        let mut out = Vec::new();
        match parts {
            [a, b, rest @ ..] if a == "ansible" && b == "module_utils" => {
                for dir in &self.paths.module_utils {
                    out.push((dir.clone(), rest));
                }
                if let Some(dir) = &self.ansible_dir {
                    out.push((dir.join("module_utils"), rest));
                }
            }
            [a, rest @ ..] if a == "ansible" => {
                if let Some(dir) = &self.ansible_dir {
                    out.push((dir.clone(), rest));
                }
            }
            [a, rest @ ..] if a == "ansible_collections" => {
                for root in &self.paths.collection_roots {
                    out.push((root.join("ansible_collections"), rest));
                }
            }
            _ => {}
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    NewStyle,
    Old,
    WantJson,
    Binary,
}

/// Ansible's module_style: binary when the first KiB is not text, new-style when it
/// imports module_utils (or has the old REPLACER marker), WANT_JSON, else old-style.
fn sniff(data: &[u8]) -> Kind {
    let head = &data[..data.len().min(1024)];
    let text_byte = |b: u8| {
        matches!(b, 7 | 8 | 9 | 10 | 12 | 13 | 27) || (0x20..=0xff).contains(&b) && b != 0x7f
    };
    if !head.iter().all(|b| text_byte(*b)) {
        return Kind::Binary;
    }
    // Bytes as Ansible's bytes pattern reads them (`(?-u)`): `.` and `[^.]` are any byte
    // (but a newline, and a dot), which also keeps the automaton a tenth of its Unicode
    // size, a sizeable part of a short run's controller time to build.
    static NEW_STYLE: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
        regex::bytes::Regex::new(
            r"(?-u)(?:from +\.{2,} *module_utils.* +import |from +ansible_collections\.[^.]+\.[^.]+\.plugins\.module_utils.* +import |import +ansible_collections\.[^.]+\.[^.]+\.plugins\.module_utils.*|from +ansible\.module_utils.* +import |import +ansible\.module_utils\.|#<<INCLUDE_ANSIBLE_MODULE_COMMON>>)",
        )
        .expect("valid regex")
    });
    if NEW_STYLE.is_match(data) {
        Kind::NewStyle
    } else if data.windows(9).any(|w| w == b"WANT_JSON") {
        Kind::WantJson
    } else {
        Kind::Old
    }
}

fn shebang(data: &[u8]) -> Option<&str> {
    let first = data.split(|b| *b == b'\n').next()?;
    std::str::from_utf8(first).ok()?.strip_prefix("#!")
}

/// The modules a Python file imports, each with whether it is optional (inside a
/// `try:`), relative imports resolved against `module` (its dotted name; `is_package`
/// when it is an `__init__`). Only support code is kept: `ansible.*` and
/// `ansible_collections.*`.
fn imports(source: &[u8], module: &[String], is_package: bool) -> Vec<(Vec<String>, bool)> {
    let text = String::from_utf8_lossy(source);
    let mut out = Vec::new();
    let mut try_indents: Vec<usize> = Vec::new();
    let mut in_string: Option<&str> = None;
    let mut pending = String::new();
    let mut depth = 0i32;
    let package: &[String] = if is_package {
        module
    } else {
        &module[..module.len().saturating_sub(1)]
    };
    for raw in text.lines() {
        // Triple-quoted strings (DOCUMENTATION, EXAMPLES) hold no imports.
        if let Some(quote) = in_string {
            if raw.matches(quote).count() % 2 == 1 {
                in_string = None;
            }
            continue;
        }
        let line = raw.split('#').next().unwrap_or("");
        if pending.is_empty() {
            for quote in ["\"\"\"", "'''"] {
                if line.matches(quote).count() % 2 == 1 {
                    in_string = Some(quote);
                }
            }
            if in_string.is_some() {
                continue;
            }
        }
        if pending.is_empty() {
            let indent = line.len() - line.trim_start().len();
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            let continues_try = ["except", "else", "finally"]
                .iter()
                .any(|k| trimmed.starts_with(k));
            while try_indents
                .last()
                .is_some_and(|t| indent < *t || (indent == *t && !continues_try))
            {
                try_indents.pop();
            }
            if trimmed == "try:" {
                try_indents.push(indent);
                continue;
            }
        }
        pending.push_str(line.trim());
        pending.push(' ');
        depth += line.matches('(').count() as i32 - line.matches(')').count() as i32;
        if depth > 0 || line.trim_end().ends_with('\\') {
            continue;
        }
        let statement = std::mem::take(&mut pending).replace(['(', ')', '\\'], " ");
        depth = 0;
        let optional = !try_indents.is_empty();
        for (name, loose) in statement_imports(&statement, package) {
            if name.len() >= 2
                && matches!(
                    name.first().map(String::as_str),
                    Some("ansible" | "ansible_collections")
                )
            {
                out.push((name, optional || loose));
            }
        }
    }
    out
}

/// The dotted names one `import`/`from` statement imports (for `from a import b, c`:
/// `a.b` and `a.c`, which the finder narrows to `a` when they are not modules, and `a`
/// itself, which need not be a file of its own: true beside it).
fn statement_imports(statement: &str, package: &[String]) -> Vec<(Vec<String>, bool)> {
    let split = |s: &str| -> Vec<String> {
        s.split('.')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    };
    let s = statement.trim();
    if let Some(rest) = s.strip_prefix("import ") {
        return rest
            .split(',')
            .filter_map(|part| part.split_whitespace().next())
            .map(|name| (split(name), false))
            .collect();
    }
    let Some(rest) = s.strip_prefix("from ") else {
        return Vec::new();
    };
    let Some((from, names)) = rest.split_once(" import ") else {
        return Vec::new();
    };
    let from = from.replace(' ', "");
    let dots = from.chars().take_while(|c| *c == '.').count();
    let base: Vec<String> = if dots > 0 {
        let keep = package.len().saturating_sub(dots - 1);
        let mut base = package[..keep].to_vec();
        base.extend(split(&from[dots..]));
        base
    } else {
        split(&from)
    };
    let mut out = vec![(base.clone(), true)];
    for name in names.split(',') {
        if let Some(name) = name.split_whitespace().next()
            && name != "*"
        {
            let mut full = base.clone();
            full.push(name.to_string());
            out.push((full, false));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(found: Vec<(Vec<String>, bool)>) -> Vec<(String, bool)> {
        found.into_iter().map(|(n, o)| (n.join("."), o)).collect()
    }

    #[test]
    fn finds_support_imports_with_try_and_relative_forms() {
        let source = br#"#!/usr/bin/python
DOCUMENTATION = """
from ansible.module_utils.not_real import x
"""
import os
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import (
    to_bytes,
    to_native,
)
try:
    from ansible.module_utils.six import PY3
except ImportError:
    import ansible.module_utils.fallback as fb
from ..module_utils.ini import parse
import json
"#;
        let module: Vec<String> = "ansible_collections.ns.c.plugins.modules.m"
            .split('.')
            .map(String::from)
            .collect();
        let found = names(imports(source, &module, false));
        assert_eq!(
            found,
            [
                ("ansible.module_utils.basic", true),
                ("ansible.module_utils.basic.AnsibleModule", false),
                ("ansible.module_utils.common.text.converters", true),
                (
                    "ansible.module_utils.common.text.converters.to_bytes",
                    false
                ),
                (
                    "ansible.module_utils.common.text.converters.to_native",
                    false
                ),
                ("ansible.module_utils.six", true),
                ("ansible.module_utils.six.PY3", true),
                ("ansible.module_utils.fallback", true),
                ("ansible_collections.ns.c.plugins.module_utils.ini", true),
                (
                    "ansible_collections.ns.c.plugins.module_utils.ini.parse",
                    false
                ),
            ]
            .map(|(n, o)| (n.to_string(), o))
        );
    }

    #[test]
    fn sniffs_module_styles_as_ansible() {
        assert_eq!(
            sniff(b"from ansible.module_utils.basic import AnsibleModule\n"),
            Kind::NewStyle
        );
        assert_eq!(sniff(b"#!/bin/sh\n# WANT_JSON\ncat $1\n"), Kind::WantJson);
        assert_eq!(sniff(b"#!/usr/bin/python\nprint('{}')\n"), Kind::Old);
        assert_eq!(sniff(b"\x7fELF\x02\x01\x01\0\0\0"), Kind::Binary);
    }
}
