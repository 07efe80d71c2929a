//! setup's `local` subset (`ansible_local`): the `*.fact` files of `fact_path`, as
//! Ansible's local fact collector reads them. Planned from the agent's ListTree, ReadFile
//! and Exec: a listing first, then one batch that runs the executable files and reads the
//! others; their output is parsed here, as JSON or else as INI.

use serde_json::{Map, Value};
use turbo_proto::{Command, Exec, FileKind, Op, OpResult, TreeListing};

use crate::template::ini_lookup::ConfigParser;

/// Ansible gathers `local` unless `!local` or `!min` excludes it, and an exclusion loses
/// to the subset named outright.
pub fn wanted(subsets: &[String]) -> bool {
    let named = |n: &str| subsets.iter().any(|s| s.trim() == n);
    named("local") || !(named("!local") || named("!min"))
}

pub fn listing(fact_path: &str) -> Op {
    Op::ListTree {
        path: fact_path.to_string(),
        max_depth: Some(1),
        follow: true,
        checksum: None,
    }
}

/// One `*.fact` file: its path, the key it goes under, and whether it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct FactFile {
    path: String,
    key: String,
    how: How,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum How {
    Run,
    Read,
    /// stat(2) failed: a dangling symlink.
    Unstatable,
}

/// The files glob's `*.fact` finds (no hidden ones), in sorted order.
pub fn fact_files(tree: &TreeListing) -> Vec<FactFile> {
    let root = tree.root.path.trim_end_matches('/');
    let mut files: Vec<FactFile> = tree
        .entries
        .iter()
        .filter_map(|entry| {
            let name = entry.path.rsplit('/').next()?;
            if name.starts_with('.') || !name.ends_with(".fact") {
                return None;
            }
            let how = if entry.kind == FileKind::Symlink {
                How::Unstatable
            } else if entry.mode & 0o100 != 0 {
                How::Run
            } else {
                How::Read
            };
            Some(FactFile {
                path: format!("{root}/{name}"),
                key: name.replace(".fact", ""),
                how,
            })
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// The ops that get each file's content: a run or a read (a placeholder for the ones that
/// cannot be stat'ed, to keep replies in step with files).
pub fn content_ops(files: &[FactFile]) -> Op {
    Op::Batch(
        files
            .iter()
            .map(|f| match f.how {
                How::Run => Op::Exec(Exec {
                    command: Command::Argv(vec![f.path.clone()]),
                    chdir: None,
                    creates: None,
                    removes: None,
                    env: Vec::new(),
                    stdin: None,
                    umask: None,
                }),
                How::Read | How::Unstatable => Op::ReadFile {
                    path: f.path.clone(),
                    offset: 0,
                    limit: None,
                },
            })
            .collect(),
    )
}

/// What the facts came to: `ansible_local` (none when the collector raised), and the
/// warnings Ansible's collector gives.
#[derive(Debug, PartialEq)]
pub struct Local {
    pub facts: Option<Map<String, Value>>,
    pub warnings: Vec<String>,
}

impl Default for Local {
    fn default() -> Local {
        Local {
            facts: Some(Map::new()),
            warnings: Vec::new(),
        }
    }
}

/// A fact script that could not be started fails the whole module, as run_command does.
pub struct ExecFailed {
    pub cmd: String,
}

pub fn collect(files: &[FactFile], replies: Vec<OpResult>) -> Result<Local, ExecFailed> {
    let mut local = Local::default();
    let mut facts = Map::new();
    for (file, reply) in files.iter().zip(replies) {
        let fact = match (file.how, reply) {
            (How::Unstatable, _) => Err(format!(
                "Could not stat fact ({0}): [Errno 2] No such file or directory: '{0}'",
                file.path
            )),
            (How::Run, OpResult::Exec(x)) => {
                if x.rc != 0 && x.msg != "The command exited with a non-zero return code." {
                    return Err(ExecFailed {
                        cmd: file.path.clone(),
                    });
                }
                if x.rc != 0 {
                    Err(format!(
                        "Failure executing fact script ({}), rc: {}, err: {}",
                        file.path,
                        x.rc,
                        String::from_utf8_lossy(&x.stderr)
                    ))
                } else {
                    Ok(parse(&file.path, &String::from_utf8_lossy(&x.stdout)))
                }
            }
            (How::Run, _) => {
                return Err(ExecFailed {
                    cmd: file.path.clone(),
                });
            }
            // get_file_content: unreadable or not UTF-8 reads as empty; the text stripped.
            (How::Read, OpResult::Read(read)) => {
                let text = std::str::from_utf8(&read.data).unwrap_or("");
                Ok(parse(&file.path, text.trim()))
            }
            (How::Read, _) => Ok(parse(&file.path, "")),
        };
        let fact = match fact {
            Ok(Ok(Parsed { value, warnings })) => {
                local.warnings.extend(warnings);
                value
            }
            Ok(Err(Crashed { warnings })) => {
                local.warnings.extend(warnings);
                local.facts = None;
                return Ok(local);
            }
            Err(warning) => {
                local.warnings.push(warning.clone());
                Value::String(warning)
            }
        };
        facts.insert(file.key.clone(), fact);
    }
    local.facts = Some(facts);
    Ok(local)
}

/// The collector raised: no `ansible_local` at all, the warnings given so far kept.
pub struct Crashed {
    pub warnings: Vec<String>,
}

pub struct Parsed {
    pub value: Value,
    pub warnings: Vec<String>,
}

/// A fact file's text as JSON, else as configparser reads INI, with Ansible's words when
/// neither works.
pub fn parse(path: &str, text: &str) -> Result<Parsed, Crashed> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Ok(Parsed {
            value,
            warnings: Vec::new(),
        });
    }
    let Some(parser) = ConfigParser::read(text) else {
        let msg = format!("error loading facts as JSON or ini - please check content: {path}");
        return Ok(Parsed {
            value: Value::String(msg.clone()),
            warnings: vec![msg],
        });
    };
    // Ansible's loop, with what happens once a bad value has turned the fact into its
    // error string: the next section or good value is a TypeError that nothing catches,
    // and the whole local collector is lost.
    let mut fact = Map::new();
    let mut error: Option<String> = None;
    let mut warnings = Vec::new();
    for section in parser.sections() {
        match &error {
            // `sect not in fact` on a string is a substring test.
            Some(err) if !err.contains(section) => return Err(Crashed { warnings }),
            Some(_) => {}
            None => {
                fact.insert(section.to_string(), Value::Object(Map::new()));
            }
        }
        for option in parser.options(section) {
            match parser.get(section, &option) {
                Ok(_) if error.is_some() => return Err(Crashed { warnings }),
                Ok(value) => {
                    if let Some(Value::Object(s)) = fact.get_mut(section) {
                        s.insert(option, Value::String(value));
                    }
                }
                Err(ex) => {
                    let msg =
                        format!("error loading facts as ini - please check content: {path} ({ex})");
                    warnings.push(msg.clone());
                    error = Some(msg);
                }
            }
        }
    }
    Ok(Parsed {
        value: error.map_or(Value::Object(fact), Value::String),
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn local_follows_the_subset_arithmetic() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(wanted(&s(&["all"])));
        assert!(wanted(&s(&["!all"])));
        assert!(wanted(&s(&["min"])));
        assert!(!wanted(&s(&["!local"])));
        assert!(!wanted(&s(&["!all", "!min"])));
        assert!(wanted(&s(&["!min", "local"])));
        assert!(wanted(&s(&["!local", "local"])));
    }

    #[test]
    fn json_first_then_ini() {
        let value = |text: &str| parse("/f", text).ok().unwrap().value;
        assert_eq!(value(r#"{"a": [1]}"#), json!({"a": [1]}));
        assert_eq!(value("\"x\""), json!("x"));
        assert_eq!(
            value("[general]\nbar=loaded\n"),
            json!({"general": {"bar": "loaded"}})
        );
        assert_eq!(value(""), json!({}));
        // DEFAULT's options come after a section's own, interpolated in each section.
        assert_eq!(
            value("[a]\nX = 1\n[DEFAULT]\nd = %(x)s!\n[b]\nd = 2\nx = 3"),
            json!({"a": {"x": "1", "d": "1!"}, "b": {"d": "2", "x": "3"}})
        );
        let bad = parse("/f", "wontbeseen=ever").ok().unwrap();
        assert_eq!(
            bad.value,
            json!("error loading facts as JSON or ini - please check content: /f")
        );
        assert_eq!(
            bad.warnings,
            ["error loading facts as JSON or ini - please check content: /f"]
        );
    }

    #[test]
    fn a_bad_interpolation_is_ansibles_ini_error() {
        let p = parse("/d/bad.fact", "[bad fact]\nvalue = this is a % bad % fact")
            .ok()
            .unwrap();
        assert_eq!(
            p.value,
            json!(
                "error loading facts as ini - please check content: /d/bad.fact ('%' must be followed by '%' or '(', found: '% bad % fact')"
            )
        );
        // A later good value trips over the string the fact became: the collector raises.
        let Err(crashed) = parse("/f", "[s]\na = %x\nb = 1") else {
            panic!()
        };
        assert_eq!(crashed.warnings.len(), 1);
        // ... as does a later section the string does not happen to contain.
        assert!(parse("/f", "[s]\na = %x\n[zz]").is_err());
        assert!(parse("/f", "[s]\na = %x\n[facts]").is_ok());
    }
}
