//! `template`: render a controller-side Jinja file with the task's variables and make the
//! target file hold the result.

use std::path::Path;

use serde_json::Value;
use turbo_proto::{Op, OpResult};

use crate::template::TextOptions;

use super::copy::{
    ATOMIC, SELINUX, dest_for_src, ensure_file_op, file_result, with_validate, would_change,
};
use super::spec::{Arg, Spec, Unknown};
use super::{
    Args, FileSource, Module, ModuleError, Plan, PlanContext, TaskOutcome, find_local_source,
    ownership, parse_mode, read_local_decrypted,
};

pub struct Template;

/// The template action's own arguments, then those of the copy module it hands the
/// rendered file to (whose messages name `ansible.legacy.copy`).
static SPEC: Spec = Spec::new(&[
    Arg::str("attributes").aliases(&["attr"]).not_yet(),
    Arg::bool("backup").default_bool(false),
    Arg::str("block_end_string").action_only().default_str("%}"),
    Arg::str("block_start_string")
        .action_only()
        .default_str("{%"),
    Arg::str("comment_end_string").action_only(),
    Arg::str("comment_start_string").action_only(),
    Arg::path("dest"),
    Arg::bool("follow").default_bool(false).not_yet(),
    Arg::bool("force").default_bool(true),
    Arg::str("group"),
    Arg::bool("lstrip_blocks").action_only().default_bool(false),
    Arg::raw("mode"),
    Arg::str("newline_sequence").action_only(),
    Arg::str("output_encoding").action_only(),
    Arg::str("owner"),
    Arg::str("selevel").no_effect(SELINUX),
    Arg::str("serole").no_effect(SELINUX),
    Arg::str("setype").no_effect(SELINUX),
    Arg::str("seuser").no_effect(SELINUX),
    Arg::path("src"),
    Arg::raw("state").action_only(),
    Arg::bool("trim_blocks").action_only().default_bool(true),
    Arg::bool("unsafe_writes")
        .default_bool(false)
        .no_effect(ATOMIC),
    Arg::str("validate"),
    Arg::str("variable_end_string")
        .action_only()
        .default_str("}}"),
    Arg::str("variable_start_string")
        .action_only()
        .default_str("{{"),
])
.unknown(Unknown::ModuleAs("ansible.legacy.copy"));

impl Module for Template {
    fn name(&self) -> &'static str {
        "template"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let mode = parse_mode(args.raw("mode").unwrap_or(&Value::Null))?;
        let force = args.bool("force");
        let (dest, rendered) = self.render(args, ctx)?;
        let op = ensure_file_op(dest, rendered, mode, ownership(args), force);
        Ok(Plan::Remote(with_validate(op, args)?))
    }

    fn content(&self, args: &Args, ctx: &PlanContext) -> Result<Option<FileSource>, ModuleError> {
        self.render(args, ctx)
            .map(|(_, bytes)| Some(FileSource::Bytes(bytes)))
    }

    fn finish_check(&self, args: &Args, result: OpResult) -> TaskOutcome {
        would_change(self.finish(args, result))
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        file_result(self.name(), args, result, None)
    }

    /// With Ansible's `checksum`: the rendered text's.
    fn finish_sent(
        &self,
        args: &Args,
        sent: &Op,
        result: OpResult,
        check: bool,
        home: &str,
    ) -> TaskOutcome {
        // The template action hands the rendered text to the copy action: its keys.
        super::copy::finish_sent_file(self.name(), args, sent, result, check, home, None)
    }
}

