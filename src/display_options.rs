//! The default callback's options (ansible-core's `default_callback` and
//! `result_format_callback` documentation fragments): what the console (`report/`) shows
//! of each result, and how it dumps one. Read from the environment and ansible.cfg's
//! `[defaults]` by `config.rs`.

/// How a result's data is written after `=>`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ResultFormat {
    #[default]
    Json,
    Yaml,
}

/// `callback_result_yaml_line_width`: where the YAML dump folds long strings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum YamlWidth {
    /// PyYAML's own (80 columns).
    #[default]
    Default,
    /// Never.
    NoBreak,
    /// The terminal's width (80 when there is none, as Ansible's display assumes).
    Terminal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayOptions {
    /// `display_skipped_hosts`: `skipping:` lines.
    pub skipped_hosts: bool,
    /// `display_ok_hosts`: `ok:` lines (never `changed:` ones).
    pub ok_hosts: bool,
    /// `display_included_hosts`: `included:` lines.
    pub included_hosts: bool,
    /// `display_failed_stderr`: failed and unreachable results on stderr.
    pub failed_stderr: bool,
    /// `show_task_path_on_failure`: `task path: FILE:LINE` above a task's failure.
    pub task_path_on_failure: bool,
    /// `check_mode_markers`: `DRY RUN` banners and `[CHECK MODE]` on plays and tasks.
    pub check_mode_markers: bool,
    /// `callback_result_format`.
    pub result_format: ResultFormat,
    /// `callback_result_indentation`.
    pub result_indentation: usize,
    /// `callback_result_yaml_line_width`.
    pub yaml_width: YamlWidth,
    /// `callback_format_pretty`: unset, YAML is pretty and JSON is not.
    pub pretty_results: Option<bool>,
}

impl Default for DisplayOptions {
    fn default() -> Self {
        DisplayOptions {
            skipped_hosts: true,
            ok_hosts: true,
            included_hosts: true,
            failed_stderr: false,
            task_path_on_failure: false,
            check_mode_markers: false,
            result_format: ResultFormat::Json,
            result_indentation: 4,
            yaml_width: YamlWidth::Default,
            pretty_results: None,
        }
    }
}

/// A setting's value that is not one the option takes: Ansible's words for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidSetting {
    pub key: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl DisplayOptions {
    /// The options from `setting(ENV_NAME, ini_key)` (the environment over the file).
    pub fn read(setting: &dyn Fn(&str, &str) -> Option<String>) -> Result<Self, InvalidSetting> {
        let mut options = DisplayOptions::default();
        // Ansible's config reads `type: bool` leniently: anything but a true spelling is
        // false.
        let flag = |env: &str, key: &str, slot: &mut bool| {
            if let Some(value) = setting(env, key) {
                *slot = crate::booleans::lenient_text(&value);
            }
        };
        flag(
            "ANSIBLE_DISPLAY_SKIPPED_HOSTS",
            "display_skipped_hosts",
            &mut options.skipped_hosts,
        );
        flag(
            "ANSIBLE_DISPLAY_OK_HOSTS",
            "display_ok_hosts",
            &mut options.ok_hosts,
        );
        flag(
            "ANSIBLE_DISPLAY_INCLUDED_HOSTS",
            "display_included_hosts",
            &mut options.included_hosts,
        );
        flag(
            "ANSIBLE_DISPLAY_FAILED_STDERR",
            "display_failed_stderr",
            &mut options.failed_stderr,
        );
        flag(
            "ANSIBLE_SHOW_TASK_PATH_ON_FAILURE",
            "show_task_path_on_failure",
            &mut options.task_path_on_failure,
        );
        flag(
            "ANSIBLE_CHECK_MODE_MARKERS",
            "check_mode_markers",
            &mut options.check_mode_markers,
        );
        if let Some(value) = setting("ANSIBLE_CALLBACK_RESULT_FORMAT", "callback_result_format") {
            options.result_format = match value.trim() {
                "json" => ResultFormat::Json,
                "yaml" => ResultFormat::Yaml,
                _ => {
                    return Err(InvalidSetting {
                        key: "callback_result_format",
                        value,
                        expected: "one of json, yaml",
                    });
                }
            };
        }
        if let Some(value) = setting(
            "ANSIBLE_CALLBACK_RESULT_INDENTATION",
            "callback_result_indentation",
        ) {
            options.result_indentation = value.trim().parse().map_err(|_| InvalidSetting {
                key: "callback_result_indentation",
                value: value.clone(),
                expected: "an integer",
            })?;
        }
        if let Some(value) = setting(
            "ANSIBLE_CALLBACK_YAML_LINE_WIDTH",
            "callback_result_yaml_line_width",
        ) {
            options.yaml_width = match value.trim() {
                "default" => YamlWidth::Default,
                "no-break" => YamlWidth::NoBreak,
                "terminal-width" => YamlWidth::Terminal,
                _ => {
                    return Err(InvalidSetting {
                        key: "callback_result_yaml_line_width",
                        value,
                        expected: "one of default, no-break, terminal-width",
                    });
                }
            };
        }
        if let Some(value) = setting("ANSIBLE_CALLBACK_FORMAT_PRETTY", "callback_format_pretty") {
            options.pretty_results = Some(crate::booleans::lenient_text(&value));
        }
        Ok(options)
    }

    /// Whether a result dump is indented (and by how much), as Ansible's
    /// `_dump_results` decides: for `verbose_always` results, pretty output (asked for,
    /// or YAML's default), and from -vvv.
    pub fn dump_indent(&self, verbose_always: bool, verbosity: u8) -> Option<usize> {
        if self.pretty_results == Some(false) {
            return None;
        }
        let pretty = verbose_always
            || (self.pretty_results.is_none() && self.result_format != ResultFormat::Json)
            || self.pretty_results == Some(true)
            || verbosity > 2;
        pretty.then_some(self.result_indentation)
    }

    /// Banners show as soon as a task starts only when every result shows (Ansible
    /// otherwise prints a banner with the first result it shows).
    pub fn eager_banners(&self) -> bool {
        self.skipped_hosts && self.ok_hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_leniently_and_refuse_unknown_choices() {
        let read = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            DisplayOptions::read(&|env, _| {
                pairs.iter().find(|(k, _)| k == env).map(|(_, v)| v.clone())
            })
        };
        assert_eq!(read(&[]).unwrap(), DisplayOptions::default());
        let options = read(&[
            ("ANSIBLE_DISPLAY_SKIPPED_HOSTS", "0"),
            ("ANSIBLE_DISPLAY_OK_HOSTS", "no"),
            ("ANSIBLE_CALLBACK_RESULT_FORMAT", "yaml"),
            ("ANSIBLE_CALLBACK_RESULT_INDENTATION", "2"),
        ])
        .unwrap();
        assert!(!options.skipped_hosts && !options.ok_hosts && !options.eager_banners());
        assert_eq!(options.result_format, ResultFormat::Yaml);
        assert_eq!(options.dump_indent(false, 0), Some(2));
        assert_eq!(DisplayOptions::default().dump_indent(false, 0), None);
        assert_eq!(DisplayOptions::default().dump_indent(true, 0), Some(4));
        let err = read(&[("ANSIBLE_CALLBACK_RESULT_FORMAT", "xml")]).unwrap_err();
        assert_eq!(err.key, "callback_result_format");
    }
}
