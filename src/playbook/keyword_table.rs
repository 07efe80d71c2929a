//! Which keywords each place of a playbook (play, block, role entry, import or include,
//! task) takes, and how the loader treats those it does not act on.

/// Play keys Ansible accepts that turbo-play loads and ignores for now.
/// Play keywords accepted but not acted on yet; the executor warns about each one used,
/// because ignoring them silently would change what the play does.
pub(super) const UNSUPPORTED_PLAY_KEYS: &[&str] = &[
    "become",
    "become_user",
    "become_method",
    "run_once",
    "module_defaults",
];

/// Play keywords with no effect on the outcome here: accepted silently.
pub(super) const IGNORED_PLAY_KEYS: &[&str] = &[
    "collections",
    "no_log",
    "timeout",
    "debugger",
    "gather_timeout",
    "fact_path",
];

pub(super) const PLAY_KEYS: &[&str] = &[
    "name",
    "hosts",
    "vars",
    "vars_files",
    "gather_facts",
    "gather_subset",
    "tasks",
    "pre_tasks",
    "post_tasks",
    "connection",
    "remote_user",
    "port",
    "handlers",
    "force_handlers",
    "vars_prompt",
    "ignore_errors",
    "tags",
    "check_mode",
    "diff",
    "roles",
    "environment",
    "serial",
    "order",
    "any_errors_fatal",
    "max_fail_percentage",
    "strategy",
    "throttle",
    "ignore_unreachable",
];

/// Play keywords that every task of the play takes on (a task's own wins).
pub(super) const PLAY_RUN_KEYWORDS: [&str; 2] = ["throttle", "ignore_unreachable"];

/// Task keywords loaded and not acted on: `become` (warned about when true, see
/// `Loader::task`) and keywords that do not change what a task does here.
pub(super) const IGNORED_TASK_KEYS: &[&str] = &[
    "become",
    "become_user",
    "become_method",
    "remote_user",
    "connection",
    "timeout",
    "debugger",
    "collections",
    "module_defaults",
];

/// Task keywords that change behaviour but are not implemented yet: loaded, and listed in
/// [`Task::unsupported`] so the executor can warn.
pub(super) const UNSUPPORTED_TASK_KEYS: &[&str] = &["async", "poll"];

pub(super) const TASK_KEYS: &[&str] = &[
    "name",
    "loop",
    "with_items",
    "with_list",
    "with_sequence",
    "when",
    "register",
    "ignore_errors",
    "changed_when",
    "failed_when",
    "until",
    "retries",
    "delay",
    "notify",
    "vars",
    "loop_control",
    "args",
    "action",
    "local_action",
    "tags",
    "check_mode",
    "diff",
    "run_once",
    "delegate_to",
    "delegate_facts",
    "environment",
    "no_log",
    "throttle",
];

/// Keys a block takes besides the ignored task keywords.
pub(super) const BLOCK_KEYS: &[&str] = &[
    "block",
    "rescue",
    "always",
    "name",
    "when",
    "vars",
    "ignore_errors",
    "tags",
    "check_mode",
    "diff",
    "run_once",
    "delegate_to",
    "delegate_facts",
    "environment",
    "no_log",
    "throttle",
    "any_errors_fatal",
    "ignore_unreachable",
];

/// Keywords a block hands down, parsed by `run_keyword`.
pub(super) const RUN_KEYWORDS: &[&str] = &[
    "any_errors_fatal",
    "ignore_unreachable",
    "run_once",
    "delegate_to",
    "delegate_facts",
    "environment",
    "no_log",
    "throttle",
];

/// Keywords an import/include takes besides its own key (others are rejected).
pub(super) const INCLUDE_KEYS: &[&str] = &["name", "when", "vars", "tags", "args", "ignore_errors"];

/// Keywords on a role entry or an import that change what its tasks do but are not
/// implemented for them yet: refused rather than silently dropped.
pub(super) const NOT_YET_ON_REUSE: &[&str] = &["delegate_to", "async", "poll", "loop_control"];

/// Keywords that make no sense on a dynamic include (it is not a module run).
pub(super) const NOT_ON_INCLUDE: &[&str] = &[
    "register",
    "notify",
    "changed_when",
    "failed_when",
    "until",
    "retries",
    "delay",
    "delegate_to",
    "delegate_facts",
    "local_action",
    "run_once",
    "async",
    "poll",
];

/// Keys of `apply:` besides the ignored task keywords.
pub(super) const APPLY_KEYS: &[&str] = &[
    "tags",
    "when",
    "vars",
    "ignore_errors",
    "check_mode",
    "diff",
    "any_errors_fatal",
    "ignore_unreachable",
    "environment",
    "no_log",
    "throttle",
];