impl Template {
    fn render(&self, args: &Args, ctx: &PlanContext) -> Result<(String, Vec<u8>), ModuleError> {
        // The template action's own checks, in its order and words.
        if args.is_set("state") {
            return Err(ModuleError::Invalid(
                "'state' cannot be specified on a template".into(),
            ));
        }
        let (Some(src), Some(dest)) = (args.str("src"), args.str("dest")) else {
            return Err(ModuleError::Invalid("src and dest are required".into()));
        };
        let newline = newline_sequence(args)?;
        let (src, dest) = (src.to_string(), dest.to_string());
        let path = find_local_source(&src, ctx, "templates")?;
        if path.is_dir() {
            return Err(ModuleError::Invalid(format!(
                "template src must be a file, {} is a directory",
                path.display()
            )));
        }
        let bytes = read_local_decrypted(&path)?;
        let text = String::from_utf8(bytes).map_err(|_| ModuleError::Read {
            path: path.display().to_string(),
            message: "not UTF-8 text".into(),
        })?;
        let (Some(templar), Some(vars)) = (ctx.templar, ctx.vars) else {
            return Err(ModuleError::Invalid(
                "internal error: template was planned without the task's variables".into(),
            ));
        };
        // What the template module adds, below the play's own variables (Ansible 2.21
        // lets a variable named `ansible_managed` win).
        let extras = minijinja::context! {
            ansible_managed => ctx.ansible_managed.unwrap_or("Ansible managed"),
            template_path => src.as_str(),
            template_fullpath => path.display().to_string(),
            template_destpath => dest.as_str(),
            template_host => controller_hostname(),
            template_uid => file_owner(&path),
            template_mtime => crate::template::local_mtime(&path).unwrap_or_default(),
            template_run_date => crate::template::local_now(),
        };
        // The last map wins a lookup.
        let vars = minijinja::value::merge_maps([extras, vars.clone()]);
        // The module's arguments set the whitespace rules; a `#jinja2:` line overrides them.
        let mut asked = TextOptions {
            trim_blocks: args.bool("trim_blocks"),
            lstrip_blocks: args.bool("lstrip_blocks"),
            ..TextOptions::default()
        };
        for name in [
            "block_start_string",
            "block_end_string",
            "variable_start_string",
            "variable_end_string",
            "comment_start_string",
            "comment_end_string",
        ] {
            if let (Some(value), Some(slot)) = (args.str(name), asked.delimiters.slot(name)) {
                *slot = value.to_string();
            }
        }
        // Ansible's template action: the template's own directory, then each search
        // directory's `templates/` and the directory itself.
        asked.search_path = path.parent().map(Path::to_path_buf).into_iter().collect();
        asked
            .search_path
            .extend(super::local_search_dirs(ctx, "templates"));
        let (options, body) = asked
            .from_header(&text)
            .map_err(|message| ModuleError::Read {
                path: path.display().to_string(),
                message,
            })?;
        let rendered = templar
            .render_file_text(body, &vars, options)
            .map_err(|error| ModuleError::Template {
                src: path.display().to_string(),
                error,
            })?;
        let rendered = match newline {
            "\n" => rendered,
            other => rendered.replace('\n', other),
        };
        Ok((dest_for_src(&dest, &src), rendered.into_bytes()))
    }
}

/// `newline_sequence` as the line break to write (Ansible's escaped spellings), after
/// checking `output_encoding`, which can only be UTF-8 here.
fn newline_sequence(args: &Args) -> Result<&'static str, ModuleError> {
    if let Some(encoding) = args.str("output_encoding")
        && !matches!(encoding.to_ascii_lowercase().as_str(), "utf-8" | "utf8")
    {
        return Err(ModuleError::NotSupported(
            "output_encoding other than utf-8",
        ));
    }
    match args.str("newline_sequence") {
        None | Some("\\n") | Some("\n") => Ok("\n"),
        Some("\\r\\n") | Some("\r\n") => Ok("\r\n"),
        Some("\\r") | Some("\r") => Ok("\r"),
        Some(_) => Err(ModuleError::Invalid(
            "newline_sequence needs to be one of: \n, \r or \r\n".into(),
        )),
    }
}

/// `template_uid`: the template file owner's name (its uid when it has none), as
/// Ansible's `pwd.getpwuid`.
fn file_owner(path: &std::path::Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return String::new();
    };
    let uid = meta.uid();
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|passwd| {
            passwd.lines().find_map(|line| {
                let mut fields = line.split(':');
                let name = fields.next()?;
                (fields.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_string())
            })
        })
        .unwrap_or_else(|| uid.to_string())
}

/// The controller's hostname, for `template_host`: read once, not once per render.
fn controller_hostname() -> &'static str {
    static HOSTNAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOSTNAME.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Templar;
    use serde_json::json;
    use turbo_proto::{EnsureFile, FileContent, FileMode, Op};

    fn args(v: Value) -> Args {
        crate::modules::check(&Template, v)
    }

    #[test]
    fn renders_from_templates_dir_with_task_vars() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("templates")).unwrap();
        std::fs::write(
            dir.path().join("templates/app.conf.j2"),
            "port={{ port }}\n{% for h in hosts %}\nhost={{ h }}\n{% endfor %}\n",
        )
        .unwrap();
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(json!({"port": 80, "hosts": ["a", "b"]}));
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            ..PlanContext::new(dir.path())
        };
        let a = args(json!({"src": "app.conf.j2", "dest": "/etc/app.conf", "mode": "0600"}));
        assert_eq!(
            Template.plan(&a, &ctx).unwrap(),
            Plan::Remote(Op::EnsureFile(EnsureFile {
                path: "/etc/app.conf".into(),
                content: FileContent::Inline(b"port=80\nhost=a\nhost=b\n".to_vec()),
                mode: Some(FileMode::Bits(0o600)),
                force: true,
                owner: Default::default(),
                validate: None,
                backup: false,
            }))
        );
        let a = args(json!({"src": "app.conf.j2", "dest": "/etc/"}));
        let Plan::Remote(op @ Op::EnsureFile(_)) = Template.plan(&a, &ctx).unwrap() else {
            panic!()
        };
        let Op::EnsureFile(f) = &op else { panic!() };
        assert_eq!(f.path, "/etc/app.conf.j2");
        // Ansible's result has the rendered text's checksum.
        let written = turbo_proto::FileOutcome {
            changed: true,
            path: f.path.clone(),
            kind: turbo_proto::FileKind::File,
            mode: 0o100644,
            size: 23,
            uid: 0,
            gid: 0,
            owner: "root".into(),
            group: "root".into(),
            diff: None,
            backup_file: None,
        };
        let out = Template.finish_sent(&a, &op, OpResult::File(written.clone()), false, "/root");
        let text = b"port=80\nhost=a\nhost=b\n";
        assert_eq!(
            out.data["checksum"],
            json!(crate::modules::copy::sha1_hex(text))
        );
        // ansible-playbook 2.21.5: a changed file is the copy module's (the rendered
        // text's md5sum, `src` where the action staged it), an unchanged one the file
        // module's (`path`, no `src`); both carry the copy action's empty `diff` list.
        assert_eq!(
            out.data["md5sum"],
            json!(format!("{:x}", md5::compute(text)))
        );
        let src = out.data["src"].as_str().unwrap();
        assert!(
            src.starts_with("/root/.ansible/tmp/ansible-tmp-") && src.ends_with("/.source.j2"),
            "{src}"
        );
        assert_eq!(out.data["diff"], json!([]));
        let kept = turbo_proto::FileOutcome {
            changed: false,
            ..written
        };
        let out = Template.finish_sent(&a, &op, OpResult::File(kept), false, "/root");
        assert_eq!(out.data["path"], json!("/etc/app.conf.j2"));
        assert!(!out.data.contains_key("src") && !out.data.contains_key("md5sum"));
        assert_eq!(out.data["diff"], json!([]));
    }

    #[test]
    fn ansible_managed_and_template_vars_are_there_below_the_plays_own() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.j2"),
            "# {{ ansible_managed }}\n# {{ template_path }} -> {{ template_destpath }}\n",
        )
        .unwrap();
        let templar = Templar::new();
        let render = |vars: Value, managed: Option<&str>| {
            let vars = minijinja::Value::from_serialize(vars);
            let ctx = PlanContext {
                vars: Some(&vars),
                templar: Some(&templar),
                ansible_managed: managed,
                ..PlanContext::new(dir.path())
            };
            let out = Template
                .content(&args(json!({"src": "t.j2", "dest": "/etc/x"})), &ctx)
                .unwrap()
                .unwrap()
                .into_bytes()
                .unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            render(json!({}), None),
            "# Ansible managed\n# t.j2 -> /etc/x\n"
        );
        assert_eq!(
            render(json!({}), Some("from ansible.cfg")),
            "# from ansible.cfg\n# t.j2 -> /etc/x\n"
        );
        assert_eq!(
            render(json!({"ansible_managed": "mine"}), Some("cfg")),
            "# mine\n# t.j2 -> /etc/x\n"
        );
    }

    #[test]
    fn whitespace_rules_come_from_the_arguments_then_a_jinja2_header() {
        let dir = tempfile::tempdir().unwrap();
        let body = "a\n    {% if true %}\n    yes\n    {% endif %}\nb\n";
        std::fs::write(dir.path().join("p.j2"), body).unwrap();
        std::fs::write(
            dir.path().join("h.j2"),
            format!("#jinja2: trim_blocks: False, lstrip_blocks: True\n{body}"),
        )
        .unwrap();
        std::fs::write(dir.path().join("bad.j2"), "#jinja2: newline: 1\nx\n").unwrap();
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(json!({}));
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            ..PlanContext::new(dir.path())
        };
        let render = |a: Value| {
            Template
                .content(&args(a), &ctx)
                .map(|out| String::from_utf8(out.unwrap().into_bytes().unwrap()).unwrap())
        };
        // The byte-for-byte outputs ansible-playbook 2.21 wrote for the same files.
        let p = |extra: Value| {
            let mut a = json!({"src": "p.j2", "dest": "/x"});
            a.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            render(a).unwrap()
        };
        assert_eq!(p(json!({})), "a\n        yes\n    b\n");
        assert_eq!(p(json!({"lstrip_blocks": true})), "a\n    yes\nb\n");
        assert_eq!(
            p(json!({"trim_blocks": false})),
            "a\n    \n    yes\n    \nb\n"
        );
        assert_eq!(
            p(json!({"newline_sequence": "\\r\\n"})),
            "a\r\n        yes\r\n    b\r\n"
        );
        let h = render(json!({"src": "h.j2", "dest": "/x"})).unwrap();
        assert_eq!(h, "a\n\n    yes\n\nb\n");
        let err = render(json!({"src": "bad.j2", "dest": "/x"})).unwrap_err();
        assert!(
            err.to_string().contains("'newline' is not supported"),
            "{err}"
        );
        assert!(render(json!({"src": "p.j2", "dest": "/x", "newline_sequence": "x"})).is_err());
    }

    /// The delimiter arguments, and includes found beside the template, then in the
    /// search directories' `templates/` (Ansible's template action searchpath).
    #[test]
    fn delimiters_and_includes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("templates/sub")).unwrap();
        std::fs::write(
            dir.path().join("templates/sub/t.j2"),
            "[% x %] {% include 'part.j2' %} {% include 'top.j2' %}",
        )
        .unwrap();
        std::fs::write(dir.path().join("templates/sub/part.j2"), "beside").unwrap();
        std::fs::write(dir.path().join("templates/top.j2"), "above").unwrap();
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(json!({"x": 1}));
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            ..PlanContext::new(dir.path())
        };
        let out = Template
            .content(
                &args(json!({"src": "sub/t.j2", "dest": "/x",
                    "variable_start_string": "[%", "variable_end_string": "%]"})),
                &ctx,
            )
            .map(|out| String::from_utf8(out.unwrap().into_bytes().unwrap()).unwrap())
            .unwrap();
        assert_eq!(out, "1 beside above");
    }

    #[test]
    fn undefined_variable_names_the_template() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.j2"), "x={{ nope }}\n").unwrap();
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(json!({}));
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            ..PlanContext::new(dir.path())
        };
        let err = Template
            .plan(&args(json!({"src": "t.j2", "dest": "/x"})), &ctx)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "template {}/t.j2: 'nope' is undefined",
                dir.path().display()
            )
        );
    }

    #[test]
    fn missing_args_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = PlanContext::new(dir.path());
        let msg = |v: Value| crate::modules::try_plan(&Template, v, &ctx).unwrap_err();
        assert_eq!(msg(json!({"dest": "/x"})), "src and dest are required");
        assert_eq!(msg(json!({"src": "a.j2"})), "src and dest are required");
        assert_eq!(
            msg(json!({"src": "a.j2", "dest": "/x", "state": "file"})),
            "'state' cannot be specified on a template"
        );
        assert!(
            msg(json!({"src": "a.j2", "dest": "/x"}))
                .starts_with("src file not found: a.j2 (looked in ")
        );
    }
}
